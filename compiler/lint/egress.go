package lint

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/egress"
	"github.com/mcpolicy/mcpolicy/schema"
)

// destination is one allowlist entry of a plan, parsed, with the place in
// the policy that asks for it.
type destination struct {
	egress.Rule
	Pos schema.Pos
}

// destinations parses a plan's allowlist. An entry that does not parse (a
// hand-edited plan) is skipped: the compiler refuses it in a policy.
func destinations(t *Target) []destination {
	if t.Plan == nil {
		return nil
	}
	var ds []destination
	for i, a := range t.Plan.Network.Allow {
		if r, err := egress.ParseRule(a); err == nil {
			ds = append(ds, destination{r, allowPos(t.Plan.Network, i)})
		}
	}
	return ds
}

// allowPos is entry i's position; plans decoded from JSON carry none, so
// the network field stands in.
func allowPos(n compiler.Network, i int) schema.Pos {
	if i < len(n.AllowPos) {
		return n.AllowPos[i]
	}
	return n.Pos
}

// firstAllowPos is where the allowlist starts in the policy: the entry
// written first (Allow is sorted, so not necessarily entry 0).
func firstAllowPos(n compiler.Network) schema.Pos {
	first := allowPos(n, 0)
	for _, p := range n.AllowPos {
		if p.Line < first.Line || (p.Line == first.Line && p.Col < first.Col) {
			first = p
		}
	}
	return first
}

// policyEgress reports whether a policy's plan lets the server reach the
// network, and where (its allowlist entries).
func policyEgress(t *Target) (bool, []string) {
	if t.Origin != FromPolicy || t.Plan == nil {
		return false, nil
	}
	n := t.Plan.Network
	return n.Mode != "none" || len(n.Allow) > 0, n.Allow
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
func apex(r egress.Rule) string { return strings.TrimPrefix(r.Host, "*.") }

// listed reports whether a plan's allowlist holds host:port exactly.
func listed(t *Target, host string, port int) bool {
	want := egress.Rule{Host: host, Port: port}.String()
	for _, a := range t.Plan.Network.Allow {
		if a == want {
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

func checkEgressWildcard(t *Target, o Options, report reportFn) {
	for _, d := range destinations(t) {
		if d.Wildcard {
			report(d.Pos, "%s allows every name under %s on port %d: whoever holds one of them (anyone, under a shared suffix) receives what the server sends",
				d.Rule, apex(d.Rule), d.Port)
		}
	}
}

func checkEgressWildcardApex(t *Target, o Options, report reportFn) {
	for _, d := range destinations(t) {
		if d.Wildcard && !listed(t, apex(d.Rule), d.Port) {
			bare := egress.Rule{Host: apex(d.Rule), Port: d.Port}
			report(d.Pos, "%s does not match %s itself (a wildcard never matches its apex): list %s if the server calls it",
				d.Rule, apex(d.Rule), bare)
		}
	}
}

func checkEgressPrivate(t *Target, o Options, report reportFn) {
	for _, d := range destinations(t) {
		if d.Addr.IsValid() && egress.Private(d.Addr) {
			report(d.Pos, "%s is not on the internet: through the proxy the server reaches %s", d.Rule, reachedThrough(d.Addr))
		}
	}
}
