package launch

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/sys/unix"
)

func memfd(name string, data []byte) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("memfd_create: %w", err)
	}
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
		data = data[n:]
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// PrepareBwrap turns a spec into the bwrap invocation this launcher runs:
//   - every bind of a grant comes by descriptor (--bind-fd/--ro-bind-fd), each
//     source opened below its base without following a symlink, so what was
//     checked is what is mounted;
//   - a read-write bind of the project root gets a fixed top level: the root
//     read-only, each existing entry re-bound (protected ones read-only), so
//     no new top-level name (an absent .git, .vscode, mcpolicy.d...) can be
//     created and none can be renamed (each is a mount point);
//   - the seccomp filter (package seccomp) goes to --seccomp on a memfd;
//   - the passthrough values travel on a memfd to --args, never in argv, and
//     bwrap itself starts with an empty environment (its own process stays
//     inside the sandbox's PID namespace, where /proc/1/environ is readable).
func PrepareBwrap(spec *BwrapSpec, root, home string, environ []string) (*Bwrap, error) {
	p, err := exec.LookPath(BwrapProgram)
	if err != nil {
		return nil, &UnsupportedError{fmt.Errorf("bwrap is not installed (or not in PATH): %v", err)}
	}
	return PrepareBwrapAt(spec, root, home, environ, p)
}

// servedByUs checks that the unix socket fd (O_PATH, opened from host) is
// listened on by this process: a connection through the descriptor
// itself, not the path, which may have changed since, reaches the socket
// bwrap will bind, and the kernel records its listener (SO_PEERCRED on a
// connecting socket: the process that called listen). The proxy drops
// the connection unlogged (egress.Self).
func servedByUs(fd int, host string) error {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: "/proc/self/fd/" + strconv.Itoa(fd)}); err != nil {
		return fmt.Errorf("the socket %s cannot be reached: %v", host, err)
	}
	cred, err := unix.GetsockoptUcred(s, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return fmt.Errorf("the socket %s: SO_PEERCRED: %v", host, err)
	}
	if int(cred.Pid) != os.Getpid() {
		return fmt.Errorf("the socket %s is served by pid %d (uid %d), not by this mcpolicy run: another process put its own socket in its place; refusing to start the server", host, cred.Pid, cred.Uid)
	}
	return nil
}
