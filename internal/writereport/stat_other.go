//go:build darwin

package writereport

import (
	"os"
	"syscall"
)

const noFollow = syscall.O_NOFOLLOW

// Sessions are recorded on Linux only (the launcher is Linux-only).
func self() (uint64, string) { return 0, "" }
func alive(*Session) bool    { return true }

func lstat(p string) (st stat, err error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return st, err
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return st, &os.PathError{Op: "lstat", Path: p, Err: syscall.EINVAL}
	}
	st.mode = uint32(sys.Mode)
	st.ctime = sys.Ctimespec.Sec*1e9 + int64(sys.Ctimespec.Nsec)
	return st, nil
}

func owner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
