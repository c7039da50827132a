package testenv

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// landlockUnavailable says why the kernel's Landlock cannot back the
// launcher, or "" when it can.
func landlockUnavailable() string {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return fmt.Sprintf("the kernel has no Landlock: %v", errno)
	}
	if abi < 3 {
		return fmt.Sprintf("Landlock ABI %d; the launcher needs 3", abi)
	}
	return ""
}
