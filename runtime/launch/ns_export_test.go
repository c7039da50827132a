//go:build linux

package launch

// SetUnhardened makes Start run the wiring before issue #14 (no minimal
// root, no PID namespace, no new session or session keyring): the control
// runs of the tests, which must reach what the hardened launcher hides.
func SetUnhardened(b bool) { testUnhardened = b }
