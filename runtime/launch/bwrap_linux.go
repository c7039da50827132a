package launch

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
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
	p, err := exec.LookPath(artefact.BwrapProgram)
	if err != nil {
		return nil, &UnsupportedError{fmt.Errorf("bwrap is not installed (or not in PATH): %v", err)}
	}
	return PrepareBwrapAt(spec, root, home, environ, p)
}

// GiveStdio makes each of files that is a pipe or a socket (the server's
// stdio, from a client) uid's, as runc does for a container's: a server
// that a root launcher runs as the plan's user reopens /dev/stdin through
// /proc/self/fd, which checks the pipe's owner (root's: EACCES). Files and
// devices (a log, /dev/null, a terminal) are left as they are.
func GiveStdio(uid int, files ...*os.File) error {
	for _, f := range files {
		if f == nil {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return fmt.Errorf("stdio: %w", err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFIFO, unix.S_IFSOCK:
		default:
			continue
		}
		if int(st.Uid) == uid {
			continue
		}
		if err := unix.Fchown(int(f.Fd()), uid, -1); err != nil {
			return fmt.Errorf("giving the server's stdio (descriptor %d) to uid %d: %w", f.Fd(), uid, err)
		}
	}
	return nil
}

// Reaches reports, as an error naming it, whether c reaches path.
func Reaches(c *syscall.Credential, path string) error { return reachableAs(c, []string{path}) }

// reachableAs opens each path (O_PATH) with c's filesystem ids, on a
// thread locked for the check, and names the first that c cannot reach.
// The thread gets this process's ids back before it is unlocked; it is
// never left to end with its goroutine, since a child forked from it
// earlier (Pdeathsig) would be killed with it.
func reachableAs(c *syscall.Credential, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restore := func() bool {
			unix.Setfsgid(os.Getegid())
			unix.Setfsuid(os.Geteuid())
			uid, _ := unix.SetfsuidRetUid(-1) // -1 changes nothing: the current one
			gid, _ := unix.SetfsgidRetGid(-1)
			return uid == os.Geteuid() && gid == os.Getegid()
		}
		unix.Setfsgid(int(c.Gid))
		unix.Setfsuid(int(c.Uid))
		var err error
		for _, p := range paths {
			fd, oerr := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
			if oerr != nil {
				err = fmt.Errorf("%s: %w\n\thint: the server runs as uid %d on the host (the plan's user: a root launcher starts bwrap as it), which cannot reach it: grant a folder that user can read (not below a mode-0700 folder of another user's), or start the client as that user", p, oerr, c.Uid)
				break
			}
			unix.Close(fd)
		}
		if !restore() {
			done <- errors.New("reachableAs: the thread's filesystem ids could not be restored")
			select {} // the thread stays locked, and alive, forever
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// DialDescriptor connects to the unix socket fd (an O_PATH descriptor)
// through the descriptor itself, not its path, which may have changed
// since: the connection reaches the socket bwrap will bind.
func DialDescriptor(fd int) (net.Conn, error) {
	return net.Dial("unix", "/proc/self/fd/"+strconv.Itoa(fd))
}
