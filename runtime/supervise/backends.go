package supervise

import (
	"context"

	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/backends"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/seatbelt"
)

// runners start a sandbox supervised, by the backend whose artefacts it
// runs (an engine by its own name). Landlock has none: mcpolicy exec and
// mcpolicy-launch start it, and it cannot hold a forwarder to a proxy.
var runners = map[string]func(s *session, ctx context.Context, b emit.Backend) (int, error){
	bwrap.Backend:    func(s *session, ctx context.Context, _ emit.Backend) (int, error) { return s.bwrap(ctx) },
	docker.Backend:   func(s *session, ctx context.Context, b emit.Backend) (int, error) { return s.container(ctx, b.Name()) },
	seatbelt.Backend: func(s *session, ctx context.Context, _ emit.Backend) (int, error) { return s.seatbelt(ctx) },
}

// Backends are those Run starts, in the registry's order.
func Backends() []emit.Backend {
	var out []emit.Backend
	for _, b := range backends.All() {
		if runners[b.Builds()] != nil {
			out = append(out, b)
		}
	}
	return out
}
