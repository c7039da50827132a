package prove

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openParent opens the folder holding path, following no symbolic link.
func openParent(path string) (int, string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	if !filepath.IsAbs(dir) || base == "/" || base == "." || base == ".." {
		return -1, "", fmt.Errorf("%s: not an absolute path below a folder", path)
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return -1, "", fmt.Errorf("%s: %w", dir, err)
	}
	return fd, base, nil
}

func readNoFollow(path string) ([]byte, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: not a regular file (a FIFO or a device put in its place?)", path)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(&limited{f, maxRestore + 1})
	if buf.Len() > maxRestore {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxRestore)
	}
	return buf.Bytes(), err
}

// moveBack renames what is now at to (a folder that did not exist) back
// to from (a folder that is gone): a move's undo.
func moveBack(to, from string) error {
	fd1, b1, err := openParent(to)
	if err != nil {
		return err
	}
	defer unix.Close(fd1)
	fd2, b2, err := openParent(from)
	if err != nil {
		return err
	}
	defer unix.Close(fd2)
	return unix.Renameat2(fd1, b1, fd2, b2, unix.RENAME_NOREPLACE)
}
