package writereport

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// lstat reads an entry without following a symlink: its type and mode,
// its ctime and its birth time (0 where the file system keeps none).
func lstat(p string) (st stat, err error) {
	var x unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_CTIME|unix.STATX_BTIME, &x); err != nil {
		return st, &fs.PathError{Op: "statx", Path: p, Err: err}
	}
	st.mode = uint32(x.Mode)
	st.ctime = x.Ctime.Sec*1e9 + int64(x.Ctime.Nsec)
	if x.Mask&unix.STATX_BTIME != 0 {
		st.btime = x.Btime.Sec*1e9 + int64(x.Btime.Nsec)
	}
	return st, nil
}

// owner is a folder's owner, where the file system says.
func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
