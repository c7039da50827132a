package doctor

import (
	"context"

	"github.com/mcpolicy/mcpolicy/emit/backends"
)

// checks are the registry's backends this machine can be checked for, in
// its order: each by the kind of sandbox it runs (an engine by its own
// name). Seatbelt is macOS's: checked there only, where the Linux backends
// are reported as needing Linux (host_other.go).
func (c *Checker) checks() []func(context.Context) Result {
	byKind := map[string]func(name string) func(context.Context) Result{
		Bwrap:    func(string) func(context.Context) Result { return c.Bwrap },
		Landlock: func(string) func(context.Context) Result { return c.Landlock },
		Docker: func(name string) func(context.Context) Result {
			return func(ctx context.Context) Result { return c.Engine(ctx, name) }
		},
	}
	c.host(byKind)
	var out []func(context.Context) Result
	for _, b := range backends.All() {
		if check := byKind[b.Builds()]; check != nil {
			out = append(out, check(b.Name()))
		}
	}
	return out
}
