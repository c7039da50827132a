//go:build !linux

package launch

import (
	"net"
	"os"
	"syscall"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// PrepareBwrap: bwrap is Linux's (mount and user namespaces); see
// bwrap_linux.go.
func PrepareBwrap(spec *BwrapSpec, root, home string, environ []string) (*Bwrap, error) {
	return nil, needsLinux(artefact.BwrapProgram, "mount and user namespaces")
}

// memfd: bwrap reads its arguments and seccomp filter from memfds
// (PrepareBwrapAt); see bwrap_linux.go.
func memfd(name string, data []byte) (int, error) {
	return -1, needsLinux(artefact.BwrapProgram, "memfd_create, mount namespaces")
}

// DialDescriptor: see bwrap_linux.go.
func DialDescriptor(fd int) (net.Conn, error) {
	return nil, needsLinux(artefact.BwrapProgram, "/proc/self/fd")
}

// GiveStdio: see bwrap_linux.go.
func GiveStdio(uid int, files ...*os.File) error { return nil }

// reachableAs: see bwrap_linux.go.
func reachableAs(c *syscall.Credential, paths []string) error { return nil }

// Reaches: see bwrap_linux.go.
func Reaches(c *syscall.Credential, path string) error { return nil }
