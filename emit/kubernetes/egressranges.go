package kubernetes

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes/internal/kube"
)

// The egress proxy refuses every private, loopback, link-local, CGNAT,
// multicast and reserved address a name resolves to (allowlist.Private)
// unless an entry names the address. Its NetworkPolicy says the same, so
// that the cluster's services and nodes are not left to the proxy's check
// alone: these ranges are excepted from the allowlist's ports, and an entry
// naming an address inside them gets a rule of its own for that address
// and port. A cluster whose Pod or Service range lies outside them (public
// addresses used privately, an IPv6 cluster on global addresses) names it
// in Options.ClusterCIDRs.

// privateV4 and privateV6 are allowlist.Private as prefixes. An IPv6
// address carrying an IPv4 one (NAT64 64:ff9b::/96, 6to4 2002::/16) is
// private when the address it carries is: those forms of each IPv4 range
// are excepted too.
var (
	privateV4 = prefixes(
		"0.0.0.0/8",      // "this network": Linux connects it to the host itself
		"10.0.0.0/8",     // private
		"100.64.0.0/10",  // carrier-grade NAT (some clusters' Pod range)
		"127.0.0.0/8",    // loopback
		"169.254.0.0/16", // link-local: cloud metadata
		"172.16.0.0/12",  // private
		"192.168.0.0/16", // private
		"198.18.0.0/15",  // benchmarking
		"224.0.0.0/4",    // multicast
		"240.0.0.0/4",    // reserved, and broadcast
	)
	privateV6 = prefixes(
		"::/96",          // unspecified, loopback (::1) and IPv4-compatible
		"64:ff9b:1::/48", // local-use NAT64
		"fc00::/7",       // unique local (ULA)
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local
		"ff00::/8",       // multicast
	)
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// embed4 is the IPv4 prefix v carried in the IPv6 prefix outer at bit
// offset at (96 for NAT64, 16 for 6to4).
func embed4(outer netip.Prefix, at int, v netip.Prefix) netip.Prefix {
	b := outer.Addr().As16()
	a4 := v.Addr().As4()
	copy(b[at/8:], a4[:])
	return netip.PrefixFrom(netip.AddrFrom16(b), at+v.Bits())
}

// PrivateRanges are the ranges the egress proxy's NetworkPolicy excepts
// from the allowlist's ports, IPv4 then IPv6, with the cluster's own
// (Options.ClusterCIDRs) added where no range holds them already.
func PrivateRanges(o Options) (v4, v6 []netip.Prefix) {
	v4 = slices.Clone(privateV4)
	v6 = slices.Clone(privateV6)
	for _, p := range privateV4 {
		v6 = append(v6, embed4(nat64, 96, p))
	}
	for _, p := range privateV4 {
		v6 = append(v6, embed4(sixToFour, 16, p))
	}
	for _, s := range o.ClusterCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue // refused by check
		}
		if p.Addr().Is4() {
			v4 = addRange(v4, p)
		} else {
			v6 = addRange(v6, p)
		}
	}
	return v4, v6
}

// addRange adds p unless a range of rs holds it already.
func addRange(rs []netip.Prefix, p netip.Prefix) []netip.Prefix {
	for _, r := range rs {
		if r.Bits() <= p.Bits() && r.Contains(p.Addr()) {
			return rs
		}
	}
	return append(rs, p)
}

// checkClusterCIDRs refuses a cluster range that is no canonical prefix,
// or that is everything (it would leave the proxy nothing to reach).
func checkClusterCIDRs(o Options) error {
	for _, s := range o.ClusterCIDRs {
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			return fmt.Errorf("kubernetes: cluster CIDR %q: %v (want a prefix such as 10.96.0.0/12 or fd00:10::/56)", s, err)
		case p.Masked() != p || p.Addr().Zone() != "" || p.Addr().Is4In6():
			return fmt.Errorf("kubernetes: cluster CIDR %q: not a canonical prefix (did you mean %s?)", s, p.Masked())
		case p.Bits() == 0:
			return fmt.Errorf("kubernetes: cluster CIDR %q: every address; name the cluster's Pod and Service ranges", s)
		}
	}
	return nil
}

// proxyEgressRules are the egress proxy's rules to the allowlist: its
// ports anywhere but the private ranges, and each entry naming an address
// inside them, on that entry's port (the proxy lets such an entry through:
// the policy names the address).
func proxyEgressRules(p *compiler.Plan, o Options) []kube.NetworkPolicyEgressRule {
	tcp := kube.ProtocolTCP
	port := func(n int) kube.NetworkPolicyPort {
		v := kube.IntOrString(n)
		return kube.NetworkPolicyPort{Protocol: &tcp, Port: &v}
	}
	v4, v6 := PrivateRanges(o)
	var ports []int
	var named []compiler.Destination
	for _, d := range p.Network.Allow {
		if d.Addr.IsValid() && inAny(d.Addr, v4, v6) {
			named = append(named, d)
			continue
		}
		if !slices.Contains(ports, d.Port) {
			ports = append(ports, d.Port)
		}
	}
	slices.Sort(ports)
	var rules []kube.NetworkPolicyEgressRule
	if len(ports) > 0 {
		r := kube.NetworkPolicyEgressRule{To: []kube.NetworkPolicyPeer{
			{IPBlock: &kube.IPBlock{CIDR: "0.0.0.0/0", Except: strs(v4)}},
			{IPBlock: &kube.IPBlock{CIDR: "::/0", Except: strs(v6)}},
		}}
		for _, n := range ports {
			r.Ports = append(r.Ports, port(n))
		}
		rules = append(rules, r)
	}
	for _, d := range named {
		a := d.Addr.Unmap()
		rules = append(rules, kube.NetworkPolicyEgressRule{
			To:    []kube.NetworkPolicyPeer{{IPBlock: &kube.IPBlock{CIDR: netip.PrefixFrom(a, a.BitLen()).String()}}},
			Ports: []kube.NetworkPolicyPort{port(d.Port)},
		})
	}
	return rules
}

func inAny(a netip.Addr, sets ...[]netip.Prefix) bool {
	a = a.Unmap()
	for _, s := range sets {
		for _, p := range s {
			if p.Contains(a) {
				return true
			}
		}
	}
	return false
}

func strs(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// privateRangesPhrase names the excepted ranges for the manifest's header.
func privateRangesPhrase(o Options) string {
	s := "the private, loopback, link-local, CGNAT, ULA, multicast and reserved ranges"
	if len(o.ClusterCIDRs) > 0 {
		s += " and " + strings.Join(o.ClusterCIDRs, ", ")
	}
	return s
}
