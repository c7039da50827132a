package supervise

import (
	"context"

	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// runners start a sandbox supervised, by the kind its backend's artefacts
// run in (an engine by its own program). Landlock has none: mcpolicy exec
// and mcpolicy-launch start it, and it cannot hold a forwarder to a proxy;
// a cluster runs its manifest itself.
var runners = map[artefact.Sandbox]func(s *session, ctx context.Context) (int, error){
	artefact.Bwrap:    (*session).bwrap,
	artefact.Engine:   (*session).container,
	artefact.Seatbelt: (*session).seatbelt,
}

// Backends are those Run starts, in the registry's order.
func Backends() []emit.Backend {
	var out []emit.Backend
	for _, b := range registry.All() {
		if runners[b.Runtime().Sandbox] != nil {
			out = append(out, b)
		}
	}
	return out
}
