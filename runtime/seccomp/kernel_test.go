//go:build linux

package seccomp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
)

// The kernel tests run this test binary again as a helper, in a sandbox:
// under bwrap with --seccomp FD (the filter passed on an inherited memfd),
// or as a child that calls Load itself, as the Landlock launcher does. The
// helper makes the calls and prints one line per check, NAME=RESULT, where
// RESULT is "ok" or the errno's name; the test compares with what each
// mode must see. The control mode runs the same helper without the filter
// and must see the calls succeed: that is what proves the test can fail.
const helperEnv = "MCPOLICY_SECCOMP_HELPER" // "checks", "load", "load-deny-unix", "load-no-ns", "x32", "x32-load"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	signal.Ignore(syscall.SIGHUP) // the pty of the TIOCSTI checks hangs up when the helper exits
	// A named datagram socket made before any filter: the host's /dev/log,
	// for the check that a datagram socketpair can reach it.
	var logSock string
	if dir := os.Getenv("MCPOLICY_SECCOMP_DIR"); dir != "" {
		logSock = filepath.Join(dir, "log.sock")
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrUnix{Name: logSock})
		}
		if err != nil {
			fmt.Println("error: log socket:", err)
			return 1
		}
	}
	switch mode {
	case "load", "load-deny-unix", "load-no-ns", "x32-load":
		if err := Load(Options{DenyUnixSockets: mode == "load-deny-unix", NoNamespaces: mode == "load-no-ns"}); err != nil {
			fmt.Println("error: Load:", err)
			return 1
		}
	}
	if strings.HasPrefix(mode, "x32") {
		// getpid through the x32 ABI: killed under the filter; without it,
		// ENOSYS on kernels without CONFIG_X86_X32_ABI.
		_, _, e := unix.RawSyscall(x32Bit|unix.SYS_GETPID, 0, 0, 0)
		fmt.Println("x32=" + result(errnoErr(e)))
		return 0
	}
	for _, c := range helperChecks(logSock) {
		fmt.Printf("%s=%s\n", c.name, result(c.run()))
	}
	return 0
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

type helperCheck struct {
	name string
	run  func() error
}

func helperChecks(logSock string) []helperCheck {
	return []helperCheck{
		{"keyctl", func() error {
			_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 1, 0, 0)
			return err
		}},
		{"add_key", func() error { // on the process keyring, which dies with the helper
			_, err := unix.AddKey("user", "mcpolicy-seccomp-test", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
			return err
		}},
		{"tiocsti", func() error { return tiocsti(tiocSTI) }},
		{"tiocsti_hi", func() error { return tiocsti(1<<32 | tiocSTI) }}, // the kernel reads an unsigned int
		{"tioclinux", func() error { return tiocsti(tiocLINUX) }},
		{"tiocsetd", func() error { // N_TTY, the line discipline a pty has already: nothing changes
			fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open /dev/ptmx: %v", err)
			}
			defer unix.Close(fd)
			return unix.IoctlSetPointerInt(fd, unix.TIOCSETD, 0)
		}},
		{"clone3", func() error {
			_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
			return errnoErr(e)
		}},
		{"socket_unix", func() error { return closeSocket(unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)) }},
		{"socket_unix_dgram", func() error { return closeSocket(unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)) }},
		{"socket_packet", func() error { return closeSocket(unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)) }},
		{"socketpair_stream", func() error { return socketpair(unix.SOCK_STREAM) }},
		{"socketpair_dgram", func() error { return socketpair(unix.SOCK_DGRAM) }},
		{"chmod_setuid", func() error {
			return setuid(func(f string) error { return unix.Fchmodat(unix.AT_FDCWD, f, 0o4755, 0) })
		}},
		{"create_setgid", func() error {
			return setuid(func(f string) error {
				os.Remove(f)
				fd, err := unix.Open(f, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o2755)
				if err == nil {
					unix.Close(fd)
				}
				return err
			})
		}},
		{"chmod_plain", func() error { return setuid(func(f string) error { return unix.Fchmodat(unix.AT_FDCWD, f, 0o755, 0) }) }},
		{"fchmod_plain", func() error { return onFile(func(fd int) error { return unix.Fchmod(fd, 0o755) }) }},
		{"chmod_group_write", func() error { return setuid(func(f string) error { return unix.Fchmodat(unix.AT_FDCWD, f, 0o664, 0) }) }},
		{"fchmod_other_write", func() error { return onFile(func(fd int) error { return unix.Fchmod(fd, 0o646) }) }},
		{"fchmodat2_other_write", func() error {
			return setuid(func(f string) error {
				p, err := unix.BytePtrFromString(f)
				if err != nil {
					return err
				}
				_, _, e := unix.Syscall6(sysFchmodat2, atFDCWD, uintptr(unsafe.Pointer(p)), 0o777, 0, 0, 0)
				return errnoErr(e)
			})
		}},
		{"umask_mkdir", umaskMkdir},
		{"setxattr_acl", func() error { // setfacl -m o::rwx: an ACL whose other entry writes
			return setuid(func(f string) error { return unix.Setxattr(f, "system.posix_acl_access", aclOtherWrite(), 0) })
		}},
		{"getpriority_other", func() error {
			return onChild(func(pid int) error { _, err := unix.Getpriority(unix.PRIO_PROCESS, pid); return err })
		}},
		{"chown_path", func() error {
			return setuid(func(f string) error { return unix.Fchownat(unix.AT_FDCWD, f, os.Getuid(), os.Getgid(), 0) })
		}},
		{"fchown", func() error { return onFile(func(fd int) error { return unix.Fchown(fd, os.Getuid(), os.Getgid()) }) }},
		{"utimes_path", func() error {
			return setuid(func(f string) error { return unix.UtimesNanoAt(unix.AT_FDCWD, f, nil, 0) })
		}},
		{"futimens", func() error {
			return onFile(func(fd int) error { // utimensat(fd, NULL, NULL, 0), as glibc's and musl's futimens
				_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, 0, 0, 0, 0)
				return errnoErr(e)
			})
		}},
		{"listen_unbound", func() error { // binds a port itself, without bind(2)
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Listen(fd, 1)
		}},
		{"fastopen", func() error { // connects as it sends, without connect(2)
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN|unix.MSG_DONTWAIT, &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}})
		}},
		{"sock_diag", func() error {
			return closeSocket(unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG))
		}},
		{"dgram_reach", func() error { // a datagram pair's socket sending to a named socket
			if logSock == "" {
				return errors.New("no log socket")
			}
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			return unix.Sendto(fds[0], []byte("<13>injected"), 0, &unix.SockaddrUnix{Name: logSock})
		}},
		{"tcp_loopback", tcpLoopback},
		{"files", files},
		{"sh", func() error {
			out, err := exec.Command("/bin/sh", "-c", "ls / >/dev/null && echo done").CombinedOutput()
			if err == nil && strings.TrimSpace(string(out)) != "done" {
				err = fmt.Errorf("sh said %q", out)
			}
			return err
		}},
		{"threads", threads},
		{"prlimit_self", func() error { return sameLimit(0) }},
		{"nice_self", func() error { return samePriority(0) }},
		{"prlimit_other", func() error { return onChild(sameLimit) }},
		{"prlimit_other_read", func() error {
			return onChild(func(pid int) error { var l unix.Rlimit; return unix.Prlimit(pid, unix.RLIMIT_CORE, nil, &l) })
		}},
		{"nice_other", func() error { return onChild(samePriority) }},
		{"affinity_other", func() error {
			return onChild(func(pid int) error {
				var set unix.CPUSet
				if err := unix.SchedGetaffinity(pid, &set); err != nil {
					return fmt.Errorf("get: %w", err)
				}
				return unix.SchedSetaffinity(pid, &set)
			})
		}},
		{"ioprio_other", func() error {
			return onChild(func(pid int) error {
				const whoProcess = 1 // IOPRIO_WHO_PROCESS
				prio, _, e := unix.RawSyscall(unix.SYS_IOPRIO_GET, whoProcess, uintptr(pid), 0)
				if e != 0 {
					return fmt.Errorf("get: %w", e)
				}
				_, _, e = unix.RawSyscall(unix.SYS_IOPRIO_SET, whoProcess, uintptr(pid), prio)
				return errnoErr(e)
			})
		}},
	}
}

// sameLimit sets a process's RLIMIT_CORE to what it is: the call is made,
// nothing changes.
func sameLimit(pid int) error {
	var l unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, nil, &l); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	return unix.Prlimit(pid, unix.RLIMIT_CORE, &l, nil)
}

// samePriority sets a process's nice value to what it is.
func samePriority(pid int) error {
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid)
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	return unix.Setpriority(unix.PRIO_PROCESS, pid, 20-prio) // the syscall answers 20 - nice
}

// onChild runs do on another process of the same user (a child that
// sleeps): the kernel lets a process change its limits and priority, the
// filter must not.
func onChild(do func(pid int) error) error {
	c := exec.Command("/bin/sh", "-c", "sleep 30")
	if err := c.Start(); err != nil {
		return err
	}
	defer c.Wait()
	defer c.Process.Kill()
	return do(c.Process.Pid)
}

func closeSocket(fd int, err error) error {
	if err == nil {
		unix.Close(fd)
	}
	return err
}

func socketpair(typ int) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if _, err := unix.Write(fds[0], []byte("x")); err != nil {
		return fmt.Errorf("write: %v", err)
	}
	return nil
}

// setuid runs change on a fresh file in a temporary folder.
func setuid(change func(string) error) error {
	dir, err := os.MkdirTemp("", "mcpolicy-seccomp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	f := dir + "/f"
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		return err
	}
	return change(f)
}

// sysFchmodat2 is fchmodat2(2) (Linux 6.6), the same number on amd64 and
// arm64; x/sys has no wrapper.
const sysFchmodat2 = 452

var atFDCWD = uintptr(0xffffffffffffff9c) // AT_FDCWD (-100), as a register holds it

// umaskMkdir makes a folder with mode 0777 under umask 0: ok when the
// folder ends group- or world-writable, "masked" when umask(0) did not
// take.
func umaskMkdir() error {
	dir, err := os.MkdirTemp("", "mcpolicy-seccomp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	old := unix.Umask(0)
	defer unix.Umask(old)
	if err := unix.Mkdir(dir+"/d", 0o777); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Stat(dir+"/d", &st); err != nil {
		return err
	}
	if st.Mode&0o022 == 0 {
		return errors.New("masked")
	}
	return nil
}

// aclOtherWrite is system.posix_acl_access for u::rw-,g::r--,o::rw-
// (struct posix_acl_xattr_header and entries, linux/posix_acl_xattr.h).
func aclOtherWrite() []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2) // POSIX_ACL_XATTR_VERSION
	for _, e := range []struct {
		tag, perm uint16
	}{{0x01, 6}, {0x04, 4}, {0x20, 6}} { // ACL_USER_OBJ, ACL_GROUP_OBJ, ACL_OTHER
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, 0xffffffff) // ACL_UNDEFINED_ID
	}
	return b
}

// tiocsti pushes one character into a pty that is this process's
// controlling terminal (the kernel lets TIOCSTI push input only there,
// without CAP_SYS_ADMIN), with request req. Only the errno of that last
// call is returned as an errno: a failing step before it reads as its name.
func tiocsti(req uint64) error {
	pts, err := controllingPty()
	if err != nil {
		return err
	}
	c := byte('#')
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(pts), uintptr(req), uintptr(unsafe.Pointer(&c)))
	return errnoErr(e)
}

var ctty struct {
	once sync.Once
	fd   int
	err  error
}

// controllingPty opens a pty and makes it the controlling terminal, once;
// it stays open until the helper exits (closing it would hang up).
func controllingPty() (int, error) {
	ctty.once.Do(func() {
		ctty.err = func() error {
			ptmx, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open /dev/ptmx: %v", err)
			}
			if err := unix.IoctlSetPointerInt(ptmx, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
				return fmt.Errorf("unlockpt: %v", err)
			}
			// the peer, opened without a path
			r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(ptmx), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
			if e != 0 {
				return fmt.Errorf("TIOCGPTPEER: %v", e)
			}
			ctty.fd = int(r)
			if _, err := unix.Setsid(); err != nil && err != unix.EPERM { // EPERM: already a session leader (bwrap --new-session)
				return fmt.Errorf("setsid: %v", err)
			}
			if err := unix.IoctlSetInt(ctty.fd, unix.TIOCSCTTY, 0); err != nil {
				return fmt.Errorf("TIOCSCTTY: %v", err)
			}
			return nil
		}()
	})
	return ctty.fd, ctty.err
}

func tcpLoopback() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, err = c.Write([]byte("pong"))
			c.Close()
		}
		done <- err
	}()
	c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	b := make([]byte, 4)
	if _, err := c.Read(b); err != nil || string(b) != "pong" {
		return fmt.Errorf("read %q: %v", b, err)
	}
	return <-done
}

func files() error {
	dir, err := os.MkdirTemp("", "seccomp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "a")
	if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
		return err
	}
	if err := os.Rename(p, p+"2"); err != nil {
		return err
	}
	b, err := os.ReadFile(p + "2")
	if err != nil || string(b) != "hello" {
		return fmt.Errorf("read back %q: %v", b, err)
	}
	if _, err := os.ReadDir(dir); err != nil {
		return err
	}
	return os.Remove(p + "2")
}

// threads makes the Go runtime start OS threads (goroutines locked to
// threads, blocked in syscalls) and collect garbage.
func threads() error {
	const n = 8
	var mu sync.Mutex
	tids := map[int]bool{}
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			mu.Lock()
			tids[unix.Gettid()] = true
			mu.Unlock()
			<-release
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	runtime.GC()
	if len(tids) < n {
		return fmt.Errorf("%d threads for %d locked goroutines", len(tids), n)
	}
	return nil
}

// onFile calls change on a descriptor of a new file of this process's.
func onFile(change func(int) error) error {
	return setuid(func(f string) error {
		fd, err := unix.Open(f, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return change(fd)
	})
}

// want is what each mode must see: a result, or "!X" for anything but X.
var want = map[string]map[string]string{
	"control": {"tiocsetd": "ok", "fchmod_plain": "ok", "chown_path": "ok", "fchown": "ok", "utimes_path": "ok", "futimens": "ok", "listen_unbound": "ok", "fastopen": "!EACCES", "sock_diag": "ok", "keyctl": "ok", "add_key": "ok", "tiocsti": "ok", "tiocsti_hi": "ok", "tioclinux": "!EPERM", "clone3": "!ENOSYS",
		"socket_unix": "ok", "socket_unix_dgram": "ok", "socket_packet": "!EAFNOSUPPORT", "socketpair_stream": "ok", "socketpair_dgram": "ok", "dgram_reach": "ok", "chmod_setuid": "ok", "create_setgid": "ok", "chmod_plain": "ok",
		"prlimit_other": "ok", "nice_other": "ok", "affinity_other": "ok", "ioprio_other": "ok",
		"chmod_group_write": "ok", "fchmod_other_write": "ok", "fchmodat2_other_write": "ok", "umask_mkdir": "ok", "setxattr_acl": "ok", "getpriority_other": "ok", "prlimit_other_read": "ok"},
	"filter": {"tiocsetd": "EPERM", "fchmod_plain": "ok", "chown_path": "ok", "fchown": "ok", "utimes_path": "ok", "futimens": "ok", "listen_unbound": "ok", "fastopen": "!EACCES", "sock_diag": "ok", "keyctl": "ENOSYS", "add_key": "ENOSYS", "tiocsti": "EPERM", "tiocsti_hi": "EPERM", "tioclinux": "EPERM", "clone3": "ENOSYS",
		"socket_unix": "ok", "socket_unix_dgram": "ok", "socket_packet": "EAFNOSUPPORT", "socketpair_stream": "ok", "socketpair_dgram": "ok", "dgram_reach": "ok", "chmod_setuid": "EPERM", "create_setgid": "EPERM", "chmod_plain": "ok",
		"prlimit_other": "EPERM", "nice_other": "EPERM", "affinity_other": "EPERM", "ioprio_other": "EPERM",
		"chmod_group_write": "EPERM", "fchmod_other_write": "EPERM", "fchmodat2_other_write": "EPERM", "umask_mkdir": "masked", "setxattr_acl": "ENOTSUP", "getpriority_other": "ok", "prlimit_other_read": "ok"},
	"filter-deny-unix": {"tiocsetd": "EPERM", "fchmod_plain": "ok", "chown_path": "ok", "fchown": "ok", "utimes_path": "ok", "futimens": "ok", "listen_unbound": "ok", "fastopen": "!EACCES", "sock_diag": "ok", "keyctl": "ENOSYS", "add_key": "ENOSYS", "tiocsti": "EPERM", "tiocsti_hi": "EPERM", "tioclinux": "EPERM", "clone3": "ENOSYS",
		"socket_unix": "EACCES", "socket_unix_dgram": "EACCES", "socket_packet": "EAFNOSUPPORT", "socketpair_stream": "ok", "socketpair_dgram": "EACCES", "dgram_reach": "EACCES", "chmod_setuid": "EPERM", "create_setgid": "EPERM", "chmod_plain": "ok",
		"prlimit_other": "EPERM", "nice_other": "EPERM", "affinity_other": "EPERM", "ioprio_other": "EPERM",
		"chmod_group_write": "EPERM", "fchmod_other_write": "EPERM", "fchmodat2_other_write": "EPERM", "umask_mkdir": "masked", "setxattr_acl": "ENOTSUP", "getpriority_other": "ok", "prlimit_other_read": "ok"},
	// The Landlock launcher without namespaces: metadata changes, listen,
	// Fast Open and sock_diag refused.
	"filter-no-ns": {"tiocsetd": "EPERM", "keyctl": "ENOSYS", "add_key": "ENOSYS", "tiocsti": "EPERM", "tiocsti_hi": "EPERM", "tioclinux": "EPERM", "clone3": "ENOSYS",
		"socket_unix": "ok", "socket_unix_dgram": "ok", "socket_packet": "EAFNOSUPPORT", "socketpair_stream": "ok", "socketpair_dgram": "ok", "dgram_reach": "ok", "chmod_setuid": "EPERM", "create_setgid": "EPERM", "chmod_plain": "EPERM",
		"fchmod_plain": "EPERM", "chown_path": "EPERM", "fchown": "EPERM", "utimes_path": "EPERM", "futimens": "EPERM", "listen_unbound": "EACCES", "fastopen": "EACCES", "sock_diag": "EACCES",
		"tcp_loopback":  "EACCES", // net.Listen's listen(2)
		"prlimit_other": "EPERM", "nice_other": "EPERM", "affinity_other": "EPERM", "ioprio_other": "EPERM",
		"chmod_group_write": "EPERM", "fchmod_other_write": "EPERM", "fchmodat2_other_write": "EPERM", "umask_mkdir": "masked", "setxattr_acl": "ENOTSUP",
		"getpriority_other": "EPERM", "prlimit_other_read": "EPERM"}, // a host process's, without a PID namespace
}

// ordinary work must succeed in every mode.
var ordinary = []string{"tcp_loopback", "files", "sh", "threads", "prlimit_self", "nice_self"}

func checkResults(t *testing.T, mode string, out []byte, skip ...string) {
	t.Helper()
	got := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(out))
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), "="); ok {
			got[k] = v
		}
	}
	exp := map[string]string{}
	for k, v := range want[mode] {
		exp[k] = v
	}
	for _, k := range ordinary {
		if _, decided := want[mode][k]; !decided {
			exp[k] = "ok"
		}
	}
	for _, k := range skip {
		delete(exp, k)
	}
	keys := make([]string, 0, len(exp))
	for k := range exp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var seen []string
	for _, k := range keys {
		w, g := exp[k], got[k]
		if g == "" {
			t.Errorf("%s: %s: no result (output:\n%s)", mode, k, out)
			continue
		}
		if bad, neg := strings.CutPrefix(w, "!"); (neg && g == bad) || (!neg && g != w) {
			t.Errorf("%s: %s = %s, want %s", mode, k, g, w)
		}
		seen = append(seen, k+"="+g)
	}
	t.Logf("%s: %s", mode, strings.Join(seen, " "))
}

// requireBwrap skips without bwrap, except under CI=true, where it fails.
func requireBwrap(t *testing.T) string {
	t.Helper()
	testbin.SkipShort(t, "runs the filter under bwrap")
	if why := testenv.Bwrap("bwrap"); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: %s; CI must install bubblewrap", why)
		}
		t.Skip(why)
	}
	p, _ := exec.LookPath("bwrap")
	return p
}

// bwrapCmd is the sandbox the bwrap launcher builds, reduced: every
// namespace, a new session, an empty environment, /usr read-only, a
// private /tmp, and the helper (this test binary) at /helper.
func bwrapCmd(t *testing.T, bwrap string, prog []byte, command ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
		"--setenv", "PATH", "/usr/bin:/bin", "--setenv", helperEnv, "checks",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
		"--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache", "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
		"--ro-bind", self, "/helper"}
	var extra []*os.File
	if prog != nil {
		fd, err := unix.MemfdCreate("mcpolicy-seccomp", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), "seccomp")
		t.Cleanup(func() { f.Close() })
		if _, err := f.Write(prog); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		extra = append(extra, f) // fd 3 in bwrap
		args = append(args, "--seccomp", "3")
	}
	if len(command) == 0 {
		command = []string{"/helper"}
	}
	cmd := exec.Command(bwrap, append(append(args, "--"), command...)...)
	cmd.ExtraFiles = extra
	cmd.Env = []string{}
	return cmd
}

func TestUnderBwrap(t *testing.T) {
	bwrap := requireBwrap(t)
	for _, mode := range []string{"control", "filter", "filter-deny-unix"} {
		t.Run(mode, func(t *testing.T) {
			var prog []byte
			if mode != "control" {
				var err error
				if prog, err = Program(Options{DenyUnixSockets: mode == "filter-deny-unix"}); err != nil {
					t.Fatal(err)
				}
			}
			out, err := bwrapCmd(t, bwrap, prog).CombinedOutput()
			if err != nil {
				t.Fatalf("bwrap: %v\n%s", err, out)
			}
			checkResults(t, mode, out, "dgram_reach") // no host socket inside bwrap's empty root
		})
	}
}

// TestLoad: a child calls Load, then makes the same calls (the Landlock
// launcher's way: filter this thread, then exec). It also checks that a
// datagram socketpair reaches a named socket made before the filter, unless
// DenyUnixSockets.
func TestLoad(t *testing.T) {
	for _, c := range []struct{ mode, helper string }{{"control", "checks"}, {"filter", "load"}, {"filter-deny-unix", "load-deny-unix"}, {"filter-no-ns", "load-no-ns"}} {
		t.Run(c.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), helperEnv+"="+c.helper, "MCPOLICY_SECCOMP_DIR="+t.TempDir())
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal, as bwrap --new-session
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			checkResults(t, c.mode, out)
		})
	}
}

// TestLoadKillsX32: on x86_64, a syscall through the x32 ABI kills the
// process (SIGSYS), where without the filter it only fails.
func TestLoadKillsX32(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 is an x86_64 ABI")
	}
	run := func(helper string) (string, error) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"="+helper)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("x32")
	if err != nil || !strings.HasPrefix(out, "x32=") {
		t.Fatalf("control: %v: %s", err, out)
	}
	t.Logf("control: %s", strings.TrimSpace(out))
	out, err = run("x32-load")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGSYS {
		t.Fatalf("under the filter: %v (want killed by SIGSYS): %s", err, out)
	}
	t.Logf("under the filter: %v", err)
}

// TestRuntimesUnderBwrap runs sh, node and python3, when installed under
// /usr, in bwrap with the filter (DenyUnixSockets included): each starts a
// child process, a thread and a loopback TCP connection.
func TestRuntimesUnderBwrap(t *testing.T) {
	bwrap := requireBwrap(t)
	scripts := map[string][]string{
		"sh": {"/bin/sh", "-c", `d=$(mktemp -d) && echo hi >"$d/f" && cat "$d/f" | grep -q hi && (sleep 0 &) && wait && echo RUNTIME-OK`},
		"node": {"/usr/bin/node", "-e", `
const {execFileSync} = require("child_process"), net = require("net"), fs = require("fs"), {Worker} = require("worker_threads");
fs.writeFileSync("/tmp/x", "hi"); if (fs.readFileSync("/tmp/x", "utf8") !== "hi") throw new Error("fs");
if (execFileSync("/bin/sh", ["-c", "echo sub"]).toString().trim() !== "sub") throw new Error("child");
new Worker("require('worker_threads').parentPort.postMessage(42)", {eval: true}).on("message", (m) => {
  const srv = net.createServer((c) => c.end("pong")).listen(0, "127.0.0.1", () => {
    net.connect(srv.address().port, "127.0.0.1").on("data", (d) => { srv.close(); console.log(m === 42 && d.toString() === "pong" ? "RUNTIME-OK" : "bad"); });
  });
});`},
		"python3": {"/usr/bin/python3", "-c", `
import socket, subprocess, threading, tempfile, os, asyncio
assert subprocess.run(["/bin/sh", "-c", "echo sub"], capture_output=True).stdout == b"sub\n"
r = []; th = threading.Thread(target=lambda: r.append(1)); th.start(); th.join(); assert r == [1]
with tempfile.NamedTemporaryFile() as f: f.write(b"hi"); f.flush(); assert open(f.name, "rb").read() == b"hi"
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); c = socket.create_connection(s.getsockname()); a, _ = s.accept(); a.sendall(b"pong"); assert c.recv(4) == b"pong"
async def main(): await asyncio.sleep(0)
asyncio.run(main())
print("RUNTIME-OK")`},
	}
	names := []string{"sh", "node", "python3"}
	prog, err := Program(Options{DenyUnixSockets: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			argv := scripts[name]
			if _, err := os.Stat(argv[0]); err != nil && name != "sh" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed; CI machines have it", argv[0])
				}
				t.Skipf("%s is not installed", argv[0])
			}
			out, err := bwrapCmd(t, bwrap, prog, argv...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "RUNTIME-OK") {
				t.Fatalf("%s under the filter: %v\n%s", name, err, out)
			}
		})
	}
}
