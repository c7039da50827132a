package credential

import (
	"errors"
	"fmt"
	"strings"
)

// MaxValue bounds a value read at spawn: a command that floods, or a file
// that is not a token, does not hold the start.
const MaxValue = 16 << 10

// Where a proxy that is given its credentials, rather than reading them
// at spawn (the kubernetes backend's egress-proxy Pod), finds them: one
// folder (a Secret's volume) holding each value under its grant's name,
// its placeholder beside it, and the session CA the sandbox trusts.
const (
	CACertFile = "session-ca.crt"
	CAKeyFile  = "session-ca.key"
)

// PlaceholderFile is the file holding name's placeholder.
func PlaceholderFile(name string) string { return name + ".placeholder" }

// CheckValue refuses a value no header can carry: empty, longer than
// MaxValue, or holding a control character (a line break read from a
// file or a command's output).
func CheckValue(v string) error {
	if v == "" {
		return errors.New("the value is empty")
	}
	if len(v) > MaxValue {
		return fmt.Errorf("the value is %d bytes, more than %d", len(v), MaxValue)
	}
	if i := strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		return fmt.Errorf("the value holds a control character at byte %d (a line break inside it?): a header cannot carry it", i)
	}
	return nil
}

// CheckPair refuses a placeholder that is not one Placeholder could have
// drawn for value: another length or known prefix, holding a control
// character, or equal to the value, or either inside the other (replacing
// it would then also rewrite part of the value, or put the value where
// the placeholder was only a piece).
func CheckPair(value, placeholder string) error {
	if err := CheckValue(placeholder); err != nil {
		return fmt.Errorf("the placeholder: %v", err)
	}
	switch {
	case len(placeholder) != len(value):
		return fmt.Errorf("the placeholder is %d bytes, the value %d: a placeholder has the value's shape", len(placeholder), len(value))
	case strings.Contains(value, placeholder) || strings.Contains(placeholder, value):
		return errors.New("the placeholder is the value")
	}
	for _, p := range knownPrefixes {
		if strings.HasPrefix(value, p) != strings.HasPrefix(placeholder, p) {
			return fmt.Errorf("the value and the placeholder differ in their prefix (%s): a placeholder has the value's shape", p)
		}
	}
	return nil
}
