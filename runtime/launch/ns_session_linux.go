package launch

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// What the server must not inherit from the invoker's session (issue #14):
// a controlling terminal (TIOCSTI pushes input into it: a command into the
// user's shell) and the session keyring (keys the invoker's tools keep
// there). Both are per-session state no Landlock right covers.

// newSessionKeyring replaces this thread's session keyring with a new,
// empty, anonymous one (keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)); what
// runs next inherits it, and possesses nothing of the invoker's. It fails
// closed, except where keyctl is unavailable to the server as well: a
// kernel without keys (ENOSYS) or a filter refusing every keyctl (EPERM,
// as Docker's default seccomp profile does), which the server inherits.
func newSessionKeyring() (string, error) {
	_, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	switch errno {
	case 0:
		return "a new, empty anonymous session keyring", nil
	case unix.ENOSYS:
		return "none (this kernel has no keyrings)", nil
	case unix.EPERM, unix.EACCES:
		spec := unix.KEY_SPEC_SESSION_KEYRING
		_, _, e2 := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(spec), 0)
		if e2 == unix.EPERM || e2 == unix.EACCES || e2 == unix.ENOSYS {
			return fmt.Sprintf("keyctl refused here (%v), and so for the server: it reaches no keyring", errno), nil
		}
		return "", fmt.Errorf("joining a new session keyring: %w (the invoker's stays readable by the server: refusing to start)", errno)
	}
	return "", fmt.Errorf("joining a new session keyring: %w (the invoker's would stay readable by the server: refusing to start)", errno)
}

// detachTerminal puts this process in a new session, without a
// controlling terminal. It reports false when setsid is refused because
// the process already leads its process group (a shell's job, or a session
// leader): the server must then be forked into a new session.
func detachTerminal() (bool, error) {
	if _, err := unix.Setsid(); err != nil {
		if errors.Is(err, unix.EPERM) {
			return false, nil
		}
		return false, fmt.Errorf("setsid: %w", err)
	}
	return true, nil
}

// forwarded are the signals the launcher passes on to the server.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// forkServer starts the server from this (locked, confined) thread — the
// child inherits its credentials, no_new_privs, Landlock domain and
// session keyring — in a new session, and waits for it: signals are
// forwarded, and the exit status is returned (128+N for signal N). Only
// the launcher without namespaces forks and waits so, when it leads its
// process group (setsid is refused); stage 2 starts the server with
// startServer from a thread of its own and waits with waitServer.
func forkServer(path string, argv, env []string) (int, error) {
	// The launcher stays, and the server shares this thread's Landlock
	// domain: undumpable, no ptrace reaches it (its other threads keep the
	// invoker's session keyring) without CAP_SYS_PTRACE, filter or not.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	pid, err := startServer(path, argv, env, true)
	if err != nil {
		return 0, err
	}
	return waitServer(pid, sigs, false)
}

// startServer forks and execs the server from this thread, in a new
// session, and returns its pid. With dieWithThread, the kernel kills it
// when this thread ends (Pdeathsig): for a launcher that waits on the
// thread it forked from, not for stage 2, whose forking thread ends at
// once (the namespace's end is the server's end there).
func startServer(path string, argv, env []string, dieWithThread bool) (int, error) {
	attr := &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{Setsid: true}}
	if dieWithThread {
		attr.Sys.Pdeathsig = syscall.SIGKILL
	}
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		return 0, fmt.Errorf("exec %s: %w", path, err)
	}
	return pid, nil
}

// waitServer forwards sigs to the server until it exits and returns its
// status (128+N for signal N). asInit: this is the init of the server's
// PID namespace (stage 2), which also reaps every orphan reparented to it;
// its own end, once the server's status is in (or by its Pdeathsig when
// stage 1 dies), ends every process left in the namespace.
func waitServer(pid int, sigs chan os.Signal, asInit bool) (int, error) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-sigs:
				syscall.Kill(pid, s.(syscall.Signal))
			case <-done:
				return
			}
		}
	}()
	wait := pid
	if asInit {
		wait = -1 // orphans too
	}
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(wait, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("waiting for the server: %w", err)
		}
		if got != pid {
			continue // an orphan of the server's, reaped
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ws.ExitStatus(), nil
	}
}

// groupsSummary says what became of the supplementary groups.
func groupsSummary(dropped, namespaces bool) string {
	if dropped {
		return "dropped (setgroups)"
	}
	gs, err := unix.Getgroups()
	switch {
	case err != nil:
		return fmt.Sprintf("unknown (%v)", err)
	case len(gs) == 0:
		return "none"
	case namespaces:
		return fmt.Sprintf("%d kept, unmapped (an unprivileged user namespace denies setgroups): harmless with the minimal root, which holds none of the host's group-owned sockets or files outside the grants", len(gs))
	}
	return fmt.Sprintf("%d kept (the invoking user's)", len(gs))
}
