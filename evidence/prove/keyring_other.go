//go:build !linux

package prove

import "errors"

// addKey: session keyrings (keyctl) are Linux's. The caller reads the
// error as "no keyrings here: nothing to leak" and plants nothing.
func addKey(string) (int, error) {
	return 0, errors.New("no session keyrings: they need Linux (keyctl)")
}

// invalidateKey is never reached: addKey planted nothing.
func invalidateKey(int) {}
