package doctor

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// tryUserNS starts true(1) the way `mcpolicy exec` starts its stage 2: in
// new user, network and mount namespaces, the invoking user mapped to
// 1000:1000, CAP_SYS_ADMIN kept across exec for the scratch mount.
func tryUserNS(ctx context.Context) error {
	prog := "/usr/bin/true"
	if _, err := os.Stat(prog); err != nil {
		if prog, err = exec.LookPath("true"); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, prog)
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 1000, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 1000, HostID: os.Getgid(), Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return nil
}
