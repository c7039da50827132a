package launch

import (
	"errors"
	"strings"
)

// RefusalFix is what would let a refused launch start, for its record in
// the launch log: the message's own hint where it has one, else the way
// out its kind has.
func RefusalFix(err error) string {
	msg := err.Error()
	if _, hint, ok := strings.Cut(msg, "hint: "); ok {
		return strings.TrimSpace(hint)
	}
	var te *TamperError
	var ue *UnsupportedError
	switch {
	case errors.As(err, &te):
		return "what the entry pins is not what is on disk: if the change is yours, review it, then `mcpolicy build` and `mcpolicy client TARGET --write` pin the new bytes; if not, find who changed it"
	case errors.As(err, &ue):
		return "this machine cannot enforce the plan on this backend: `mcpolicy doctor` says what is missing; or start the server on another of its backends (`mcpolicy client TARGET --backend B --write`)"
	case IsMissing(err):
		return "a granted path is missing on this machine: create it, or remove the grant and `mcpolicy build`"
	}
	return "`mcpolicy doctor --server SERVER` explains it"
}
