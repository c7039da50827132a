package launch

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// CloseInherited marks every descriptor above 2 close-on-exec: whatever
// the client (or anything before it) left open must not reach the server.
// Descriptors the launcher passes on purpose are opened afterwards and
// made inheritable one by one.
func CloseInherited() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		// Kernels before 5.11: mark them one by one.
		ents, rerr := os.ReadDir("/proc/self/fd")
		if rerr != nil {
			return fmt.Errorf("closing inherited descriptors: %v (and %v)", err, rerr)
		}
		for _, e := range ents {
			var fd int
			if _, serr := fmt.Sscan(e.Name(), &fd); serr == nil && fd > 2 {
				unix.CloseOnExec(fd)
			}
		}
	}
	return nil
}
