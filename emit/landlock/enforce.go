package landlock

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Degradations a policy may accept for this backend (see the schema).
const (
	AcceptTCPOnly     = artefact.AcceptTCPOnly
	AcceptNoScope     = artefact.AcceptNoScope
	AcceptScratchDir  = artefact.AcceptScratchDir
	AcceptUnixSockets = artefact.AcceptUnixSockets
	ScopeABI          = artefact.ScopeABI
	MinABI            = artefact.MinABI
)

// Rows this backend adds to emit.Restrictions: channels outside the IR that
// a server with code execution uses, and that Landlock's rights do not
// cover on their own (issue #14). The other backends answer them by
// construction (an empty root, their own session), so they are not part of
// every backend's report yet.
const (
	RowUnixSockets emit.Restriction = "named unix sockets"
	RowGroups      emit.Restriction = "supplementary groups"
)

// Enforcement is the Landlock backend's report for a plan on a host.
func Enforcement(p *compiler.Plan, h Host) []emit.Row {
	rows := report(p, h)
	rows = append(rows, unixSockets(p, h), groups(p, h))
	return rows
}

// unixSockets: Landlock (ABI <= 7) has no right for connect(2) to a
// pathname socket; only the launcher's minimal root, in a private mount
// namespace, keeps the host's out of reach.
func unixSockets(p *compiler.Plan, h Host) emit.Row {
	if h.UserNS {
		return emit.Row{Restriction: RowUnixSockets, Support: emit.Enforced,
			How: "absent: the root is a read-only tmpfs holding only the baseline, the grants, the scratch, /dev" + map[bool]string{true: " and the server's own /proc", false: ""}[p.Proc] + " (/run/docker.sock, D-Bus, ssh-agent, X11 are not there; a socket inside a grant is)"}
	}
	if !p.Accepts(AcceptUnixSockets) {
		return emit.Row{Restriction: RowUnixSockets, Support: emit.Enforced,
			How: "no user namespaces: the seccomp filter refuses every unix socket (socket(AF_UNIX) and datagram socketpairs: EACCES), pathname and abstract alike; a server that needs them accepts " + AcceptUnixSockets}
	}
	return emit.Row{Restriction: RowUnixSockets, Support: emit.Partial,
		How:         "no user namespaces: the host's root stays in view, and Landlock has no right for connect(2) to a named socket: /run/docker.sock, D-Bus, ssh-agent stay reachable",
		Degradation: AcceptUnixSockets, Alternative: "enable unprivileged user namespaces, or use the bwrap or docker backend"}
}

// groups: an unprivileged user namespace denies setgroups, so the
// invoker's supplementary groups stay (unmapped); they only matter where
// the host's group-owned objects are in view.
func groups(p *compiler.Plan, h Host) emit.Row {
	if h.UserNS {
		return emit.Row{Restriction: RowGroups, Support: emit.Enforced,
			How: "kept (unmapped: an unprivileged user namespace denies setgroups) — harmless with the minimal root, which holds none of the host's group-owned sockets; a root launcher drops them"}
	}
	if !p.Accepts(AcceptUnixSockets) {
		return emit.Row{Restriction: RowGroups, Support: emit.Enforced,
			How: "no user namespaces: the invoking user's are kept (a root launcher drops them), but no unix socket can be opened (seccomp), so the host's group-owned sockets (docker...) are out of reach"}
	}
	return emit.Row{Restriction: RowGroups, Support: emit.Partial,
		How:         "no user namespaces: the invoking user's are kept (a root launcher drops them), with the host's group-owned sockets (docker, ...) in view",
		Degradation: AcceptUnixSockets, Alternative: "enable unprivileged user namespaces, or use the bwrap or docker backend"}
}

func report(p *compiler.Plan, h Host) []emit.Row {
	field := func(f string) string { return p.Field(f) }
	return emit.Report(p, func(r emit.Restriction) emit.Row {
		switch r {
		case emit.ReadOnlyRoot:
			if h.UserNS {
				return emit.Row{Support: emit.Enforced, How: "a read-only tmpfs root holding only the grants and baseline " + p.Runtime.Name + " (read-only); and every path not granted is denied by Landlock"}
			}
			return emit.Row{Support: emit.Enforced, How: "every path not granted is denied; baseline " + p.Runtime.Name + " read-only"}
		case emit.Mounts:
			if h.UserNS {
				return emit.Row{Support: emit.Enforced, How: "read-only / read-write binds and Landlock hierarchies at their host paths (no remapping)"}
			}
			return emit.Row{Support: emit.Enforced, How: "read-only / read-write hierarchies at their host paths (no remapping)"}
		case emit.FixedTop, emit.ProtectedPaths:
			return protectRow(p, h, r)
		case emit.HiddenPaths:
			return hiddenRow(p, h)
		case emit.Scratch:
			if h.UserNS {
				return emit.Row{Support: emit.Enforced, How: "a bounded tmpfs at its target, in the minimal root"}
			}
			return emit.Row{Support: emit.Partial, How: "no user namespaces: a private folder of the server's user (mode 0700) as its HOME and TMPDIR, its total size not bounded",
				Degradation: AcceptScratchDir, Alternative: "use the bwrap or docker backend for a bounded tmpfs",
				Pos: p.Scratch.Pos, Field: field("scratch")}
		case emit.Packs:
			return emit.Row{Support: emit.Enforced, How: "each pack path in the ruleset's baseline, read and execute where it exists; its values set by the launcher; its caches a bounded tmpfs in the minimal root"}
		case emit.Proc:
			return procRow(p, h)
		case emit.Environment:
			return emit.Row{Support: emit.Enforced, How: "the launcher clears it except the named variables, then sets the policy's constant values"}
		case emit.Capabilities:
			if h.UserNS {
				return emit.Row{Support: emit.Enforced, How: "every set emptied (bounding, permitted, effective, inheritable, ambient) and root locked out by securebits before exec"}
			}
			return emit.Row{Support: emit.Enforced, How: "no user namespaces: a root launcher empties every set (the bounding set before it becomes " + p.User.String() + ") and locks root out by securebits; an unprivileged one holds none, but without CAP_SETPCAP cannot shrink the bounding set, which stays its own: inert, as no_new_privs lets no exec gain a capability"}
		case emit.NoNewPrivileges:
			return emit.Row{Support: emit.Enforced, How: "PR_SET_NO_NEW_PRIVS before landlock_restrict_self"}
		case emit.User:
			if h.UserNS {
				return emit.Row{Support: emit.Enforced, How: "a user namespace maps the invoking user to " + p.User.String() + " (launched as root, root-owned files appear owned by it)"}
			}
			return emit.Row{Support: emit.Enforced, How: "launched as root: setuid/setgid to " + p.User.String() + "; otherwise the invoking (non-root) user"}
		case emit.NetworkNone:
			if h.UserNS {
				return emit.Row{Support: emit.Enforced, How: "an empty network namespace (user namespace), and TCP denied by Landlock where ABI >= 4"}
			}
			how := "no user namespaces: only TCP connect/bind are denied (ABI >= 4); UDP, MPTCP and unix sockets stay open"
			if h.ABI < 4 {
				how = "no user namespaces and ABI < 4: nothing on the network is denied"
				return emit.Row{Support: emit.Missing, How: how, Alternative: "use the bwrap or docker backend",
					Pos: p.Network.Pos, Field: field("network")}
			}
			return emit.Row{Support: emit.Partial, How: how, Degradation: AcceptTCPOnly,
				Alternative: "enable unprivileged user namespaces, or use the bwrap or docker backend", Pos: p.Network.Pos, Field: field("network")}
		case emit.EgressAllowlist:
			return emit.Row{Support: emit.Missing, How: "Landlock filters TCP connect by port, not by host, and cannot put a forwarder to the proxy in front of the server",
				Alternative: `use the bwrap or docker backend (an empty network namespace whose only way out is mcpolicy's egress proxy), or keep network "none" on landlock`,
				Pos:         p.Network.Pos, Field: field("network")}
		case emit.Scope:
			if h.ABI >= ScopeABI {
				how := fmt.Sprintf("Landlock scopes abstract unix sockets and signals (ABI %d >= %d)", h.ABI, ScopeABI)
				if h.UserNS {
					how += "; own PID and IPC namespaces"
				}
				return emit.Row{Support: emit.Enforced, How: how}
			}
			return emit.Row{Support: emit.Partial, How: fmt.Sprintf("ABI %d < %d: abstract unix sockets and signals are not scoped", h.ABI, ScopeABI),
				Degradation: AcceptNoScope, Alternative: "use a kernel with Landlock ABI 6 (Linux 6.12), or the bwrap or docker backend"}
		case emit.Credentials:
			// Refused with the allowlist a credential needs (above): no
			// proxy stands between a Landlock server and the network.
			return emit.NotInjected(p, "Landlock has no egress proxy path: its egress allowlist is refused",
				"run this server on bwrap, docker or podman, whose egress proxy injects the value")
		case emit.ToolSurface:
			return emit.Relayed()
		case emit.Limits:
			return emit.Row{Support: emit.Missing, How: "the launcher sets no cgroup limits",
				Alternative: "use the docker backend, or start mcpolicy exec under systemd-run --user --scope -p MemoryMax=...",
				Pos:         p.LimitsPos, Field: field("limits")}
		}
		return emit.Row{Support: emit.Missing, How: "unknown restriction"}
	})
}

// procRow: the launcher's own PID namespace is what makes a procfs of the
// server's own; without namespaces the only /proc is the host's, which is
// never granted (launch.CheckRuleset refuses the same hosts).
func procRow(p *compiler.Plan, h Host) emit.Row {
	if h.UserNS {
		return emit.Row{Restriction: emit.Proc, Support: emit.Enforced, How: "a procfs of the server's own PID namespace at /proc in the minimal root, read-only, subset=pid and hidepid=ptraceable: the server's own processes only (no host PID, no /proc/sys, /proc/keys or other host-wide file); Landlock grants it read, never write or execute"}
	}
	return emit.Row{Restriction: emit.Proc, Support: emit.Missing, How: "no user namespaces: no procfs of the server's own PID namespace can be mounted, and the host's /proc is never granted",
		Alternative: "enable unprivileged user namespaces, or use the bwrap or docker backend (every server gets its own /proc there)",
		Pos:         p.ProcPos, Field: p.Field("proc")}
}

// protectRow: only the launcher's minimal root, in a private mount
// namespace, can bind the project read-only under its entries and a
// protected path read-only over itself; Landlock's rights are per
// hierarchy, and a read-write one covers everything below it.
func protectRow(p *compiler.Plan, h Host, r emit.Restriction) emit.Row {
	if r == emit.FixedTop {
		if h.UserNS {
			return emit.Row{Restriction: r, Support: emit.Enforced, How: "the minimal root binds the project read-only and each entry present at launch again on top by descriptor, read-write (Landlock's rule on the project) but protected ones read-only: no name can be added at the top (EROFS), renamed or swapped"}
		}
		return emit.Row{Restriction: r, Support: emit.Missing, How: "no user namespaces: Landlock cannot keep names from being created in a writable hierarchy, nor protect those below it (.git, .mcpolicy, the policies)",
			Alternative: `enable unprivileged user namespaces, use the bwrap or docker backend, make the project mount "ro", or mount only the folders the server writes`,
			Pos:         fixedTopPos(p), Field: p.Field("mounts")}
	}
	if h.UserNS {
		return emit.Row{Restriction: r, Support: emit.Enforced, How: "each bound read-only over itself in the minimal root, after the read-write grant"}
	}
	return emit.Row{Restriction: r, Support: emit.Missing, How: "no user namespaces: Landlock cannot deny a path below a granted hierarchy",
		Alternative: `enable unprivileged user namespaces, use the bwrap or docker backend, which mount protected paths read-only, or make the mount "ro"`,
		Pos:         holderPos(p), Field: p.Field("mounts")}
}

// hiddenRow: the minimal root masks each hidden path before the ruleset;
// without it Landlock cannot deny a path below a granted hierarchy.
func hiddenRow(p *compiler.Plan, h Host) emit.Row {
	if h.UserNS {
		return emit.Row{Restriction: emit.HiddenPaths, Support: emit.Enforced, How: "the launcher expands each pattern in the mount's source at spawn (no symlink followed; a symlink or a hard-linked file refused) and masks each match in the minimal root, after every other mount: a folder by an empty read-only tmpfs of mode 0000, a file by an empty read-only file of mode 0000: EACCES"}
	}
	return emit.Row{Restriction: emit.HiddenPaths, Support: emit.Missing, How: "no user namespaces: Landlock cannot deny a path below a granted hierarchy",
		Alternative: "enable unprivileged user namespaces, or use the bwrap or docker backend, or mount the folders beside the hidden ones instead of their parent",
		Pos:         hidePos(p), Field: p.Field("mounts")}
}

// hidePos is the position of the first hidden path.
func hidePos(p *compiler.Plan) position.Pos {
	for _, m := range p.Mounts {
		if len(m.HidePos) > 0 {
			return m.HidePos[0]
		}
	}
	return p.Pos
}

// fixedTopPos is the position of the read-write mount of the project.
func fixedTopPos(p *compiler.Plan) position.Pos {
	for _, m := range p.Mounts {
		if m.FixedTop() {
			return m.Pos
		}
	}
	return p.Pos
}

// holderPos is the position of the rw mount holding the first protected path.
func holderPos(p *compiler.Plan) position.Pos {
	for _, m := range p.Mounts {
		if m.Mode == compiler.ReadWrite && len(p.Protected) > 0 &&
			(m.Target == "/" || len(p.Protected[0].Target) > len(m.Target) && p.Protected[0].Target[:len(m.Target)+1] == m.Target+"/") {
			return m.Pos
		}
	}
	return p.Pos
}

// OnThisHost says what this machine's kernel will refuse at launch of a
// plan built for landlock that build, checking against Best, cannot: where
// user namespaces are not available, a plan with proc (no procfs of the
// server's own can be made, and the host's is never granted), a fixed top
// level, protected or hidden paths (no minimal root to bind them read-only
// or mask them). nil when nothing.
func OnThisHost(p *compiler.Plan, h Host) error {
	if h.UserNS || !p.RunsOn(Backend) {
		return nil
	}
	var rows []emit.Row
	for _, r := range emit.Restrictions(p) {
		switch r {
		case emit.Proc:
			rows = append(rows, procRow(p, h))
		case emit.FixedTop, emit.ProtectedPaths:
			rows = append(rows, protectRow(p, h, r))
		case emit.HiddenPaths:
			rows = append(rows, hiddenRow(p, h))
		}
	}
	return emit.Check(p, Backend, rows)
}
