//go:build !linux

package launch

// PrepareBwrap: bwrap is Linux's (mount and user namespaces); see
// bwrap_linux.go.
func PrepareBwrap(spec *BwrapSpec, root, home string, environ []string) (*Bwrap, error) {
	return nil, needsLinux(BwrapProgram, "mount and user namespaces")
}

// memfd: bwrap reads its arguments and seccomp filter from memfds
// (PrepareBwrapAt); see bwrap_linux.go.
func memfd(name string, data []byte) (int, error) {
	return -1, needsLinux(BwrapProgram, "memfd_create, mount namespaces")
}

// servedByUs: see bwrap_linux.go.
func servedByUs(fd int, host string) error {
	return needsLinux(BwrapProgram, "SO_PEERCRED")
}
