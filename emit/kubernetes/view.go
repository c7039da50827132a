package kubernetes

import (
	"fmt"
	"strings"

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

func (backend) ServerEnv(p *compiler.Plan) emit.ServerEnv {
	set := emit.ProxyVariables(p)
	for _, kv := range proxyEnv(p, Options{}) {
		set[kv[0]] = "set by mcpolicy in the Pod's env: " + kv[1] + ", the egress-proxy Pod's Service"
	}
	return emit.ServerEnv{Set: emit.PolicyVariables(p, set), Cleared: "the Pod's env names only the grants, each a secretKeyRef or configMapKeyRef"}
}

// Egress: the Pod has a network of the cluster's; its NetworkPolicies,
// not a namespace of its own, keep it to the egress-proxy Pod.
func (backend) Egress(p *compiler.Plan) emit.Egress {
	return emit.Egress{
		Direct: fmt.Sprintf("a direct connection (raw TCP, UDP, DNS) is dropped by NetworkPolicy %s-deny-all (and %s-to-egress-proxy, which lets the Pod reach the egress-proxy Pod alone): only where the cluster's CNI enforces NetworkPolicy", p.Server, p.Server),
		Proxy:  fmt.Sprintf("%s:%d, the Service of the egress-proxy Pod %s-egress-proxy", proxyIP(Options{}), p.Network.ProxyPort, p.Server),
	}
}

// CredentialValue: the values are in Secret <server>-credentials, which
// mcpolicy credentials wrote and only the egress-proxy Pod mounts.
func (backend) CredentialValue(p *compiler.Plan, g credential.Grant) string {
	from := "the " + g.From.Env + " of its environment, or of its --env-file"
	if len(g.From.Command) > 0 {
		from = "the output of `" + strings.Join(g.From.Command, " ") + "`"
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
