package kubernetes

import (
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

// What a Pod makes of a plan, as mcpolicy why explains it (emit.View).

func (backend) PathModel() emit.PathModel { return emit.MountsAtTargets }

// Baseline: none of the host's; the image brings its own.
func (backend) Baseline(*compiler.Plan) []emit.Seen { return nil }

// Root: the container's, the image's own.
func (backend) Root(*compiler.Plan) emit.Root { return emit.ImageRoot("readOnlyRootFilesystem") }

func (backend) ScratchMount() emit.ScratchMount { return emit.ScratchMount{AtTarget: true} }

func (backend) ServerEnv(p *compiler.Plan) emit.ServerEnv {
	return emit.ServerEnv{Set: emit.PolicyVariables(p, emit.ProxyVariables(p)), Cleared: "the Pod's env names only the grants, each a secretKeyRef or configMapKeyRef"}
}

func (backend) Egress(p *compiler.Plan) emit.Egress { return emit.LoopbackOnly(p) }

// Proc: the container runtime's procfs of the Pod's own PID namespace
// (hostPID and shareProcessNamespace false), every container's, with the
// runtime's default masked paths (procMount Default).
func (backend) Proc(*compiler.Plan) emit.ProcFS {
	return emit.ProcFS{Own: true, Masked: []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats"},
		How: "the container runtime's procfs of the Pod's own PID namespace (hostPID false), every container's; its default masked paths show nothing"}
}
