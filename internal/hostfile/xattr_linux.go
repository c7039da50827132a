package hostfile

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sys/unix"
)

// Xattrs reads the extended attributes of the file at path, not following
// a last symlink: its POSIX ACL (system.posix_acl_access), user.* and
// security labels. A filesystem without them gives none.
func Xattrs(path string) (map[string][]byte, error) {
	size, err := unix.Llistxattr(path, nil)
	if errors.Is(err, unix.ENOTSUP) || size == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: listing its extended attributes: %w", path, err)
	}
	buf := make([]byte, size)
	if size, err = unix.Llistxattr(path, buf); err != nil {
		return nil, fmt.Errorf("%s: listing its extended attributes: %w", path, err)
	}
	out := map[string][]byte{}
	for _, name := range bytes.Split(bytes.TrimRight(buf[:size], "\x00"), []byte{0}) {
		n, err := unix.Lgetxattr(path, string(name), nil)
		if err != nil {
			return nil, fmt.Errorf("%s: reading its attribute %s: %w", path, name, err)
		}
		v := make([]byte, n)
		if n, err = unix.Lgetxattr(path, string(name), v); err != nil {
			return nil, fmt.Errorf("%s: reading its attribute %s: %w", path, name, err)
		}
		out[string(name)] = v[:n]
	}
	return out, nil
}

// setXattrs gives the open file fd the attributes attrs, in name order.
func setXattrs(fd int, attrs map[string][]byte) error {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		buf := make([]byte, len(attrs[n])+1)
		if got, err := unix.Fgetxattr(fd, n, buf); err == nil && bytes.Equal(buf[:got], attrs[n]) {
			continue // given by the folder's default ACL, or the label policy
		}
		if err := unix.Fsetxattr(fd, n, attrs[n], 0); err != nil {
			return fmt.Errorf("keeping the file's extended attribute %s (a rename would drop it): %w", n, err)
		}
	}
	return nil
}
