package doctor

import (
	"context"

	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// kindCheck makes the check of one backend whose artefacts run in a kind
// of sandbox.
type kindCheck func(b emit.Backend) func(context.Context) Result

// checks are the registry's backends this machine can be checked for, in
// its order: each by the kind of sandbox it runs in. Seatbelt is macOS's:
// checked there only, where the Linux backends are reported as needing
// Linux (host_other.go).
func (c *Checker) checks() []func(context.Context) Result {
	byKind := map[artefact.Sandbox]kindCheck{
		artefact.Bwrap:    c.check((*Checker).Bwrap),
		artefact.Landlock: c.check((*Checker).Landlock),
		artefact.Engine:   c.check((*Checker).Engine),
	}
	c.host(byKind)
	var out []func(context.Context) Result
	for _, b := range registry.All() {
		if check := byKind[b.Runtime().Sandbox]; check != nil {
			out = append(out, check(b))
		}
	}
	return out
}

// check binds a Checker's method to c and a backend.
func (c *Checker) check(m func(*Checker, context.Context, emit.Backend) Result) kindCheck {
	return func(b emit.Backend) func(context.Context) Result {
		return func(ctx context.Context) Result { return m(c, ctx, b) }
	}
}
