//go:build !linux

package launch

import "os"

// VerifyMounts runs inside a Linux container, as its first process: it
// checks each mount with openat2 and statx (engine_linux.go).
func VerifyMounts(args []string) error {
	return needsLinux("checking the container's mounts", "openat2, statx STATX_ATTR_MOUNT_ROOT")
}

// EngineSeccomp: see engine_linux.go.
func EngineSeccomp() (*os.File, error) {
	return nil, needsLinux("the engines' seccomp profile", "memfd_create")
}
