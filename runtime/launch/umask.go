package launch

import (
	"fmt"
	"syscall"
)

// serverUmask adds group and other write (022) to this process's umask,
// which bwrap and the server inherit: under a client's umask 0, a server's
// mkdir -m 777 and open(O_CREAT, 0666) made folders and files in its
// read-write grants that every local user could write. The seccomp filter
// keeps the server from lowering it (umask without 022 is not run). A
// stricter umask (077) stays as it is. docker starts the container's
// process with runc's 022 whatever the client's; podman with
// containers.conf's, so the launcher passes it engineUmask.
func serverUmask() {
	syscall.Umask(syscall.Umask(0o022) | 0o022)
}

// engineUmask is podman's --umask value: this process's umask with 022
// added, as serverUmask makes it. The umask is read by setting it; 077
// meanwhile is the strictest, should anything be created then.
func engineUmask() string {
	old := syscall.Umask(0o077)
	syscall.Umask(old)
	return fmt.Sprintf("%04o", old|0o022)
}
