package docker

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

// Enforcement is the docker/podman backend's report for a plan.
func Enforcement(p *compiler.Plan) []emit.Row {
	return emit.Report(p, func(r emit.Restriction) emit.Row {
		switch r {
		case emit.ReadOnlyRoot:
			return emit.Row{Support: emit.Enforced, How: "--read-only, and read-only tmpfs over /run /tmp /var/tmp /dev/shm"}
		case emit.Mounts:
			return emit.Row{Support: emit.Enforced, How: "--mount type=bind[,readonly]"}
		case emit.ProtectedPaths:
			return emit.Row{Support: emit.Enforced, How: "read-only bind mounts over them"}
		case emit.HiddenPaths:
			return emit.Row{Support: emit.Enforced, How: "mcpolicy-launch --engine expands each pattern in the mount's source at spawn (no symlink followed; a symlink or a hard-linked file refused) and masks each match: a folder by --tmpfs TARGET:ro,mode=0000, a file by a read-only bind of an empty mode-0000 file of the launcher's: EACCES"}
		case emit.FixedTop:
			return emit.Row{Support: emit.Enforced, How: "mcpolicy-launch --engine binds the project read-only and each entry present read-write, protected ones read-only, after checking no source is a symlink"}
		case emit.Scratch:
			return emit.Row{Support: emit.Enforced, How: "--tmpfs with size="}
		case emit.Packs:
			return emit.Row{Support: emit.Enforced, How: "each pack path a read-only bind at its own path, labelled optional (the launcher drops one missing at spawn, so the engine never creates it); its values -e; its caches --tmpfs with a size"}
		case emit.Proc:
			return emit.Row{Support: emit.Enforced, How: "the engine mounts a procfs of the container's own PID namespace for every server, its masked and read-only paths included: proc changes nothing"}
		case emit.Environment:
			return emit.Row{Support: emit.Enforced, How: "only -e NAME is passed; the image's own ENV remains"}
		case emit.Capabilities:
			return emit.Row{Support: emit.Enforced, How: "--cap-drop ALL"}
		case emit.NoNewPrivileges:
			return emit.Row{Support: emit.Enforced, How: "--security-opt no-new-privileges"}
		case emit.User:
			if p.User.Invoker {
				return emit.Row{Support: emit.Enforced, How: "--user ${UID}:${GID}: the invoking user's own ids, resolved by mcpolicy-launch at spawn (refused when root)"}
			}
			return emit.Row{Support: emit.Enforced, How: "--user " + p.User.String()}
		case emit.NetworkNone:
			return emit.Row{Support: emit.Enforced, How: "--network none"}
		case emit.EgressAllowlist:
			return emit.Row{Support: emit.Enforced, How: fmt.Sprintf("--network container:SIDECAR: the sidecar has no network but loopback, where a forwarder on port %d reaches only mcpolicy's egress proxy through a bound unix socket; start with mcpolicy run", p.Network.ProxyPort)}
		case emit.Scope:
			return emit.Row{Support: emit.Enforced, How: "own network, IPC and PID namespaces; mcpolicy-launch gives docker and podman alike Docker's default seccomp profile (no keyring, io_uring or vsock)"}
		case emit.Credentials:
			return emit.Injected()
		case emit.ToolSurface:
			return emit.Relayed()
		case emit.Limits:
			return emit.Row{Support: emit.Enforced, How: "--memory, --pids-limit, --cpus (cgroups)"}
		}
		return emit.Row{Support: emit.Missing, How: "unknown restriction"}
	})
}
