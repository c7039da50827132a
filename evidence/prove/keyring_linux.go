package prove

import "golang.org/x/sys/unix"

// addKey puts a user key named name into the session keyring.
func addKey(name string) (int, error) {
	return unix.AddKey("user", name, []byte("planted"), unix.KEY_SPEC_SESSION_KEYRING)
}

// invalidateKey removes the key addKey planted.
func invalidateKey(id int) {
	unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
}
