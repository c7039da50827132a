//go:build !linux

package launch

// expandHidden: see hide_linux.go.
func (s *Sources) expandHidden(source, pat string) ([]hideMatch, error) {
	return nil, errSources(source)
}

// maskSources: see hide_linux.go.
func maskSources() (dir, file string, err error) {
	return "", "", errSources("the hidden paths' masks")
}

// openMask: see hide_linux.go.
func openMask(p string, dir bool) (int, error) { return -1, errSources(p) }
