//go:build !linux

package supervise

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// withParentDeath: no Pdeathsig here.
func withParentDeath(cmd *exec.Cmd) {}

func terminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), unix.TIOCGETA)
	return err == nil
}

// signalSandboxed: bwrap runs only on Linux.
func signalSandboxed(bwrap *os.Process, sig syscall.Signal, exited <-chan struct{}) {
	bwrap.Signal(sig)
}

// listening: only Linux has the table; sweepStale connects instead.
func listening(path string) (live, known bool) { return false, false }
