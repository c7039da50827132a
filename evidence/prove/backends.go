package prove

import (
	"context"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/backends"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// probeRunTimeout bounds one backend's probe run (an engine's start
// included).
const probeRunTimeout = 2 * time.Minute

// prover is how prove runs the probe under one kind of backend.
type prover struct {
	// hostView: the sandbox shows the host's own paths (Landlock remaps
	// nothing), so attempts are made, and reported, at their host paths.
	hostView bool
	// standIn: the probe comes in a stand-in image (engines).
	standIn bool
	// run makes the attempts: the tool's version, the results, and how
	// the probe was run.
	run func(ctx context.Context, s *session, backend string, p *compiler.Plan, m compiler.Machine, as []attempt, o Options) (string, []probe.Result, string, error)
}

// provers, by the backend whose artefacts each runs (an engine runs
// docker's under its own name). Seatbelt is macOS's: nothing to prove here.
var provers = map[string]prover{
	bwrap.Backend: {run: func(ctx context.Context, _ *session, _ string, p *compiler.Plan, m compiler.Machine, as []attempt, o Options) (string, []probe.Result, string, error) {
		return runBwrap(ctx, p, m, as, o)
	}},
	landlock.Backend: {hostView: true, run: func(ctx context.Context, _ *session, _ string, p *compiler.Plan, _ compiler.Machine, as []attempt, o Options) (string, []probe.Result, string, error) {
		return runLandlock(ctx, p, as, o)
	}},
	docker.Backend: {standIn: true, run: runEngine},
}

// Backends prove knows, in report order (the registry's).
var Backends = known()

func known() []string {
	var out []string
	for _, b := range backends.All() {
		if _, ok := provers[b.Builds()]; ok {
			out = append(out, b.Name())
		}
	}
	return out
}

// kind is the provers' key for a backend name ("" for an unknown one).
func kind(name string) string {
	b, err := backends.Lookup(name)
	if err != nil {
		return ""
	}
	return b.Builds()
}

// builtFor reports whether the server's artefacts include those backend
// runs (podman runs the docker artefact).
func builtFor(p *compiler.Plan, backend string) bool {
	b, err := backends.Lookup(backend)
	return err == nil && emit.BuiltFor(p, b)
}
