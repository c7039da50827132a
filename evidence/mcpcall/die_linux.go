package mcpcall

import (
	"os/exec"
	"syscall"
)

// dieWithCaller has the kernel kill the server when this process dies,
// however it dies (SIGKILL, out of memory): it must not outlive its caller.
func dieWithCaller(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
