package landlock

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

// What Landlock makes of a plan, as mcpolicy why explains it (emit.View).

// PathModel: Landlock remaps nothing, and a ruleset only adds rights.
func (backend) PathModel() emit.PathModel { return emit.HostPathsRightsAdd }

// Baseline: the runtime baseline's host paths read-only, and the devices.
func (backend) Baseline(p *compiler.Plan) []emit.Seen {
	var seen []emit.Seen
	for _, b := range p.Runtime.ReadOnly {
		seen = append(seen, emit.Seen{At: b, Source: b})
	}
	// The devices the ruleset grants (Build): the launcher's root may hold
	// others, which Landlock then refuses.
	for _, d := range DevicesRW {
		seen = append(seen, emit.Seen{At: d, Source: d, Device: true, Write: true})
	}
	for _, d := range DevicesRO {
		seen = append(seen, emit.Seen{At: d, Source: d, Device: true})
	}
	return seen
}

// Root: the launcher's minimal root, whose folders on the way to a grant
// exist but are not granted.
func (backend) Root(p *compiler.Plan) emit.Root {
	return emit.Root{
		Absent:   "not in the minimal root: no grant or baseline path holds it (ENOENT)",
		OnTheWay: "is in the minimal root on the way to a grant, but not granted: Landlock answers EACCES",
		Besides:  fmt.Sprintf("the runtime baseline %q", p.Runtime.Name),
	}
}

func (backend) ScratchMount() emit.ScratchMount { return emit.ScratchMount{AtTarget: true} }

// ServerEnv: no proxy variables, since Landlock puts no proxy in front
// of the server (an allowlist is refused).
func (backend) ServerEnv(p *compiler.Plan) emit.ServerEnv {
	return emit.ServerEnv{Set: emit.PolicyVariables(p, map[string]string{}), Cleared: "cleared but for the named variables"}
}

func (backend) Egress(p *compiler.Plan) emit.Egress { return emit.LoopbackOnly(p) }

// Proc: the launcher mounts the server's own procfs in the minimal root
// only when the plan says proc (launch's procOptions).
func (backend) Proc(p *compiler.Plan) emit.ProcFS {
	if !p.Proc {
		return emit.ProcFS{OnRequest: true, How: "not in the minimal root: the plan does not say proc; proc: true would mount a procfs of the server's own PID namespace there, read-only (a plan needs user namespaces for it)"}
	}
	return emit.ProcFS{Own: true, PerProcess: true, Ptraceable: true, OnRequest: true,
		HiddenInit: "PID 1 is the launcher, the namespace's init: undumpable and outside the server's Landlock domain, the server may not ptrace it, so /proc/1 is not there",
		How:        "the launcher's procfs of the server's own PID namespace, read-only, subset=pid and hidepid=ptraceable: only its own processes' folders, no host-wide file; Landlock grants read"}
}
