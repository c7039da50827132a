//go:build !linux

package launch

func (s *Sources) digest(p string) (string, error) { return "", errSources(p) }
