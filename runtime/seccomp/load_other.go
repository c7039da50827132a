//go:build !linux

package seccomp

import (
	"fmt"
	"runtime"
)

// Load installs the filter on the calling thread; seccomp exists only on
// Linux.
func Load(o Options) error {
	return fmt.Errorf("seccomp: not available on %s", runtime.GOOS)
}
