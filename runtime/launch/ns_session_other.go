//go:build !linux

package launch

// newSessionKeyring: session keyrings (keyctl) are Linux's; what needs a
// fresh one (bwrap, the Landlock launcher) runs on Linux only. See
// ns_session_linux.go.
func newSessionKeyring() (string, error) {
	return "", needsLinux("joining a new session keyring", "keyctl")
}
