package hostfile

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Chmod sets the mode of the file at path itself, never of what a symlink
// there names: a server that can write the folder (a grant over /tmp or
// $XDG_RUNTIME_DIR) could swap a socket mcpolicy just made for a link to
// ~/.ssh/id_ed25519 before the chmod that opens the socket up. The file is
// opened O_PATH|O_NOFOLLOW, checked, and changed through its descriptor.
func Chmod(path string, mode os.FileMode) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return tampered("%s is a symlink where mcpolicy made a file: refusing to change the mode of what it names (something that can write %s replaced it)", path, dirOf(path))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
		return tampered("%s is a hard link (%d names) where mcpolicy made a file: refusing to change the mode of a file that may be the user's elsewhere (something that can write %s replaced it)", path, st.Nlink, dirOf(path))
	}
	// The descriptor's /proc entry is the file itself (a magic link, not
	// resolved again by name).
	if err := unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), uint32(mode.Perm()), 0); err != nil {
		return &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	return nil
}
