package egress

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// FromSelf reports whether this process is the peer of the unix socket
// connection c (SO_PEERCRED).
func FromSelf(c net.Conn) bool {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	if cerr := raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); cerr != nil || err != nil {
		return false
	}
	return int(cred.Pid) == os.Getpid()
}

// CheckPeer admits a unix socket connection only from root or one of its
// descendants running as uid: the sandbox's own processes. The identity
// is the kernel's (SO_PEERCRED, recorded when the peer connected, and the
// parent links in /proc); nothing the peer sends counts. Where the kernel
// gives a pidfd of the peer (SO_PEERPIDFD, Linux 6.5 on) it is checked to
// still be alive once the walk is done, so a peer that exited and whose
// pid was reused meanwhile is not mistaken for the new holder of that pid.
func CheckPeer(c net.Conn, root, uid int) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("not a unix socket connection: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	pidfd, pidfdErr := -1, error(nil)
	cerr := raw.Control(func(fd uintptr) {
		if cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err != nil {
			return
		}
		pidfd, pidfdErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	})
	if cerr != nil {
		return Peer{}, cerr
	}
	if err != nil {
		return Peer{}, fmt.Errorf("SO_PEERCRED: %v", err)
	}
	p := Peer{PID: int(cred.Pid), UID: int(cred.Uid)}
	switch {
	case pidfdErr == nil:
		defer unix.Close(pidfd)
	case errors.Is(pidfdErr, unix.ENOPROTOOPT):
		pidfd = -1 // a kernel before 6.5: the pid alone
	default: // ESRCH, or EINVAL before 6.15: the peer has been reaped
		return p, fmt.Errorf("%s: the process has exited (%v)", p, pidfdErr)
	}
	if p.PID <= 0 {
		return p, fmt.Errorf("%s: a process outside this pid namespace", p)
	}
	if p.UID != uid {
		return p, fmt.Errorf("%s: not the sandbox's uid %d", p, uid)
	}
	in, err := Descends(p.PID, root)
	if err != nil {
		return p, fmt.Errorf("%s: %v", p, err)
	}
	if !in {
		return p, fmt.Errorf("%s: not a process of the sandbox", p)
	}
	if pidfd >= 0 {
		if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); errors.Is(err, unix.ESRCH) {
			return p, fmt.Errorf("%s: the process exited while it was checked", p)
		}
		// EPERM (another uid's process, this one unprivileged): alive.
	}
	return p, nil
}

// Descends reports whether the process pid is root or a descendant of
// it, following parent links in /proc (a process whose parent exits is
// reparented to the nearest reaper above it: inside a sandbox with its
// own pid namespace, still the sandbox's).
func Descends(pid, root int) (bool, error) {
	if root <= 1 {
		return false, fmt.Errorf("no sandbox process to compare with (root %d)", root)
	}
	for range 4096 {
		if pid == root {
			return true, nil
		}
		if pid <= 1 {
			return false, nil
		}
		ppid, err := parentOf(pid)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				return false, fmt.Errorf("process %d has exited", pid)
			}
			return false, err
		}
		pid = ppid
	}
	return false, fmt.Errorf("process tree deeper than 4096")
}

// parentOf reads a process's parent from /proc/PID/stat: "PID (COMM) S
// PPID ...", COMM being any bytes, so the fields after its last ")".
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, s)
	}
	return strconv.Atoi(f[1])
}

// ProcessUID is the effective and the filesystem uid of a process, as
// this process's user namespace sees them (/proc/PID/status).
func ProcessUID(pid int) (euid, fsuid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest) // real, effective, saved, filesystem
			if len(f) == 4 {
				if euid, err = strconv.Atoi(f[1]); err == nil {
					fsuid, err = strconv.Atoi(f[3])
				}
				return euid, fsuid, err
			}
		}
	}
	return 0, 0, fmt.Errorf("/proc/%d/status: no Uid line", pid)
}

// handedConn is the TCP connection whose descriptor fd a forwarder sent:
// a TCP (or MPTCP) stream socket of the internet families, or an error. fd is closed
// either way (the connection holds a descriptor of its own).
func handedConn(fd int) (net.Conn, error) {
	for _, o := range []struct {
		name string
		opt  int
		ok   func(int) bool
	}{
		{"family", unix.SO_DOMAIN, func(v int) bool { return v == unix.AF_INET || v == unix.AF_INET6 }},
		{"type", unix.SO_TYPE, func(v int) bool { return v == unix.SOCK_STREAM }},
		// MPTCP too: Go's listeners (the forwarder's) take it where the
		// kernel has it, and a client that asks for it gets an MPTCP
		// socket, a TCP stream to the proxy like any other.
		{"protocol", unix.SO_PROTOCOL, func(v int) bool { return v == unix.IPPROTO_TCP || v == unix.IPPROTO_MPTCP }},
	} {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, o.opt)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("not a socket: %v", err)
		}
		if !o.ok(v) {
			unix.Close(fd)
			return nil, fmt.Errorf("not a TCP socket (%s %d)", o.name, v)
		}
	}
	f := os.NewFile(uintptr(fd), "handed-over")
	defer f.Close()
	c, err := net.FileConn(f) // a descriptor of its own
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("not a TCP connection: %T", c)
	}
	return &handedTCP{TCPConn: tc}, nil
}

// handedTCP is a handed-over TCP connection. Its sender shares its open
// file, O_NONBLOCK included, and may clear that flag: so every read and
// write says MSG_DONTWAIT itself and waits in the poller, where deadlines
// and Close end it, never in a system call the sandbox holds open.
type handedTCP struct{ *net.TCPConn }

func (c *handedTCP) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, rerr = recvNow(int(fd), b)
		return rerr != unix.EAGAIN
	}); err != nil {
		return 0, c.opErr("read", err)
	}
	switch {
	case rerr != nil:
		return 0, c.opErr("read", rerr)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *handedTCP) Write(b []byte) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var written int
	for written < len(b) {
		var n int
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			for {
				n, werr = unix.SendmsgN(int(fd), b[written:], nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
				if werr != unix.EINTR {
					return werr != unix.EAGAIN
				}
			}
		}); err != nil {
			return written, c.opErr("write", err)
		}
		if werr != nil {
			return written, c.opErr("write", werr)
		}
		written += n
	}
	return written, nil
}

// recvNow reads what is there, without waiting.
func recvNow(fd int, b []byte) (int, error) {
	for {
		n, _, err := unix.Recvfrom(fd, b, unix.MSG_DONTWAIT)
		if err != unix.EINTR {
			return n, err
		}
	}
}

func (c *handedTCP) opErr(op string, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) {
		return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, err)}
}
