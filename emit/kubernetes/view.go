package kubernetes

import (
	"fmt"
	"strconv"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// What a Pod makes of a plan, as mcpolicy why explains it (emit.View).

func (backend) PathModel() emit.PathModel { return emit.MountsAtTargets }

// Baseline: none of the host's; the image brings its own.
func (backend) Baseline(*compiler.Plan) []emit.Seen { return nil }

// Root: the container's, the image's own.
func (backend) Root(*compiler.Plan) emit.Root { return emit.ImageRoot("readOnlyRootFilesystem") }

func (backend) ScratchMount() emit.ScratchMount { return emit.ScratchMount{AtTarget: true} }

// ServerEnv: the Pod's env names the grants, and for an allowlist the
// variables pointing at the egress-proxy Pod's Service (and, with
// credentials, at the session CA of ConfigMap <server>-session-ca).
func (backend) ServerEnv(p *compiler.Plan) emit.ServerEnv {
	set := map[string]string{}
	if p.Network.Mode == "allowlist" {
		for _, kv := range proxyEnv(p, Options{}) {
			set[kv[0]] = "set by the manifest, not from the host: it points at the egress-proxy Pod's Service, " + proxyAddress(p)
		}
	}
	emit.TrustVariables(p, set)
	return emit.ServerEnv{Set: emit.PolicyVariables(p, set), Cleared: "the Pod's env names only the grants, each a secretKeyRef or configMapKeyRef"}
}

// Egress: the Pod is on the pod network; its NetworkPolicies, where the
// cluster's CNI enforces them, let it reach the egress-proxy Pod's port
// alone (an allowlist), or nothing.
func (backend) Egress(p *compiler.Plan) emit.Egress {
	const cni = " (where the cluster's CNI enforces NetworkPolicy; podman kube play does not)"
	if p.Network.Mode != "allowlist" {
		return emit.Egress{Direct: "a direct connection (raw TCP, UDP, DNS) is dropped: NetworkPolicy " + p.Server + "-deny-all denies the Pod every connection" + cni}
	}
	return emit.Egress{
		Direct: "a direct connection (raw TCP, UDP, DNS) is dropped: NetworkPolicies " + p.Server + "-deny-all and " + p.Server + "-to-egress-proxy let the Pod reach the egress-proxy Pod's port alone" + cni,
		Proxy:  proxyAddress(p) + ", the Service of the egress-proxy Pod " + p.Server + "-egress-proxy",
	}
}

// proxyAddress is where the server's Pod reaches the egress proxy.
func proxyAddress(p *compiler.Plan) string {
	return proxyIP(Options{}) + ":" + strconv.Itoa(p.Network.ProxyPort)
}

// CredentialValue: the values are in Secret <server>-credentials, which
// mcpolicy credentials wrote and only the egress-proxy Pod mounts.
func (backend) CredentialValue(p *compiler.Plan, g credential.Grant) string {
	from := "the " + g.From.Env + " of its environment, or of its --env-file"
	if len(g.From.Command) > 0 {
		from = "the output of `" + compiler.ShellCommand(g.From.Command) + "`"
	}
	return fmt.Sprintf("in Secret %s, mounted in the egress-proxy Pod alone, written by mcpolicy credentials from %s", CredentialsSecret(p.Server), from)
}

// Proc: the container runtime's procfs of the Pod's own PID namespace
// (hostPID and shareProcessNamespace false), every container's, with the
// runtime's default masked paths (procMount Default).
func (backend) Proc(*compiler.Plan) emit.ProcFS {
	return emit.ProcFS{Own: true, Masked: []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats"},
		How: "the container runtime's procfs of the Pod's own PID namespace (hostPID false), every container's; its default masked paths show nothing"}
}
