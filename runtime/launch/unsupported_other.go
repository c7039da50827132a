//go:build !linux

package launch

import (
	"fmt"
	"runtime"
)

// needsLinux is what a Linux-only part of the launcher returns on any other
// system: an UnsupportedError (exit 4 for the commands), never a success.
// what names the part; why, the kernel feature it is built on.
func needsLinux(what, why string) error {
	return &UnsupportedError{fmt.Errorf("%s needs Linux (%s); this is %s: on macOS use the seatbelt backend", what, why, runtime.GOOS)}
}
