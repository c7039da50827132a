// Package emit holds what every backend emitter shares: the Backend
// interface, the restrictions each answers for, the error for one it
// cannot enforce, and a refusal of unsafe strings. Each backend lives in
// its own subpackage, IR -> bytes (and, where lint reads hand-written
// entries, bytes -> IR); emit/registry lists them.
package emit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/position"
)

// NotEnforceableError says a plan asks for a restriction this backend
// cannot enforce. Emitters return it rather than a silently wider sandbox.
type NotEnforceableError struct {
	Pos         position.Pos // where the policy asks for it
	Field       string       // e.g. servers.s.network
	Server      string
	Backend     string
	Restriction string
	Alternative string
}

func (e *NotEnforceableError) Error() string {
	msg := fmt.Sprintf("server %q: %s is not enforceable by backend %s", e.Server, e.Restriction, e.Backend)
	if e.Field != "" {
		msg = fmt.Sprintf("%s: %s: %s is not enforceable by backend %s", e.Pos, e.Field, e.Restriction, e.Backend)
	}
	if e.Alternative != "" {
		msg += "\n\thint: " + e.Alternative
	}
	return msg
}

// UnsafeStringError refuses a value that could change the structure of the
// emitted artefact (an argument split, a profile string, a JSON line).
type UnsafeStringError struct {
	Server string
	What   string
	Value  string
}

func (e *UnsafeStringError) Error() string {
	return fmt.Sprintf("server %q: %s %q contains a control character (newline, NUL, ...); refusing to emit it", e.Server, e.What, e.Value)
}

// CheckSafe returns an UnsafeStringError when s holds a control character.
func CheckSafe(server, what, s string) error {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return &UnsafeStringError{Server: server, What: what, Value: s}
	}
	return nil
}

// JSONArgs renders an argv as a JSON array, one element per line, without
// HTML escaping, ending in a newline: easy to review and to paste.
func JSONArgs(args []string) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(args); err != nil {
		panic("internal error: encoding args: " + err.Error())
	}
	return []byte(b.String())
}
