package entry

import (
	"errors"

	"golang.org/x/sys/unix"
)

// A read lease (fcntl F_SETLEASE) is how Save sees a client that saves in
// place (open with O_TRUNC, then write: Node's writeFileSync, an editor
// with backupcopy): the kernel grants none while any process holds the
// file open for writing, and while one is held, an open for writing waits
// (up to /proc/sys/fs/lease-break-time) until it is let go.

// lease is a read lease held on a file (fd < 0: none could be taken —
// the file is another user's, or its filesystem has no leases — and
// nothing is known).
type lease struct{ fd int }

// takeLease takes a read lease on file; ok is false when another process
// holds it open for writing.
func takeLease(file string) (*lease, bool) {
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return &lease{fd: -1}, true
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK)
	if errors.Is(err, unix.EAGAIN) {
		unix.Close(fd)
		return nil, false
	}
	if err != nil {
		unix.Close(fd)
		return &lease{fd: -1}, true
	}
	return &lease{fd: fd}, true
}

// intact: no open for writing has begun since the lease was taken (one
// that begins breaks it, and F_GETLEASE then answers F_UNLCK).
func (l *lease) intact() bool {
	if l == nil || l.fd < 0 {
		return true
	}
	t, err := unix.FcntlInt(uintptr(l.fd), unix.F_GETLEASE, 0)
	return err == nil && t == unix.F_RDLCK
}

// release lets the lease go (a waiting open goes on).
func (l *lease) release() {
	if l == nil || l.fd < 0 {
		return
	}
	unix.FcntlInt(uintptr(l.fd), unix.F_SETLEASE, unix.F_UNLCK)
	unix.Close(l.fd)
	l.fd = -1
}

// writing reports whether another process holds file open for writing.
func writing(file string) bool {
	l, ok := takeLease(file)
	l.release()
	return !ok
}
