//go:build linux

package launch

import (
	"errors"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNewSessionKeyring: after newSessionKeyring a key of the session
// keyring this thread had is neither found in the session keyring nor
// readable by its id (it is no longer possessed), and the new keyring is
// empty. (The launcher's seccomp filter also refuses keyctl; this checks
// the session change alone.)
func TestNewSessionKeyring(t *testing.T) {
	type result struct {
		says           string
		search, read   error
		before, joined error
	}
	done := make(chan result)
	go func() {
		// Credentials are per thread: this one is left locked, so it ends
		// with the goroutine and the test's other threads keep theirs.
		runtime.LockOSThread()
		var r result
		if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 {
			r.before = e
			done <- r
			return
		}
		id, err := unix.AddKey("user", "mcpolicy-keyring-test", []byte("planted"), unix.KEY_SPEC_SESSION_KEYRING)
		if err != nil {
			r.before = err
			done <- r
			return
		}
		if _, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, make([]byte, 64), 0); err != nil {
			r.before = err // possessed, it must read
			done <- r
			return
		}
		r.says, r.joined = newSessionKeyring()
		_, r.search = unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", "mcpolicy-keyring-test", 0)
		_, r.read = unix.KeyctlBuffer(unix.KEYCTL_READ, id, make([]byte, 64), 0)
		done <- r
	}()
	r := <-done
	if errors.Is(r.before, unix.ENOSYS) {
		t.Skip("no keyrings in this kernel")
	}
	if r.before != nil {
		t.Fatalf("planting a key: %v", r.before)
	}
	if r.joined != nil || r.says != "a new, empty anonymous session keyring" {
		t.Fatalf("newSessionKeyring: %q, %v", r.says, r.joined)
	}
	if !errors.Is(r.search, unix.ENOKEY) {
		t.Errorf("search of the new session keyring: %v, want ENOKEY", r.search)
	}
	if !errors.Is(r.read, unix.EACCES) && !errors.Is(r.read, unix.ENOKEY) {
		t.Errorf("reading the old session's key: %v, want EACCES (no longer possessed)", r.read)
	}
}
