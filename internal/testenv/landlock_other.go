//go:build !linux

package testenv

import "runtime"

// landlockUnavailable: Landlock is Linux's.
func landlockUnavailable() string {
	return "Landlock needs Linux; this is " + runtime.GOOS
}
