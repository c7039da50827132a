package launch

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"

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

// becomeUser sets the process's credentials to c (groups, then gid, then
// uid: each needs the privilege the next one drops).
func becomeUser(c *syscall.Credential) error {
	groups := make([]int, len(c.Groups))
	for i, g := range c.Groups {
		groups[i] = int(g)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(int(c.Gid), int(c.Gid), int(c.Gid)); err != nil {
		return fmt.Errorf("setresgid %d: %w", c.Gid, err)
	}
	if err := syscall.Setresuid(int(c.Uid), int(c.Uid), int(c.Uid)); err != nil {
		return fmt.Errorf("setresuid %d: %w", c.Uid, err)
	}
	return nil
}

// DialDescriptor connects to the unix socket fd (an O_PATH descriptor)
// through the descriptor itself, not its path, which may have changed
// since: the connection reaches the socket bwrap will bind.
func DialDescriptor(fd int) (net.Conn, error) {
	return net.Dial("unix", "/proc/self/fd/"+strconv.Itoa(fd))
}
