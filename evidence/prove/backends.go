package prove

import (
	"context"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// probeRunTimeout bounds one backend's probe run (an engine's start
// included).
const probeRunTimeout = 2 * time.Minute

// prover is how prove runs the probe in one kind of sandbox.
type prover struct {
	// hostView: the sandbox shows the host's own paths (Landlock remaps
	// nothing), so attempts are made, and reported, at their host paths.
	hostView bool
	// standIn: the probe comes in a stand-in image (engines).
	standIn bool
	// run makes the attempts under the named backend: the tool's version,
	// the results, and how the probe was run.
	run func(ctx context.Context, s *session, backend string, p *compiler.Plan, m compiler.Machine, as []attempt, o Options) (string, []probe.Result, string, error)
}

// provers, by the kind of sandbox a backend's artefacts run in. Seatbelt
// is macOS's, and a cluster runs a manifest: nothing to prove here.
var provers = map[artefact.Sandbox]prover{
	artefact.Bwrap: {run: func(ctx context.Context, _ *session, backend string, p *compiler.Plan, m compiler.Machine, as []attempt, o Options) (string, []probe.Result, string, error) {
		return runBwrap(ctx, backend, p, m, as, o)
	}},
	artefact.Landlock: {hostView: true, run: func(ctx context.Context, _ *session, _ string, p *compiler.Plan, _ compiler.Machine, as []attempt, o Options) (string, []probe.Result, string, error) {
		return runLandlock(ctx, p, as, o)
	}},
	artefact.Engine: {standIn: true, run: runEngine},
}

// Backends prove knows, in report order (the registry's).
var Backends = known()

func known() []string {
	var out []string
	for _, b := range registry.All() {
		if _, ok := provers[b.Runtime().Sandbox]; ok {
			out = append(out, b.Name())
		}
	}
	return out
}

// runtimeOf is what the named backend runs in (a cluster, which nothing
// here proves, for an unknown name).
func runtimeOf(name string) artefact.Runtime {
	b, err := registry.Lookup(name)
	if err != nil {
		return artefact.Runtime{Sandbox: artefact.Cluster}
	}
	return b.Runtime()
}

// kind is the provers' key for a backend name.
func kind(name string) artefact.Sandbox { return runtimeOf(name).Sandbox }

// builtFor reports whether the server's artefacts include those backend
// runs (podman runs the docker artefact).
func builtFor(p *compiler.Plan, backend string) bool {
	b, err := registry.Lookup(backend)
	return err == nil && emit.BuiltFor(p, b)
}
