//go:build !linux

package launch

// readBeneath: the tool surface is opened with openat2's
// RESOLVE_NO_SYMLINKS (see tools_linux.go).
func readBeneath(root, rel string, max int64) ([]byte, error) {
	return nil, needsLinux("the tool relay", "openat2")
}
