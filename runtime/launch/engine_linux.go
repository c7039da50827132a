package launch

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/mcpolicy/mcpolicy/runtime/seccomp"
	"golang.org/x/sys/unix"
)

// VerifyMounts runs inside the container as its first process: each
// expected "target=dev:ino" must be what is mounted at target (a source
// swapped for a symlink between the launcher's check and the engine's
// mount shows another inode), then argv is exec'd. It returns only on
// failure; a mismatch is a TamperError.
func VerifyMounts(args []string) error {
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 0 || sep == len(args)-1 {
		return fmt.Errorf("usage: %s TARGET=DEV:INO [TARGET=DEV:INO ...] -- COMMAND [ARG ...]", VerifyMountsArg)
	}
	for _, x := range args[:sep] {
		eq := strings.LastIndex(x, "=") // a target may hold "=", dev:ino never does
		if eq < 0 {
			return fmt.Errorf("bad expectation %q", x)
		}
		target, want := x[:eq], x[eq+1:]
		got, err := mountRootID(target)
		if err != nil {
			return tampered("mount %s: %v: a path on the way was swapped while the engine mounted it; refusing to start", target, err)
		}
		if got != want {
			return tampered("%s is not what the launcher checked (device:inode %s, want %s): a source was swapped while the engine mounted it; refusing to start", target, got, want)
		}
	}
	argv := args[sep+1:]
	p, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return fmt.Errorf("exec %s: %w", p, unix.Exec(p, argv, os.Environ()))
}

// mountRootID is "dev:ino" of target, which must be reached with no
// symlink on the way and be the root of a mount: a folder swapped for a
// link while the engine resolved the target, and swapped back, leaves the
// mount elsewhere and a plain folder (the very one the launcher opened,
// same inode) at the target.
func mountRootID(target string) (string, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, target, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return "", fmt.Errorf("opening it without following symlinks: %w", err)
	}
	defer unix.Close(fd)
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO, &stx); err != nil {
		return "", err
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return "", fmt.Errorf("this kernel does not say whether a path is a mount (statx STATX_ATTR_MOUNT_ROOT, Linux 5.8)")
	}
	if stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return "", fmt.Errorf("not a mount point")
	}
	return fmt.Sprintf("%d:%d", unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino), nil
}

// EngineSeccomp is the engines' seccomp profile (seccomp.EngineProfile) in
// a memfd, for Engine.Seccomp: the engine's client reads it from
// /proc/self/fd/N when it parses its arguments, so no file a server could
// reach holds it. The descriptor is not close-on-exec: the engine must
// inherit it.
func EngineSeccomp() (*os.File, error) {
	fd, err := memfd("mcpolicy-engine-seccomp", seccomp.EngineProfile())
	if err != nil {
		return nil, err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "mcpolicy-engine-seccomp"), nil
}
