//go:build unix

package egress

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// OpenLog opens a decision log to append to (mcpolicy run --log FILE,
// egress-proxy --log FILE). The path may lie where a server's write grant
// reaches (a project folder it may write), and what the server left there
// must not choose the file the proxy writes: a symlink would have every
// later run append lines the server wrote part of (the hosts it asked
// for) to any file the user can write, ~/.bashrc among them; a hard link
// the same for a file the server can name; a FIFO would hang the start.
// So the last component is never followed (O_NOFOLLOW), and the file must
// be a regular file of this user with one link.
// /dev/null, which discards the decisions, is the one file that is not a
// regular one and is taken.
func OpenLog(path string) (*os.File, error) {
	if filepath.Clean(path) == os.DevNull {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("decision log %s: a symlink: refusing to follow it (what wrote it may have meant the log to land elsewhere)", path)
		}
		return nil, fmt.Errorf("decision log: %w", err)
	}
	if err := CheckLog(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CheckLog refuses a decision log that is not a regular file of this
// user with one link (see OpenLog): for a log opened otherwise, through a
// folder's descriptor, or to be read.
func CheckLog(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("decision log %s: not a regular file (%s)", path, fi.Mode().Type())
	case !ok:
		return fmt.Errorf("decision log %s: cannot read its owner", path)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("decision log %s: owned by uid %d, not this user", path, st.Uid)
	case st.Nlink != 1:
		return fmt.Errorf("decision log %s: %d names link to it: refusing a file another name may be meant to reach", path, st.Nlink)
	}
	return nil
}
