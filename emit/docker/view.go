package docker

import (
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

// What a container engine makes of a plan, as mcpolicy why explains it
// (emit.View): docker and podman alike.

func (engine) PathModel() emit.PathModel { return emit.MountsAtTargets }

// Baseline: none of the host's; the image brings its own.
func (engine) Baseline(*compiler.Plan) []emit.Seen { return nil }

func (engine) Root(*compiler.Plan) emit.Root { return emit.ImageRoot("--read-only") }

// ScratchMount: --tmpfs with noexec.
func (engine) ScratchMount() emit.ScratchMount {
	return emit.ScratchMount{AtTarget: true, NoExec: true}
}

func (engine) ServerEnv(p *compiler.Plan) emit.ServerEnv {
	return emit.ServerEnv{Set: emit.PolicyVariables(p, emit.ProxyVariables(p)), Cleared: "only -e NAME passes a variable"}
}

func (engine) Egress(p *compiler.Plan) emit.Egress { return emit.LoopbackOnly(p) }
