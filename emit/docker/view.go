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

// Proc: the engine's procfs of the container's own PID namespace, every
// container's, with the runtime's masked paths (runc's and crun's
// defaults, docker's and podman's alike).
func (engine) Proc(*compiler.Plan) emit.ProcFS {
	return emit.ProcFS{Own: true, Masked: engineMasked,
		How: "the engine's procfs of the container's own PID namespace, every container's; its masked paths show nothing, /proc/sys and /proc/sysrq-trigger are read-only"}
}

// engineMasked are the /proc paths docker and podman both mask by default
// (each masks a few more of its own).
var engineMasked = []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats"}
