package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Load installs the filter on the calling thread, for a launcher that then
// execs the server from this same thread: execve keeps the filter (and
// no_new_privs) for the whole new program and all its threads and
// children. It sets PR_SET_NO_NEW_PRIVS first (seccomp requires it without
// CAP_SYS_ADMIN; setting it again is harmless), and locks the calling
// goroutine to its thread for good, since the other threads of this Go
// process stay unfiltered until the exec replaces them.
//
// After Load, this thread can make only the syscalls the filter allows,
// which is all the Go runtime and syscall.Exec need.
func Load(o Options) error {
	c, err := get(o)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(c.prog))
	for i, in := range c.prog {
		filter[i] = unix.SockFilter{Code: in.code, Jt: in.jt, Jf: in.jf, K: in.k}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	// seccomp(2) without SECCOMP_FILTER_FLAG_TSYNC: this thread only.
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", e)
	}
	runtime.KeepAlive(filter)
	return nil
}
