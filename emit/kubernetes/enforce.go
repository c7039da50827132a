package kubernetes

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Enforcement is the kubernetes backend's report for a plan: what the
// emitted manifests enforce, and how. It answers for the cluster the
// manifests are applied to, on two conditions the backend cannot check and
// says in every manifest: a CNI that enforces NetworkPolicy, and an API
// server that keeps the fields it is given (recursiveReadOnly needs 1.30,
// supplementalGroupsPolicy 1.31; an older one drops them silently).
func Enforcement(p *compiler.Plan) []emit.Row {
	return emit.Report(p, func(r emit.Restriction) emit.Row {
		switch r {
		case emit.ReadOnlyRoot:
			return emit.Row{Support: emit.Enforced, How: "readOnlyRootFilesystem, and an empty read-only emptyDir over /dev/shm /tmp /var/tmp"}
		case emit.Mounts:
			return emit.Row{Support: emit.Enforced, How: "a PersistentVolumeClaim per mount (named <server>-<target>, or as configured; hostPath of type Directory only on opt-in, which needs a privileged namespace), readOnly with recursiveReadOnly: Enabled for ro; a read-only source inside a read-write mount is that mount's volume at a subPath, which the kubelet resolves without following a symlink out of it; a read-write one is refused (a symlink the server plants inside the volume would choose what the next start binds writable)"}
		case emit.ProtectedPaths:
			return emit.Row{Support: emit.Enforced, How: "the mount's volume again at the entry's subPath, readOnly (the kubelet resolves a subPath without leaving the volume; a missing entry is created as an empty directory)"}
		case emit.HiddenPaths:
			return emit.Row{Support: emit.Missing, How: "no launcher runs in the cluster to expand the hidden patterns in the volume and mask each match",
				Alternative: "mount the folders beside the hidden ones instead of their parent, or drop kubernetes from this server's backends", Pos: hidePos(p), Field: p.Field("mounts")}
		case emit.FixedTop:
			return emit.Row{Support: emit.Missing, How: "no launcher runs in the cluster to fix the project's top level (bind it read-only, each entry re-bound)",
				Alternative: "mount the project's folders one by one instead of the project root read-write, or mount it read-only"}
		case emit.Scratch:
			return emit.Row{Support: emit.Enforced, How: "emptyDir, medium Memory, sizeLimit (tmpfs size; it counts against the memory limit)"}
		case emit.Packs:
			return emit.Row{Support: emit.Missing, How: "a Pod has no host paths to bind: the image is its runtime", Alternative: "build the runtime into the image and drop packs for the kubernetes backend (backends: [...] without kubernetes)", Pos: p.Packs[0].Pos, Field: p.Field("packs")}
		case emit.Proc:
			return emit.Row{Support: emit.Enforced, How: "the container runtime mounts a procfs of the Pod's own PID namespace (hostPID false) for every container, its masked paths included: proc changes nothing"}
		case emit.Environment:
			return emit.Row{Support: emit.Enforced, How: "only the granted names, each from a secretKeyRef or configMapKeyRef by name, never a value; the image's own ENV remains"}
		case emit.Capabilities:
			return emit.Row{Support: emit.Enforced, How: "capabilities: drop [ALL], privileged: false"}
		case emit.NoNewPrivileges:
			return emit.Row{Support: emit.Enforced, How: "allowPrivilegeEscalation: false; seccompProfile RuntimeDefault"}
		case emit.User:
			if p.User.Invoker {
				return emit.Row{Support: emit.Missing, How: `user "invoker": a cluster has no invoking user`,
					Alternative: `set a numeric user ("1000:1000") in the policy for the kubernetes backend`,
					Pos:         p.UserPos, Field: p.Field("user")}
			}
			if p.User.Root() {
				// Emitting it would only defer the refusal to admission:
				// Pod Security "restricted" refuses runAsUser 0.
				return emit.Row{Support: emit.Missing, How: "user root: Pod Security restricted refuses runAsUser 0, and every manifest this backend writes passes it",
					Alternative: `set a numeric non-root user ("1000:1000") in the policy for the kubernetes backend`,
					Pos:         p.UserPos, Field: p.Field("user")}
			}
			how := "runAsUser/runAsGroup " + p.User.String() + ", runAsNonRoot, supplementalGroupsPolicy: Strict"
			if hostUsers(p) == nil {
				return emit.Row{Support: emit.Partial, How: how + "; in the node's user namespace (no hostUsers: false): the Pod's uid is the node's",
					Degradation: AcceptHostUsers, Alternative: "run the Pods on nodes that support user namespaces"}
			}
			return emit.Row{Support: emit.Enforced, How: how + ", hostUsers: false (a user namespace of its own: the uid owns nothing on the node)"}
		case emit.NetworkNone:
			return emit.Row{Support: emit.Enforced, How: "NetworkPolicy denying all ingress and egress (needs a CNI that enforces NetworkPolicy); automountServiceAccountToken and enableServiceLinks false"}
		case emit.EgressAllowlist:
			return emit.Row{Support: emit.Enforced, How: fmt.Sprintf("NetworkPolicy: egress only to the egress-proxy Pod on port %d, by address (no DNS); the proxy's own NetworkPolicy allows only the allowlist's ports, and no private, loopback, link-local, CGNAT or ULA address but one an entry names; hosts are matched by the proxy, never by the CNI", p.Network.ProxyPort)}
		case emit.Scope:
			return emit.Row{Support: emit.Enforced, How: "own network, IPC and PID namespaces: hostNetwork, hostIPC, hostPID and shareProcessNamespace false"}
		case emit.Credentials:
			return emit.Row{Support: emit.Enforced, How: "the server's Pod holds placeholders (Secret <server>-credential-placeholders) and trusts a session CA (ConfigMap <server>-session-ca); the egress-proxy Pod alone mounts the values and the CA's key (Secret <server>-credentials) and injects each on requests to its destinations alone, intercepting TLS for those hosts only; mcpolicy credentials draws the placeholders and the CA and writes the three objects"}
		case emit.ToolSurface:
			return emit.NotRelayed(p, "the cluster starts the Pod, not mcpolicy-launch")
		case emit.Limits:
			if p.Subtractions.Pids > 0 {
				return emit.Row{Support: emit.Missing, How: "limits.pids: a Pod has no pids limit (the kubelet's podPidsLimit is node-wide)",
					Alternative: "drop limits.pids for this backend and set podPidsLimit on the nodes",
					Pos:         p.LimitsPos, Field: p.Field("limits")}
			}
			return emit.Row{Support: emit.Enforced, How: "resources.limits (and equal requests): memory, cpu (cgroups)"}
		}
		return emit.Row{Support: emit.Missing, How: "unknown restriction"}
	})
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
