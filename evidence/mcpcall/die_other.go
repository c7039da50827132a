//go:build !linux

package mcpcall

import "os/exec"

// dieWithCaller: only Linux has a parent-death signal; elsewhere the
// server is stopped when the call returns, not when this process dies.
func dieWithCaller(cmd *exec.Cmd) {}
