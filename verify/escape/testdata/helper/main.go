// Command helper is the escape suite's attack tool for what a shell cannot
// do: connect to a unix socket, search the session keyring, push a
// character into a terminal, use an inherited descriptor, look for a
// variable in every readable /proc/PID/environ. The suite builds it static
// (CGO_ENABLED=0) and copies it into each project, inside the grant, so the
// confined server runs it as its own code (under docker and podman too).
//
// Each subcommand makes one attempt and prints one line: "ok ..." with
// exit 0 when the attempt worked, "errno=ENAME ..." with exit 1 when the
// kernel refused it (the suite reads the errno from that line). It never
// prints what it read: a leak is the "ok", and the suite also checks that
// no planted value appears in the output.
//
//	helper connect PATH          connect(2) to a named unix socket
//	helper dial HOST:PORT        connect(2) over TCP (2 s timeout)
//	helper environ NAME VALUE    NAME=VALUE in its own environment or any readable /proc/PID/environ
//	helper tiocsti FD            ioctl(FD, TIOCSTI, "x")
//	helper keyring DESC          keyctl search @s user DESC, then read it
//	helper readfd FD             read(2) from descriptor FD as inherited
//	helper procfd FD             open /proc/self/fd/FD and read it
//	helper openat FD NAME        openat(FD, NAME) and read it
//	helper mount PATH            what /proc/self/mountinfo says is mounted at PATH
//	helper prockeys DESC         a key described DESC in /proc/keys (keys it may view)
//	helper termios FD|/dev/tty   TCGETS on FD (or on /dev/tty, opened): ok when it is a terminal
//	helper noecho FD             turn ECHO off on the terminal FD (TCGETS, then TCSETS)
//	helper emit FD               write an OSC 52 clipboard sequence and a colour to FD
//	helper ttydaemon MS I O E    leave a process in a new session (setsid) holding fds I, O
//	                             and E as its 0, 1 and 2, which after MS ms turns ECHO off
//	                             on each that is a terminal and writes the OSC 52 sequence
//	                             to each
//	helper prlimit PID           set PID's RLIMIT_CPU soft limit to 12345 s
//	helper renice PID            setpriority(PRIO_PROCESS, PID, 19)
//	helper renice-user           setpriority(PRIO_USER, 0, 19): every process of its uid
//	helper getlimit PID          read PID's RLIMIT_CPU (prlimit64 with no new limit)
//	helper getprio PID           getpriority(PRIO_PROCESS, PID)
//	helper signal0 PID           kill(PID, 0): does it exist (EPERM: it does, out of signal scope)
//	helper fchmodat2 PATH MODE   fchmodat2(AT_FDCWD, PATH, MODE (octal), 0)
//	helper setfacl PATH          setxattr system.posix_acl_access u::rw-,g::r--,o::rw- (setfacl -m o::rw)
//	helper nouserns CMD ARGS...  (the test's, on the host, in a new user namespace with
//	                             CAP_SYS_RESOURCE ambient) set user.max_user_namespaces to 0
//	                             in it, drop the ambient capabilities, exec CMD
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("errno=EINVAL usage: helper OP ARGS...")
		os.Exit(2)
	}
	if os.Args[1] == "nouserns" {
		err := noUserNS(os.Args[2:])
		fmt.Printf("errno=%s nouserns: %s\n", errnoName(err), oneLine(err.Error()))
		os.Exit(1)
	}
	if os.Args[1] == "ttyhaunt" { // the daemon ttydaemon leaves: no output of its own
		haunt(os.Args[2:])
		os.Exit(0)
	}
	msg, err := run(os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Printf("errno=%s %s\n", errnoName(err), oneLine(err.Error()))
		os.Exit(1)
	}
	fmt.Printf("ok %s\n", oneLine(msg))
}

func run(op string, args []string) (string, error) {
	need := map[string]int{"connect": 1, "dial": 1, "environ": 2, "tiocsti": 1, "keyring": 1, "readfd": 1, "procfd": 1, "openat": 2, "mount": 1, "prockeys": 1,
		"termios": 1, "noecho": 1, "emit": 1, "ttydaemon": 4, "prlimit": 1, "renice": 1, "renice-user": 0,
		"userkeyring": 1, "plant-user-key": 2, "unlink-user-key": 1, "vsock": 0,
		"fastopen": 1, "listen": 0, "sockdiag": 0, "fchmod": 2, "fchmodat2": 2, "setfacl": 1, "getlimit": 1, "getprio": 1, "signal0": 1}
	n, ok := need[op]
	if !ok || len(args) != n {
		return "", fmt.Errorf("usage: %s: %w", op, unix.EINVAL)
	}
	switch op {
	case "connect":
		c, err := net.DialTimeout("unix", args[0], 2*time.Second)
		if err != nil {
			return "", err
		}
		c.Close()
		return "connected to " + args[0], nil
	case "dial":
		c, err := net.DialTimeout("tcp", args[0], 2*time.Second)
		if err != nil {
			return "", err
		}
		c.Close()
		return "connected to " + args[0], nil
	case "environ":
		return environ(args[0], args[1])
	case "tiocsti":
		fd, err := strconv.Atoi(args[0])
		if err != nil {
			return "", err
		}
		c := byte('x')
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); errno != 0 {
			return "", fmt.Errorf("ioctl(%d, TIOCSTI): %w", fd, errno)
		}
		return fmt.Sprintf("ioctl(%d, TIOCSTI, 'x') pushed a character", fd), nil
	case "keyring":
		id, err := unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", args[0], 0)
		if err != nil {
			return "", fmt.Errorf("keyctl search @s user %s: %w", args[0], err)
		}
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, make([]byte, 4096), 0)
		if err != nil {
			return "", fmt.Errorf("keyctl read %d: %w", id, err)
		}
		return fmt.Sprintf("found key %d in the session keyring and read %d bytes", id, n), nil
	case "userkeyring": // the user keyring of the process's uid: on the host's kernel, the host user's
		// Linked into the session keyring first, the user keyring (and its
		// keys) is possessed: a container's own session keyring is new.
		if _, err := unix.KeyctlInt(unix.KEYCTL_LINK, unix.KEY_SPEC_USER_KEYRING, unix.KEY_SPEC_SESSION_KEYRING, 0, 0); err != nil {
			return "", fmt.Errorf("keyctl link @u @s: %w", err)
		}
		id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", args[0], 0)
		if err != nil {
			return "", fmt.Errorf("keyctl search @u user %s: %w", args[0], err)
		}
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, make([]byte, 4096), 0)
		if err != nil {
			return "", fmt.Errorf("keyctl read %d: %w", id, err)
		}
		return fmt.Sprintf("found key %d in the user keyring and read %d bytes", id, n), nil
	case "plant-user-key": // run on the host, as the user
		id, err := unix.AddKey("user", args[0], []byte(args[1]), unix.KEY_SPEC_USER_KEYRING)
		if err != nil {
			return "", fmt.Errorf("add_key user %s @u: %w", args[0], err)
		}
		return fmt.Sprintf("added key %d to the user keyring of uid %d", id, os.Getuid()), nil
	case "unlink-user-key":
		id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", args[0], 0)
		if err != nil {
			return "", err
		}
		if _, err := unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0); err != nil {
			return "", err
		}
		return "unlinked", nil
	case "fastopen": // TCP Fast Open: sendto connects as it sends, without connect(2)
		ap, err := netip.ParseAddrPort(args[0])
		if err != nil || !ap.Addr().Is4() {
			return "", fmt.Errorf("%s: want IPv4:PORT: %w", args[0], unix.EINVAL)
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		if err := unix.Sendto(fd, []byte("fast-open-from-the-server\n"), unix.MSG_FASTOPEN, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
			return "", fmt.Errorf("sendto(MSG_FASTOPEN, %s): %w", args[0], err)
		}
		time.Sleep(200 * time.Millisecond) // the SYN's data reaches the listener
		return "sent to " + args[0] + " with MSG_FASTOPEN", nil
	case "fchmod": // through a descriptor opened for reading: a read-only grant's file
		mode, err := strconv.ParseUint(args[1], 8, 32)
		if err != nil {
			return "", err
		}
		fd, err := unix.Open(args[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("open %s read-only: %w", args[0], err)
		}
		defer unix.Close(fd)
		if err := unix.Fchmod(fd, uint32(mode)); err != nil {
			return "", fmt.Errorf("fchmod %s %s: %w", args[0], args[1], err)
		}
		return "fchmod " + args[1] + " through a read-only descriptor", nil
	case "fchmodat2": // fchmodat2(2) (Linux 6.6), which x/sys does not wrap
		mode, err := strconv.ParseUint(args[1], 8, 32)
		if err != nil {
			return "", err
		}
		p, err := unix.BytePtrFromString(args[0])
		if err != nil {
			return "", err
		}
		const sysFchmodat2 = 452 // amd64 and arm64
		cwd := int(unix.AT_FDCWD)
		if _, _, e := unix.Syscall6(sysFchmodat2, uintptr(cwd), uintptr(unsafe.Pointer(p)), uintptr(mode), 0, 0, 0); e != 0 {
			return "", fmt.Errorf("fchmodat2 %s %s: %w", args[0], args[1], e)
		}
		return "fchmodat2 " + args[1], nil
	case "setfacl": // setfacl -m o::rw-: the ACL's other entry writes
		if err := unix.Setxattr(args[0], "system.posix_acl_access", aclOtherWrite(), 0); err != nil {
			return "", fmt.Errorf("setxattr %s system.posix_acl_access (u::rw-,g::r--,o::rw-): %w", args[0], err)
		}
		return "set an ACL whose other entry writes", nil
	case "listen": // listen(2) on an unbound socket binds a port itself
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		if err := unix.Listen(fd, 1); err != nil {
			return "", fmt.Errorf("listen: %w", err)
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("listening on port %d of every interface", sa.(*unix.SockaddrInet4).Port), nil
	case "sockdiag": // sock_diag lists the network namespace's sockets
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_SOCK_DIAG)
		if err != nil {
			return "", fmt.Errorf("socket(AF_NETLINK, NETLINK_SOCK_DIAG): %w", err)
		}
		unix.Close(fd)
		return "a sock_diag socket", nil
	case "vsock": // no network namespace confines AF_VSOCK: it reaches the hypervisor's services
		fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
		if err != nil {
			return "", fmt.Errorf("socket(AF_VSOCK): %w", err)
		}
		unix.Close(fd)
		return "socket(AF_VSOCK, SOCK_STREAM) created", nil
	case "readfd":
		fd, err := strconv.Atoi(args[0])
		if err != nil {
			return "", err
		}
		return readAll(fd, fmt.Sprintf("read(%d)", fd))
	case "procfd":
		p := "/proc/self/fd/" + args[0]
		target, _ := os.Readlink(p)
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("open %s (-> %q): %w", p, target, err)
		}
		defer unix.Close(fd)
		return readAll(fd, "open "+p+" ("+target+")")
	case "openat":
		dir, err := strconv.Atoi(args[0])
		if err != nil {
			return "", err
		}
		fd, err := unix.Openat(dir, args[1], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("openat(%d, %s): %w", dir, args[1], err)
		}
		defer unix.Close(fd)
		return readAll(fd, fmt.Sprintf("openat(%d, %s)", dir, args[1]))
	case "mount":
		return mountAt(args[0])
	case "termios":
		fd, what, err := fdArg(args[0])
		if err != nil {
			return "", err
		}
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
			return "", fmt.Errorf("ioctl(%s, TCGETS): %w", what, err)
		}
		return what + " is a terminal", nil
	case "noecho":
		fd, what, err := fdArg(args[0])
		if err != nil {
			return "", err
		}
		return noEcho(fd, what)
	case "emit":
		fd, what, err := fdArg(args[0])
		if err != nil {
			return "", err
		}
		if _, err := unix.Write(fd, []byte(OSC52+"\n")); err != nil {
			return "", fmt.Errorf("write(%s): %w", what, err)
		}
		return "wrote the OSC 52 sequence to " + what, nil
	case "ttydaemon":
		// Not os.Executable: Landlock grants no /proc/self/exe.
		self := os.Args[0]
		var std [3]*os.File
		for i, a := range args[1:] {
			fd, err := strconv.Atoi(a)
			if err != nil {
				return "", err
			}
			std[i] = os.NewFile(uintptr(fd), a)
		}
		c := exec.Command(self, "ttyhaunt", args[0])
		c.Stdin, c.Stdout, c.Stderr = std[0], std[1], std[2]
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			return "", err
		}
		return fmt.Sprintf("started pid %d in a new session, holding fds %s", c.Process.Pid, strings.Join(args[1:], ", ")), nil
	case "getlimit", "getprio", "signal0": // reading: does PID exist, what are its limits and nice value
		pid, err := strconv.Atoi(args[0])
		if err != nil {
			return "", err
		}
		switch op {
		case "getlimit":
			var l unix.Rlimit
			if err := unix.Prlimit(pid, unix.RLIMIT_CPU, nil, &l); err != nil {
				return "", fmt.Errorf("prlimit(%d, RLIMIT_CPU) get: %w", pid, err)
			}
			return fmt.Sprintf("read pid %d's RLIMIT_CPU", pid), nil
		case "getprio":
			if _, err := unix.Getpriority(unix.PRIO_PROCESS, pid); err != nil {
				return "", fmt.Errorf("getpriority(PRIO_PROCESS, %d): %w", pid, err)
			}
			return fmt.Sprintf("read pid %d's nice value", pid), nil
		}
		if err := unix.Kill(pid, 0); err != nil {
			return "", fmt.Errorf("kill(%d, 0): %w", pid, err)
		}
		return fmt.Sprintf("pid %d exists and takes signals", pid), nil
	case "prlimit":
		pid, err := strconv.Atoi(args[0])
		if err != nil {
			return "", err
		}
		var old unix.Rlimit
		if err := unix.Prlimit(pid, unix.RLIMIT_CPU, nil, &old); err != nil {
			return "", fmt.Errorf("prlimit(%d, RLIMIT_CPU) get: %w", pid, err)
		}
		l := unix.Rlimit{Cur: 12345, Max: old.Max}
		if err := unix.Prlimit(pid, unix.RLIMIT_CPU, &l, nil); err != nil {
			return "", fmt.Errorf("prlimit(%d, RLIMIT_CPU, 12345) set: %w", pid, err)
		}
		return fmt.Sprintf("set pid %d's RLIMIT_CPU to 12345 s (was %d)", pid, old.Cur), nil
	case "renice":
		pid, err := strconv.Atoi(args[0])
		if err != nil {
			return "", err
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, pid, 19); err != nil {
			return "", fmt.Errorf("setpriority(PRIO_PROCESS, %d, 19): %w", pid, err)
		}
		return fmt.Sprintf("reniced pid %d to 19", pid), nil
	case "renice-user":
		if err := unix.Setpriority(unix.PRIO_USER, 0, 19); err != nil {
			return "", fmt.Errorf("setpriority(PRIO_USER, 0, 19): %w", err)
		}
		return fmt.Sprintf("reniced every process of uid %d to 19", os.Getuid()), nil
	case "prockeys":
		b, err := os.ReadFile("/proc/keys")
		if err != nil {
			return "", err
		}
		for _, line := range strings.Split(string(b), "\n") {
			// ID FLAGS USAGE TIMEOUT PERM UID GID TYPE DESCRIPTION: SUMMARY
			if strings.Contains(line, " "+args[0]+": ") {
				return "/proc/keys lists it: " + oneLine(line), nil
			}
		}
		return "", fmt.Errorf("%s is not among the %d keys /proc/keys shows: %w", args[0], strings.Count(string(b), "\n"), unix.ENOKEY)
	}
	return "", unix.EINVAL
}

// environ looks for NAME=VALUE in its own environment and in every
// /proc/PID/environ it can read.
func environ(name, value string) (string, error) {
	want := name + "=" + value
	for _, kv := range os.Environ() {
		if kv == want {
			return "in its own environment", nil
		}
	}
	// Every pid /proc lists; where it cannot be listed (Landlock grants
	// no read of /proc), the likely ones: the namespace's init, the
	// parent, its own, and the low pids.
	var pids []string
	ents, err := os.ReadDir("/proc")
	listed := "listed"
	if err != nil {
		listed = fmt.Sprintf("not listed (%s), tried", errnoName(err))
		pids = []string{"self", strconv.Itoa(os.Getppid())}
		for i := 1; i <= 64; i++ {
			pids = append(pids, strconv.Itoa(i))
		}
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, e.Name())
		}
	}
	var read, denied []string
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + pid + "/environ")
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				denied = append(denied, pid+":"+errnoName(err))
			}
			continue
		}
		read = append(read, pid)
		for _, kv := range strings.Split(string(b), "\x00") {
			if kv == want {
				return "at /proc/" + pid + "/environ", nil
			}
		}
	}
	return "", fmt.Errorf("%s is not in its own environment nor in the %d readable /proc/PID/environ (/proc %s: pids %v; unreadable: %v): %w",
		name, len(read), listed, read, denied, unix.ENOENT)
}

// readAll reads fd to its end and says how much it read and the sha256 of
// it (so the suite can tell what was read without the bytes themselves).
func readAll(fd int, what string) (string, error) {
	buf := make([]byte, 4096)
	h := sha256.New()
	total := 0
	for {
		n, err := unix.Read(fd, buf)
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		if n == 0 {
			break
		}
		h.Write(buf[:n])
		total += n
	}
	return fmt.Sprintf("%s: read %d bytes, sha256:%x", what, total, h.Sum(nil)), nil
}

// mountAt is the mount at exactly path: its filesystem type, options and
// source.
func mountAt(path string) (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	var found string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || f[4] != path {
			continue
		}
		sep := 6
		for sep < len(f) && f[sep] != "-" {
			sep++
		}
		if sep+2 < len(f) {
			found = fmt.Sprintf("%s: %s %s, options %s", path, f[sep+1], f[sep+2], f[5])
		}
	}
	if found == "" {
		return "", fmt.Errorf("nothing is mounted at %s: %w", path, unix.ENOENT)
	}
	return found, nil
}

// OSC52 sets the clipboard of the terminal that runs it (to "pwned"),
// followed by a colour: the test looks for its raw ESC, or its spelling.
const OSC52 = "\x1b]52;c;cHduZWQ=\x07\x1b[31mred"

// fdArg reads a descriptor number, or /dev/tty (opened read-write).
func fdArg(a string) (int, string, error) {
	if a == "/dev/tty" {
		fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, a, fmt.Errorf("open /dev/tty: %w", err)
		}
		return fd, a, nil
	}
	fd, err := strconv.Atoi(a)
	return fd, "fd " + a, err
}

func noEcho(fd int, what string) (string, error) {
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", fmt.Errorf("ioctl(%s, TCGETS): %w", what, err)
	}
	tio.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, tio); err != nil {
		return "", fmt.Errorf("ioctl(%s, TCSETS, echo off): %w", what, err)
	}
	return "turned echo off on " + what, nil
}

// haunt is the daemon ttydaemon leaves: after the delay, echo off on each
// of fds 0-2 that is a terminal, and the OSC 52 sequence written to each.
func haunt(args []string) {
	ms, _ := strconv.Atoi(args[0])
	time.Sleep(time.Duration(ms) * time.Millisecond)
	for fd := 0; fd <= 2; fd++ {
		noEcho(fd, "")
		unix.Write(fd, []byte("daemon: "+OSC52+"\n"))
	}
}

// noUserNS runs in a user namespace the test created, with
// CAP_SYS_RESOURCE ambient: no user namespace may be created in it (what
// the launcher reads to decide whether to try), and CMD runs with no
// capability.
func noUserNS(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("usage: nouserns CMD ARGS...: %w", unix.EINVAL)
	}
	if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0\n"), 0); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}

func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
		return fmt.Sprintf("E%d", int(errno))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return "ETIMEDOUT"
	}
	return "EUNKNOWN"
}

// aclOtherWrite is system.posix_acl_access for u::rw-,g::r--,o::rw- (struct
// posix_acl_xattr_header and its entries, linux/posix_acl_xattr.h).
func aclOtherWrite() []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)                    // POSIX_ACL_XATTR_VERSION
	for _, e := range [][2]uint16{{0x01, 6}, {0x04, 4}, {0x20, 6}} { // ACL_USER_OBJ, ACL_GROUP_OBJ, ACL_OTHER
		b = binary.LittleEndian.AppendUint16(b, e[0])
		b = binary.LittleEndian.AppendUint16(b, e[1])
		b = binary.LittleEndian.AppendUint32(b, 0xffffffff) // ACL_UNDEFINED_ID
	}
	return b
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
