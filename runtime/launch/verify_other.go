//go:build !linux

package launch

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// CloseInherited marks every descriptor above 2 close-on-exec: whatever
// the client (or anything before it) left open must not reach the server.
// There is no close_range here (macOS): /dev/fd lists this process's
// descriptors, and each is marked one by one, as Linux does on kernels
// before 5.11 (verify_linux.go).
func CloseInherited() error {
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		return fmt.Errorf("closing inherited descriptors: %w", err)
	}
	for _, e := range ents {
		var fd int
		if _, serr := fmt.Sscan(e.Name(), &fd); serr == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
