package bwrap

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

// Enforcement is the bwrap backend's report for a plan.
func Enforcement(p *compiler.Plan) []emit.Row {
	return emit.Report(p, func(r emit.Restriction) emit.Row {
		switch r {
		case emit.ReadOnlyRoot:
			return emit.Row{Support: emit.Enforced, How: "empty root and its /dev, remounted read-only; baseline " + p.Runtime.Name + " bound read-only"}
		case emit.Mounts:
			return emit.Row{Support: emit.Enforced, How: "--ro-bind / --bind"}
		case emit.ProtectedPaths:
			return emit.Row{Support: emit.Enforced, How: "--ro-bind over them, after the rw bind"}
		case emit.HiddenPaths:
			return emit.Row{Support: emit.Enforced, How: "mcpolicy-launch expands each pattern in the mount's source at spawn (no symlink followed; a symlink or a hard-linked file refused) and masks each match after every other mount: a folder by --perms 0000 --tmpfs, remounted read-only, a file by --perms 0000 --ro-bind-data: EACCES"}
		case emit.FixedTop:
			return emit.Row{Support: emit.Enforced, How: "mcpolicy-launch binds the project read-only and each entry present read-write by descriptor, protected ones read-only: no name can be added, renamed or swapped"}
		case emit.Scratch:
			return emit.Row{Support: emit.Enforced, How: "--size N --tmpfs"}
		case emit.Packs:
			return emit.Row{Support: emit.Enforced, How: "each pack path --ro-bind-try at its own path (the launcher refuses one that is a symlink under the home), its values --setenv, its caches a bounded --tmpfs"}
		case emit.Proc:
			return emit.Row{Support: emit.Enforced, How: "--proc /proc in the server's own PID namespace, /proc/keys and /proc/key-users masked: every server gets it, so proc changes nothing"}
		case emit.Environment:
			return emit.Row{Support: emit.Enforced, How: "--clearenv; the policy's constant values by --setenv; the wrapper passes names through --args, never argv"}
		case emit.Capabilities:
			return emit.Row{Support: emit.Enforced, How: "--cap-drop ALL, non-root uid in a user namespace"}
		case emit.NoNewPrivileges:
			return emit.Row{Support: emit.Enforced, How: "bwrap always sets PR_SET_NO_NEW_PRIVS; --disable-userns"}
		case emit.User:
			return emit.Row{Support: emit.Enforced, How: userHow(p)}
		case emit.NetworkNone:
			return emit.Row{Support: emit.Enforced, How: "--unshare-net: loopback only"}
		case emit.EgressAllowlist:
			return emit.Row{Support: emit.Enforced, How: fmt.Sprintf("--unshare-net; a forwarder on the sandbox's loopback port %d reaches only mcpolicy's egress proxy through a bound unix socket; start with mcpolicy run", p.Network.ProxyPort)}
		case emit.Scope:
			return emit.Row{Support: emit.Enforced, How: "own network namespace (abstract sockets) and PID namespace (signals), --new-session"}
		case emit.Credentials:
			return emit.Injected()
		case emit.ToolSurface:
			return emit.Relayed()
		case emit.Limits:
			return emit.Row{Support: emit.Missing, How: "bwrap sets no cgroup limits",
				Alternative: "use the docker backend, or start the wrapper under systemd-run --user --scope -p MemoryMax=... -p TasksMax=...",
				Pos:         p.LimitsPos, Field: p.Field("limits")}
		}
		return emit.Row{Support: emit.Missing, How: "unknown restriction"}
	})
}

func userHow(p *compiler.Plan) string {
	if p.User.Invoker {
		return "--unshare-user --uid ${UID} --gid ${GID}: the invoking user's own ids, resolved by mcpolicy-launch at spawn (refused when root)"
	}
	return fmt.Sprintf("--unshare-user --uid %d --gid %d (launched as root, root-owned files appear owned by it)", p.User.UID, p.User.GID)
}
