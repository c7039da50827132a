//go:build !linux

package supervise

import (
	"fmt"
	"runtime"

	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// CheckStatic: the executable is bound into bwrap and container sandboxes
// (the egress forwarder, the mount verifier), which are Linux's, and one
// built for this system cannot run in them, static or not. Seatbelt binds
// nothing: its callers do not ask.
func CheckStatic(path string) error {
	return &launch.UnsupportedError{Err: fmt.Errorf("%s is a %s executable: the egress forwarder and the mount verifier run inside bwrap and container sandboxes, which need Linux (mount namespaces); on macOS use the seatbelt backend", path, runtime.GOOS)}
}
