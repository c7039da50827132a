//go:build !linux

package hostfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// Chmod sets the mode of the file at path itself, never of what a symlink
// there names (lchmod semantics).
func Chmod(path string, mode os.FileMode) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return tampered("%s is a symlink where mcpolicy made a file: refusing to change the mode of what it names (something that can write %s replaced it)", path, dirOf(path))
	} else if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
		return tampered("%s is a hard link (%d names) where mcpolicy made a file: refusing to change the mode of a file that may be the user's elsewhere (something that can write %s replaced it)", path, st.Nlink, dirOf(path))
	}
	if err := unix.Fchmodat(unix.AT_FDCWD, path, uint32(mode.Perm()), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	return nil
}
