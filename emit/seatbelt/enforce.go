package seatbelt

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// AcceptScratchDir accepts an unbounded private folder as scratch.
const AcceptScratchDir = "seatbelt-scratch-dir"

// Enforcement is the seatbelt backend's report for a plan.
func Enforcement(p *compiler.Plan) []emit.Row {
	field := func(f string) string { return p.Field(f) }
	return emit.Report(p, func(r emit.Restriction) emit.Row {
		switch r {
		case emit.ReadOnlyRoot:
			return emit.Row{Support: emit.Enforced, How: "(deny default); baseline " + p.Runtime.Name + " allows system reads only"}
		case emit.Mounts:
			return emit.Row{Support: emit.Enforced, How: "file-read* / file-write* on (subpath (param ...)) at their host paths (no remapping)"}
		case emit.HiddenPaths:
			if pos, field, bad := hiddenUnsayable(p); bad != "" {
				return emit.Row{Support: emit.Missing, How: fmt.Sprintf("hidden path %q: a profile names a path by its mount's parameter, so a pattern can only be a name or a name's prefix (\"name*\"), never a regex of the host path", bad),
					Alternative: `write it as a name ("secrets") or a prefix (".env*") for seatbelt, or list the names it stands for`, Pos: pos, Field: field}
			}
			return emit.Row{Support: emit.Enforced, How: "(deny file-read* file-write* ...) after every grant, for each hidden path as a whole (a \"name*\" by its prefix), present or not: EPERM"}
		case emit.FixedTop:
			return emit.Row{Support: emit.Enforced, How: "every protected name in the project is denied by path, present or not: it cannot be created, written or renamed, nor the mount moved aside"}
		case emit.ProtectedPaths:
			return emit.Row{Support: emit.Enforced, How: "(deny file-write* ...) after the grants, each name as a whole, and on the mount and every folder above it (no rename); the last matching rule wins, and absent names cannot be created"}
		case emit.Scratch:
			if len(p.MoreScratch) > 0 {
				return emit.Row{Support: emit.Missing, How: "macOS has no tmpfs for a sandbox, and the wrapper's one private folder (HOME and TMPDIR) cannot stand at several targets",
					Alternative: "list one scratch for seatbelt (its folders below it), or use docker (Docker Desktop) for several bounded tmpfs",
					Pos:         p.MoreScratch[0].Pos, Field: field("scratch")}
			}
			return emit.Row{Support: emit.Partial, How: "macOS has no tmpfs for a sandbox: a private folder from mktemp -d, its size not bounded",
				Degradation: AcceptScratchDir, Alternative: "drop the scratch and use a read-write mount, or use docker (Docker Desktop) for a bounded tmpfs",
				Pos: p.Scratch.Pos, Field: field("scratch")}
		case emit.Packs:
			return emit.Row{Support: emit.Missing, How: "runtime packs are Linux paths and values; the macOS baselines (runtime) hold Homebrew's and the system's runtimes", Alternative: "grant what the server needs on macOS as read-only mounts, or leave seatbelt out of backends", Pos: p.Packs[0].Pos, Field: p.Field("packs")}
		case emit.Proc:
			return emit.Row{Support: emit.Enforced, How: "macOS has no /proc: runtimes find their own program and state without it (_NSGetExecutablePath; proc_pidinfo of their own process, which process-info (target same-sandbox) allows): proc changes nothing"}
		case emit.Environment:
			return emit.Row{Support: emit.Enforced, How: "the wrapper starts sandbox-exec through env -i, with PATH, HOME (TMPDIR, the proxy variables) and the named ones only"}
		case emit.Capabilities:
			return emit.Row{Support: emit.Enforced, How: "macOS has no capability sets; the wrapper refuses to start as root"}
		case emit.NoNewPrivileges:
			return emit.Row{Support: emit.Enforced, How: "macOS has no such flag: seatbelt refuses to exec a setuid or setgid program inside a sandbox (forbidden-exec-sugid), no rule runs one (with no-sandbox), and the sandbox is inherited across exec and fork"}
		case emit.User:
			if p.User.Invoker {
				return emit.Row{Support: emit.Enforced, How: "the invoking user's own ids, never root (the wrapper refuses)"}
			}
			return emit.Row{Support: emit.Enforced, How: "never root (the wrapper refuses), but the invoking user's own ids, not " + p.User.String() + ": sandbox-exec cannot switch ids without root (counted as a grant)"}
		case emit.NetworkNone:
			return emit.Row{Support: emit.Enforced, How: "(deny network*): not even the host's loopback (no bind or listen), which every local service shares"}
		case emit.EgressAllowlist:
			return emit.Row{Support: emit.Enforced, How: fmt.Sprintf(`(allow network-outbound (remote tcp "localhost:%d")) to mcpolicy's egress proxy, which checks host:port; start with mcpolicy run`, p.Network.ProxyPort)}
		case emit.Scope:
			return emit.Row{Support: emit.Enforced, How: "signal and process-info only (target same-sandbox); sysctl-read only the baseline's names (never kern.proc.*: other processes); mach-lookup only the baseline's services"}
		case emit.Credentials:
			return emit.NotInjected(p, "the wrapper runs sandbox-exec, and its egress proxy on the host's loopback has no placeholder nor CA path on macOS",
				"leave seatbelt out of this server's backends and run it on bwrap, docker or podman, whose egress proxy injects the value")
		case emit.ToolSurface:
			return emit.NotRelayed(p, "the wrapper runs sandbox-exec, not mcpolicy-launch")
		case emit.Limits:
			return emit.Row{Support: emit.Missing, How: "seatbelt sets no resource limits",
				Alternative: "drop the limits for this backend, or use docker (Docker Desktop)", Pos: p.LimitsPos, Field: field("limits")}
		}
		return emit.Row{Support: emit.Missing, How: "unknown restriction"}
	})
}

// hiddenUnsayable finds a hidden path a profile cannot name: a glob other
// than one trailing "*" (seatbelt's prefix), with its position and field.
func hiddenUnsayable(p *compiler.Plan) (position.Pos, string, string) {
	for _, m := range p.Mounts {
		for j, h := range m.Hide {
			if _, ok := hiddenFilter(h); !ok {
				var pos position.Pos
				if j < len(m.HidePos) {
					pos = m.HidePos[j]
				}
				return pos, p.Field("mounts"), h
			}
		}
	}
	return position.Pos{}, "", ""
}

// hiddenFilter is the filter kind that denies a hidden path as a whole:
// "subpath" for a plain path, "prefix" for one ending in its only glob, a
// "*"; ok is false for any other glob.
func hiddenFilter(h string) (kind string, ok bool) {
	stem, star := strings.CutSuffix(h, "*")
	if strings.ContainsAny(stem, "*?[") {
		return "", false
	}
	if star {
		return "prefix", true
	}
	return "subpath", true
}
