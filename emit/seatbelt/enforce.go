package seatbelt

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/schema"
)

// AcceptScratchDir accepts an unbounded private folder as scratch.
const AcceptScratchDir = "seatbelt-scratch-dir"

// Enforcement is the seatbelt backend's report for a plan.
func Enforcement(p *compiler.Plan) []emit.Row {
	field := func(f string) string { return schema.FieldPath("servers", p.Server, f) }
	return emit.Report(p, func(r string) emit.Row {
		switch r {
		case "read-only root":
			return emit.Row{Support: emit.Enforced, How: "(deny default); baseline " + p.Runtime.Name + " allows system reads only"}
		case "mounts":
			return emit.Row{Support: emit.Enforced, How: "file-read* / file-write* on (subpath (param ...)) at their host paths (no remapping)"}
		case "fixed top level":
			return emit.Row{Support: emit.Enforced, How: "every protected name in the project is denied by path, present or not: it cannot be created, written or renamed, nor the mount moved aside"}
		case "protected paths":
			return emit.Row{Support: emit.Enforced, How: "(deny file-write* ...) after the grants, each name as a whole, and on the mount and every folder above it (no rename); the last matching rule wins, and absent names cannot be created"}
		case "scratch":
			return emit.Row{Support: emit.Partial, How: "macOS has no tmpfs for a sandbox: a private folder from mktemp -d, its size not bounded",
				Degradation: AcceptScratchDir, Alternative: "drop the scratch and use a read-write mount, or use docker (Docker Desktop) for a bounded tmpfs",
				Pos: p.Scratch.Pos, Field: field("scratch")}
		case "environment":
			return emit.Row{Support: emit.Enforced, How: "the wrapper unsets every variable but PATH, HOME and the named ones"}
		case "capabilities":
			return emit.Row{Support: emit.Enforced, How: "macOS has no capability sets; the wrapper refuses to start as root"}
		case "no new privileges":
			return emit.Row{Support: emit.Enforced, How: "the sandbox is inherited across exec and fork and cannot be left"}
		case "user":
			return emit.Row{Support: emit.Enforced, How: "runs as the invoking user, never root (the wrapper refuses); UID:GID is not remapped"}
		case "network none":
			return emit.Row{Support: emit.Enforced, How: "(deny network*): not even the host's loopback (no bind or listen), which every local service shares"}
		case "egress allowlist":
			return emit.Row{Support: emit.Enforced, How: fmt.Sprintf(`(allow network-outbound (remote tcp "localhost:%d")) to mcpolicy's egress proxy, which checks host:port; start with mcpolicy run`, p.Network.ProxyPort)}
		case "scope":
			return emit.Row{Support: emit.Enforced, How: "signal and process-info only (target same-sandbox); sysctl-read only the baseline's names (never kern.proc.*: other processes); mach-lookup only the baseline's services"}
		case "limits":
			return emit.Row{Support: emit.Missing, How: "seatbelt sets no resource limits",
				Alternative: "drop the limits for this backend, or use docker (Docker Desktop)", Pos: p.LimitsPos, Field: field("limits")}
		}
		return emit.Row{Support: emit.Missing, How: "unknown restriction"}
	})
}
