package lint

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/internal/editdist"
)

// Waivable reports whether a `waive:` entry names something a pass
// reports: a lint rule (or a former ID it keeps), or a diff kind. The two
// registries share the namespace.
func Waivable(id string) bool { return Lookup(id) != nil || diff.IsKind(id) }

// unknownWaiver is the message for a waiver of no rule and no kind: it
// names the nearest ID, since a typo is the usual cause.
func unknownWaiver(id string) string {
	best, bestD := "", -1
	consider := func(c string) {
		if d := editdist.Distance(id, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	for _, r := range Registry() {
		consider(r.ID)
		for _, a := range r.Aliases {
			consider(a)
		}
	}
	for _, k := range diff.Kinds {
		consider(k)
	}
	return fmt.Sprintf("waiver names unknown rule %q: did you mean %q? (lint rules: mcpolicy rules; diff kinds: mcpolicy rules --diff)", id, best)
}
