package seatbelt

import (
	"slices"
	"strconv"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/baseline"
)

// What the seatbelt profile makes of a plan, as mcpolicy why explains it
// (emit.View).

// PathModel: the profile names host paths, and its last matching rule
// (the deepest) wins.
func (backend) PathModel() emit.PathModel { return emit.HostPathsDeepestRule }

// Baseline: the paths the runtime baseline's rules let the server read.
func (backend) Baseline(p *compiler.Plan) []emit.Seen {
	rules, _ := baseline.Seatbelt(p.Runtime.Name)
	var seen []emit.Seen
	for _, r := range rules {
		if !slices.Contains(r.Allow, "file-read*") {
			continue
		}
		for _, s := range append(append([]string{}, r.Subpath...), r.Literal...) {
			seen = append(seen, emit.Seen{At: s, Source: s})
		}
	}
	return seen
}

// Root: the host's, denied by default.
func (backend) Root(*compiler.Plan) emit.Root {
	return emit.Root{Absent: "no grant or baseline rule allows it: the profile denies by default"}
}

// ScratchMount: a private folder (seatbelt-scratch-dir), not a tmpfs at the
// scratch's target.
func (backend) ScratchMount() emit.ScratchMount { return emit.ScratchMount{} }

func (backend) ServerEnv(p *compiler.Plan) emit.ServerEnv {
	set := emit.ProxyVariables(p)
	names, _, _ := fixedEnv(p)
	for _, n := range names {
		if _, ok := set[n]; !ok {
			set[n] = "set by the wrapper (env -i " + n + "=...), not from the host"
		}
	}
	return emit.ServerEnv{Set: emit.PolicyVariables(p, set), Cleared: "the wrapper unsets all but the named"}
}

// Egress: the profile denies the network but for the proxy's port on the
// host's loopback, where mcpolicy run serves it.
// Proc: macOS has none.
func (backend) Proc(*compiler.Plan) emit.ProcFS {
	return emit.ProcFS{How: "macOS has no /proc: a runtime finds its own program and state without it (_NSGetExecutablePath; proc_pidinfo of its own process, which process-info (target same-sandbox) allows)"}
}

func (backend) Egress(p *compiler.Plan) emit.Egress {
	return emit.Egress{
		Direct: "a direct connection (raw TCP, UDP, DNS) is denied: the profile denies network* (with an allowlist, all but the proxy's port on the host's loopback)",
		Proxy:  "the host's 127.0.0.1:" + strconv.Itoa(p.Network.ProxyPort) + ", where mcpolicy run serves it",
	}
}
