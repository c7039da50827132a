package bwrap

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

// What bwrap makes of a plan, as mcpolicy why explains it (emit.View).

func (backend) PathModel() emit.PathModel { return emit.MountsAtTargets }

// viewDevices are the devices every sandbox sees (--dev), /dev/null
// writable.
var viewDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// Baseline: the runtime baseline's host paths read-only, /usr's folders
// Args links at the root (usrLinks: /bin, /lib...), and the devices.
func (backend) Baseline(p *compiler.Plan) []emit.Seen {
	var seen []emit.Seen
	for _, b := range p.Runtime.ReadOnly {
		seen = append(seen, emit.Seen{At: b, Source: b})
		if b == "/usr" {
			for _, l := range usrLinks {
				seen = append(seen, emit.Seen{At: "/" + l, Source: "/usr/" + l})
			}
		}
	}
	for _, d := range viewDevices {
		seen = append(seen, emit.Seen{At: d, Source: d, Device: true, Write: d == "/dev/null"})
	}
	return seen
}

// Root: an empty tmpfs but for the grants and the baseline.
func (backend) Root(p *compiler.Plan) emit.Root {
	return emit.Root{
		Absent:  "not in the sandbox: " + Backend + "'s root is empty but for the grants and the runtime baseline (ENOENT)",
		Besides: fmt.Sprintf("the runtime baseline %q", p.Runtime.Name),
	}
}

func (backend) ScratchMount() emit.ScratchMount { return emit.ScratchMount{AtTarget: true} }

// ServerEnv: --clearenv, then PATH and HOME by --setenv.
func (backend) ServerEnv(p *compiler.Plan) emit.ServerEnv {
	set := emit.ProxyVariables(p)
	for _, n := range []string{"PATH", "HOME"} {
		set[n] = "set by " + Backend + " (--setenv), not from the host"
	}
	emit.PolicyVariables(p, set)
	return emit.ServerEnv{Set: set, Cleared: "--clearenv"}
}

func (backend) Egress(p *compiler.Plan) emit.Egress { return emit.LoopbackOnly(p) }

// Proc: --proc /proc with --unshare-pid, for every server; Args masks
// /proc/keys and /proc/key-users with /dev/null.
func (backend) Proc(*compiler.Plan) emit.ProcFS {
	return emit.ProcFS{Own: true, Masked: []string{"/proc/keys", "/proc/key-users"},
		How: Backend + "'s --proc: a procfs of the server's own PID namespace (--unshare-pid), every server's; /proc/keys and /proc/key-users masked"}
}
