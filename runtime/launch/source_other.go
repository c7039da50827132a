//go:build !linux

package launch

// errSources: mount sources are opened with openat2's RESOLVE_NO_SYMLINKS
// and RESOLVE_BENEATH, which only Linux has; there is no safe fallback.
func errSources(p string) error {
	return needsLinux("opening the mount source "+p+" without following symlinks", "openat2 RESOLVE_BENEATH; bwrap, Landlock and the docker/podman mount checks")
}

// Open: see source_linux.go.
func (s *Sources) Open(p string) (int, error) { return -1, errSources(p) }

// OpenDir: see source_linux.go.
func (s *Sources) OpenDir(p string) (int, error) { return -1, errSources(p) }

func (s *Sources) topLevel(root string, unprotected []string) ([]child, error) {
	return nil, errSources(root)
}

// openSystemPath: see source_linux.go.
func openSystemPath(p string) (int, error) { return -1, errSources(p) }
