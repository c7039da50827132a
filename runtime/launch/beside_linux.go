package launch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// SignaledError: the sandbox's first process (bwrap, the engine's `run`)
// was killed by Signal. The launcher ends by the same signal, as the
// process it used to exec into would have.
type SignaledError struct{ Signal syscall.Signal }

func (e *SignaledError) Error() string { return fmt.Sprintf("killed by %v", e.Signal) }

// besideSignals are passed on to the child: what a client or a terminal
// sends the launcher is meant for the sandbox it starts.
var besideSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// runBeside starts cmd as this launcher's child in place of an exec: stdin
// and stdout are the launcher's own descriptors, passed on as they are
// (the MCP stream is never copied), unless the plan has a tools section:
// then they are relay's pipes, and the relay runs between them and the
// launcher's own until the child ends; stderr is a pipe teed to the
// launcher's stderr and into log's tail; the child dies with the launcher
// (Pdeathsig) and gets the signals the launcher gets. It returns the
// child's exit code, or a SignaledError, and logs the end. The calling
// goroutine must be locked to its thread (Pdeathsig is the forking
// thread's) and stays so.
func runBeside(cmd *exec.Cmd, log *launchlog.Launch, uid int, relay *ToolRelay) (int, error) {
	if log == nil {
		log = &launchlog.Launch{}
	}
	tee, err := launchlog.NewTee(os.Stderr, &log.Stderr)
	if err != nil {
		relay.Close()
		return 0, err
	}
	in, out := relay.Stdio(os.Stdin, os.Stdout)
	if uid != os.Geteuid() {
		// The server reopens its stdio through /proc/self/fd, which
		// checks the pipe's owner (GiveStdio): the new pipe is its too.
		if err := GiveStdio(uid, in, out, tee.W); err != nil {
			tee.Finish()
			relay.Close()
			return 0, err
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, tee.W
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, besideSignals...) // from before the start: none is lost
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		tee.Finish()
		relay.Close()
		return 0, err
	}
	tee.Started()
	relay.Start(os.Stdin, os.Stdout)
	// What the child holds (bind sources, memfds) this process needs no
	// more.
	for _, f := range cmd.ExtraFiles {
		if f != nil {
			f.Close()
		}
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	relay.Wait()
	tee.Finish()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			log.Ended(0, unix.SignalName(ws.Signal()))
			return 0, &SignaledError{ws.Signal()}
		}
		log.Ended(ee.ExitCode(), "")
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, err
	}
	log.Ended(0, "")
	return 0, nil
}

// Reraise ends this process by sig, its default action restored; it
// returns only if sig does not end a process.
func Reraise(sig syscall.Signal) {
	signal.Reset(sig)
	syscall.Kill(os.Getpid(), sig)
}

// Beside runs bwrap as the launcher's child (runBeside), in a new, empty
// session keyring joined on this thread, which forks it; relay (nil:
// none) on its stdio.
func (b *Bwrap) Beside(log *launchlog.Launch, relay *ToolRelay) (int, error) {
	runtime.LockOSThread() // never unlocked: the keyring, and Pdeathsig, are this thread's
	cmd, err := b.Command()
	if err != nil {
		relay.Close()
		return 0, err
	}
	uid := os.Geteuid()
	if c := b.Credential(); c != nil {
		uid = int(c.Uid)
	}
	return runBeside(cmd, log, uid, relay)
}

// engineBeside runs the engine with args as the launcher's child, in the
// launcher's environment, relay (nil: none) on its stdio. The seccomp profile's descriptor, which the
// arguments name as /proc/self/fd/N, is not close-on-exec: the child has
// it at the same number.
func engineBeside(engine string, args, environ []string, log *launchlog.Launch, relay *ToolRelay) (int, error) {
	p, err := exec.LookPath(engine)
	if err != nil {
		relay.Close()
		return 0, &UnsupportedError{fmt.Errorf("%s is not installed (or not in PATH): %v", engine, err)}
	}
	runtime.LockOSThread()
	cmd := exec.Command(p, args...)
	cmd.Args[0] = p
	cmd.Env = environ
	return runBeside(cmd, log, os.Geteuid(), relay)
}
