//go:build !linux

package hostfile

// Xattrs reads no attributes off Linux (macOS's are kept by a later
// change; its ACLs are not POSIX xattrs).
func Xattrs(path string) (map[string][]byte, error) { return nil, nil }

func setXattrs(fd int, attrs map[string][]byte) error { return nil }
