package launch

// FreshSessionKeyring makes the calling process (and what it execs) join a
// new, empty, anonymous session keyring: the invoker's session keyring —
// tokens a client or an agent put there — is not the server's. It fails
// closed but where keyctl is unavailable here and so to the server too
// (see newSessionKeyring).
func FreshSessionKeyring() error {
	_, err := newSessionKeyring()
	return err
}
