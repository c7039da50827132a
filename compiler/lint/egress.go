package lint

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/secretshape"
)

// destinations is a plan's allowlist; plans decoded from JSON carry no
// positions, so the network field stands in.
func destinations(t *readback.Target) []compiler.Destination {
	if t.Plan == nil {
		return nil
	}
	n := t.Plan.Network
	ds := make([]compiler.Destination, len(n.Allow))
	for i, d := range n.Allow {
		ds[i] = compiler.Destination{Rule: d.Rule, Pos: orPos(d.Pos, n.Pos)}
	}
	return ds
}

// firstAllowPos is where the allowlist starts in the policy: the entry
// written first (Allow is sorted, so not necessarily entry 0).
func firstAllowPos(n compiler.Network) position.Pos {
	if len(n.Allow) == 0 {
		return n.Pos
	}
	first := orPos(n.Allow[0].Pos, n.Pos)
	for _, d := range n.Allow {
		if p := d.Pos; p != (position.Pos{}) && (p.Line < first.Line || (p.Line == first.Line && p.Col < first.Col)) {
			first = p
		}
	}
	return first
}

// orPos is pos, or fallback when a plan decoded from JSON carries none.
func orPos(pos, fallback position.Pos) position.Pos {
	if pos == (position.Pos{}) {
		return fallback
	}
	return pos
}

// policyEgress reports whether a policy's plan lets the server reach the
// network, and where (its allowlist entries).
func policyEgress(t *readback.Target) (bool, []string) {
	if t.Origin != readback.FromPolicy || t.Plan == nil {
		return false, nil
	}
	n := t.Plan.Network
	return n.Mode != "none" || len(n.Allow) > 0, n.Entries()
}

// egressPhrase names the destinations for a message, the first few of a
// long list: "a:443, b:443, c:443 and 2 more".
func egressPhrase(dests []string) string {
	const shown = 3
	if len(dests) <= shown {
		return strings.Join(dests, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(dests[:shown], ", "), len(dests)-shown)
}

// apex is the name a wildcard rule sits on: "*.x.com" -> "x.com".
func apex(r allowlist.Rule) string { return strings.TrimPrefix(r.Host, "*.") }

// listed reports whether a plan's allowlist holds host:port exactly.
func listed(t *readback.Target, host string, port int) bool {
	want := allowlist.Rule{Host: host, Port: port}.String()
	for _, d := range t.Plan.Network.Allow {
		if d.String() == want {
			return true
		}
	}
	return false
}

// The cloud instance metadata endpoints (AWS, GCP, Azure; AWS over IPv6):
// the address an SSRF is after, for the instance's credentials.
var metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254")}

// reachedThrough says what a private address leads to, for the message.
func reachedThrough(a netip.Addr) string {
	for _, m := range metadataAddrs {
		if a == m {
			return "the cloud instance metadata service and the credentials it hands out"
		}
	}
	switch {
	case a.IsLoopback() || a.IsUnspecified():
		return "the host's own services (databases, debuggers, the MCP client)"
	case a.IsLinkLocalUnicast():
		return "link-local neighbours (where cloud metadata services live)"
	case a.IsPrivate():
		return "the LAN's services"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return "a multicast group on the local network"
	}
	return "a carrier-grade NAT network (a provider's or a VPN's, e.g. Tailscale)"
}

func checkEgressWildcard(t *readback.Target, o Options, report reportFn) {
	for _, d := range destinations(t) {
		if d.Wildcard {
			report(d.Pos, "%s allows every name under %s on port %d: whoever holds one of them (anyone, under a shared suffix) receives what the server sends",
				d.Rule, apex(d.Rule), d.Port)
		}
	}
}

func checkEgressWildcardApex(t *readback.Target, o Options, report reportFn) {
	for _, d := range destinations(t) {
		if d.Wildcard && !listed(t, apex(d.Rule), d.Port) {
			bare := allowlist.Rule{Host: apex(d.Rule), Port: d.Port}
			report(d.Pos, "%s does not match %s itself (a wildcard never matches its apex): list %s if the server calls it",
				d.Rule, apex(d.Rule), bare)
		}
	}
}

func checkEgressPrivate(t *readback.Target, o Options, report reportFn) {
	for _, d := range destinations(t) {
		if d.Addr.IsValid() && allowlist.Private(d.Addr) {
			report(d.Pos, "%s is not on the internet: through the proxy the server reaches %s", d.Rule, reachedThrough(d.Addr))
		}
	}
}

// checkEnvSecretNotCredential flags a secret-named variable a policy
// passes through to a server with an egress allowlist, where a credential
// would keep the value outside (ENV_SECRET_NOT_CREDENTIAL).
func checkEnvSecretNotCredential(t *readback.Target, o Options, report reportFn) {
	if t.Origin != readback.FromPolicy || t.Plan == nil || t.Plan.Network.Mode != "allowlist" {
		return
	}
	if !slices.ContainsFunc(t.Plan.Backends, backendtraits.InjectsCredentials) {
		return // no backend of the plan injects one yet
	}
	for _, e := range t.Plan.Env {
		if secretshape.Named(e.Name) {
			report(e.Pos, "%s is passed into a server with egress to %s: use credentials: the value would enter the sandbox", e.Name, egressPhrase(t.Plan.Network.Entries()))
		}
	}
}
