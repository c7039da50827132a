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
package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
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
	msg, err := run(os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Printf("errno=%s %s\n", errnoName(err), oneLine(err.Error()))
		os.Exit(1)
	}
	fmt.Printf("ok %s\n", oneLine(msg))
}

func run(op string, args []string) (string, error) {
	need := map[string]int{"connect": 1, "dial": 1, "environ": 2, "tiocsti": 1, "keyring": 1, "readfd": 1, "procfd": 1, "openat": 2, "mount": 1, "prockeys": 1}
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

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
