//go:build !linux

package probe

import "errors"

// errKeyring is what the keyring op answers off Linux: there is no
// session keyring (keyctl) to look in.
var errKeyring = errors.New("the keyring op needs Linux (keyctl session keyrings); on macOS the seatbelt backend has no kernel keyring to probe")

func keyring(string) error { return errKeyring }
