package launch

import "syscall"

// serverUmask adds group and other write (022) to this process's umask,
// which bwrap and the server inherit: under a client's umask 0, a server's
// mkdir -m 777 and open(O_CREAT, 0666) made folders and files in its
// read-write grants that every local user could write. The seccomp filter
// keeps the server from lowering it (umask without 022 is not run). A
// stricter umask (077) stays as it is. docker and podman start the
// container's process with umask 022 whatever the client's.
func serverUmask() {
	syscall.Umask(syscall.Umask(0o022) | 0o022)
}
