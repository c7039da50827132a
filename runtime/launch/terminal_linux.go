package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpolicy/mcpolicy/internal/printable"
	"golang.org/x/sys/unix"
)

// ShieldTerminals leaves the server no terminal among its standard
// descriptors. A client started in a terminal often hands a server that
// terminal as stderr (the TypeScript SDK's default is "inherit"), open
// read-write: the new session takes away the controlling terminal, not the
// descriptor, so the server could read what the user types to the client,
// turn echo off, and write escape sequences (OSC 52 sets the clipboard).
// Each of fds 0, 1 and 2 that is a terminal is replaced by a pipe, and a
// relay process — this binary again, outside every sandbox — copies
// between the pipe and the terminal: the server's output with every
// control character but tab and newline escaped (package printable), the
// user's input as typed. The relay ends when the pipe's other side is
// closed by everyone holding it. Idempotent: a pipe is no terminal.
func ShieldTerminals(verbose io.Writer) error {
	for fd, name := range []string{"stdin", "stdout", "stderr"} {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
			continue
		}
		if err := relayTerminal(fd); err != nil {
			return fmt.Errorf("relaying the terminal on %s: %w", name, err)
		}
		say(verbose, "mcpolicy: %s is a terminal: the server gets a pipe to it, relayed (its output with control characters escaped)", name)
	}
	return nil
}

// RelayArg is argv[1] of the launcher re-executed as a terminal relay
// (ShieldTerminals); argv[2] is "in" or "out".
const RelayArg = "__mcpolicy-terminal-relay"

func relayTerminal(fd int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	dir, mine, theirs := "out", p[0], p[1]
	if fd == 0 {
		dir, mine, theirs = "in", p[1], p[0]
	}
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(null)
	// The relay's life is this process's (or what it execs: bwrap, the
	// server in place), not the pipe's: a daemon the server left behind
	// (Landlock alone has no PID namespace) may hold the pipe for ever.
	launcher, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(launcher)
	// The terminal's descriptor as it is: an *os.File's Fd() would make
	// the client's file description blocking.
	pid, err := syscall.ForkExec(self, []string{self, RelayArg, dir}, &syscall.ProcAttr{
		Env: []string{}, Files: []uintptr{uintptr(null), uintptr(null), uintptr(null), uintptr(fd), uintptr(mine), uintptr(launcher)}})
	if err != nil {
		return err
	}
	go func() { // reaped while this process lives; after an exec, by whoever it becomes
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	}()
	return unix.Dup3(theirs, fd, 0)
}

// Relay is the relay's main (argv[1] RelayArg): it copies between the
// terminal (fd 3) and the pipe (fd 4) until the pipe's other side is
// closed or the launcher (pidfd, fd 5) has exited, whichever is first.
// Interrupts are the server's and the launcher's to take: the relay
// ignores them.
func Relay(dir string) {
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGPIPE)
	var err error
	if dir == "in" {
		err = relayIn()
	} else {
		err = relayOut()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		os.Exit(1)
	}
	os.Exit(0)
}

// The relay's descriptors.
const (
	ttyFd      = 3 // the terminal: used raw, never through an *os.File, whose Fd() would change the shared file description's blocking mode
	pipeFd     = 4
	launcherFd = 5 // a pidfd: readable once the launcher has exited
)

// relayOut writes what the server wrote, line by line (a line longer than
// 4 KiB in pieces), each character a terminal would act on escaped. Once
// the launcher has exited it writes what the pipe already holds and ends.
func relayOut() error {
	buf := make([]byte, 4096)
	var pending []byte
	fds := []unix.PollFd{{Fd: pipeFd, Events: unix.POLLIN}, {Fd: launcherFd, Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		if fds[0].Revents != 0 {
			n, err := unix.Read(pipeFd, buf)
			if n > 0 {
				if pending, err = writeLines(append(pending, buf[:n]...)); err != nil {
					return err
				}
				continue
			}
			if err == nil || !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) { // the end of the pipe
				return flush(pending)
			}
		}
		if fds[1].Revents != 0 { // the launcher is gone: what is there, then stop
			unix.SetNonblock(pipeFd, true)
			for {
				n, _ := unix.Read(pipeFd, buf)
				if n <= 0 {
					return flush(pending)
				}
				var err error
				if pending, err = writeLines(append(pending, buf[:n]...)); err != nil {
					return err
				}
			}
		}
	}
}

// writeLines writes b's complete lines, spelt, and returns the rest (all
// of it written, as a piece, when it reaches 4 KiB without a newline).
func writeLines(b []byte) ([]byte, error) {
	for {
		i := bytesIndexNL(b)
		if i < 0 {
			if len(b) >= 4096 {
				return nil, writeAll(ttyFd, []byte(printable.Text(string(b))))
			}
			return b, nil
		}
		if err := writeAll(ttyFd, []byte(printable.Text(string(b[:i]))+"\n")); err != nil {
			return nil, err
		}
		b = b[i+1:]
	}
}

func flush(pending []byte) error {
	if len(pending) == 0 {
		return nil
	}
	return writeAll(ttyFd, []byte(printable.Text(string(pending))))
}

func bytesIndexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// relayIn passes on what the user types, until the server's side of the
// pipe is closed (poll reports POLLERR on the write end) or the launcher
// has exited: it must not read a keystroke after that, which would be the
// user's next command's.
func relayIn() error {
	buf := make([]byte, 4096)
	fds := []unix.PollFd{{Fd: ttyFd, Events: unix.POLLIN}, {Fd: pipeFd}, {Fd: launcherFd, Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err
		}
		if fds[1].Revents&(unix.POLLERR|unix.POLLHUP) != 0 || fds[2].Revents != 0 {
			return nil
		}
		if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) == 0 {
			continue
		}
		n, err := unix.Read(ttyFd, buf)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) { // a terminal opened non-blocking
			continue
		}
		if n <= 0 || err != nil { // end of input (^D), or the terminal went away
			return nil
		}
		if _, err := unix.Write(pipeFd, buf[:n]); err != nil {
			return err
		}
	}
}

// writeAll writes b to a terminal that may have been opened non-blocking
// (a full output buffer answers EAGAIN: wait until it drains).
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		switch {
		case errors.Is(err, unix.EAGAIN):
			unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, -1)
			continue
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		}
		b = b[n:]
	}
	return nil
}
