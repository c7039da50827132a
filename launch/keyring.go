package launch

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// FreshSessionKeyring makes the calling process (and what it execs) join a
// new, empty, anonymous session keyring: the invoker's session keyring —
// tokens a client or an agent put there — is not the server's. Where the
// kernel has no keyrings there is nothing to hide.
func FreshSessionKeyring() error {
	// keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL): x/sys's helper always
	// passes a name, which would join (or create) a named, shared keyring.
	_, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	switch {
	case errno == 0, errors.Is(errno, unix.ENOSYS):
		return nil
	}
	return fmt.Errorf("joining a new session keyring: %w", errno)
}
