package kubernetes_test

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// egressAdmits reports whether the NetworkPolicies selecting a Pod with
// these labels let it open a TCP connection to addr:port, as a CNI reads
// them: the union of the egress rules of every policy selecting it with
// Egress among its types (none: everything). Only ipBlock peers are
// addresses; a peer selecting Pods or namespaces never admits one here.
func egressAdmits(nps []*networkingv1.NetworkPolicy, labels map[string]string, addr netip.Addr, port int) bool {
	restricted := false
	for _, np := range nps {
		if !selects(np, labels) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			continue
		}
		restricted = true
		for _, r := range np.Spec.Egress {
			portOK := len(r.Ports) == 0
			for _, p := range r.Ports {
				portOK = portOK || (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP) && (p.Port == nil || p.Port.IntValue() == port)
			}
			if !portOK {
				continue
			}
			if len(r.To) == 0 {
				return true
			}
			for _, peer := range r.To {
				if peer.IPBlock != nil && inBlock(peer.IPBlock, addr) {
					return true
				}
			}
		}
	}
	return !restricted
}

func inBlock(b *networkingv1.IPBlock, a netip.Addr) bool {
	c, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !c.Contains(a) {
		return false
	}
	for _, e := range b.Except {
		if x, err := netip.ParsePrefix(e); err == nil && x.Contains(a) {
			return false
		}
	}
	return true
}

// mustRefuse are addresses of the ranges the issue names (private, CGNAT,
// link-local, loopback, ULA) and the rest the proxy refuses, each in its
// IPv4, NAT64 and 6to4 forms where it has them: the proxy's NetworkPolicy
// admits none of them on any port, unless an allowlist entry names it.
var mustRefuse = []string{
	"10.0.0.1", "10.96.0.1", "172.16.0.1", "172.31.255.254", "192.168.1.1", "100.64.0.1", "100.127.255.254",
	"169.254.169.254", "127.0.0.1", "0.0.0.0", "198.18.0.1", "224.0.0.1", "239.255.255.250", "255.255.255.255",
	"fd00::1", "fc00::1", "fe80::1", "::1", "::", "fec0::1", "ff02::1", "64:ff9b:1::1",
	"64:ff9b::a00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "2002:a00:1::1", "2002:a9fe:a9fe::1", "2002:c0a8:101::1",
}

// mustAdmit are public addresses: reached on the allowlist's ports.
var mustAdmit = []string{"93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "64:ff9b::5db8:d822", "2002:5db8:d822::1"}

// checkProxyEgress holds the egress proxy's NetworkPolicy to the proxy's
// own check: every allowlist port open to public addresses, no private
// address on any port but an entry naming it, and the cluster's ranges
// (Options.ClusterCIDRs, checked by TestClusterCIDRs) refused too.
func checkProxyEgress(t *testing.T, p *compiler.Plan, name string, tpl *corev1.PodTemplateSpec, nps []*networkingv1.NetworkPolicy) {
	t.Helper()
	named := map[netip.AddrPort]bool{}
	var ports []int
	for _, d := range p.Network.Allow {
		if d.Addr.IsValid() {
			named[netip.AddrPortFrom(d.Addr.Unmap(), uint16(d.Port))] = true
		}
		ports = append(ports, d.Port)
	}
	for _, port := range append(ports, 22, 53, 80, 6443, 10250) {
		for _, s := range mustRefuse {
			a := netip.MustParseAddr(s)
			if egressAdmits(nps, tpl.Labels, a, port) != named[netip.AddrPortFrom(a, uint16(port))] {
				t.Errorf("%s: egress to %s port %d admitted %v, named by the allowlist %v", name, a, port, !named[netip.AddrPortFrom(a, uint16(port))], named[netip.AddrPortFrom(a, uint16(port))])
			}
		}
		for _, s := range mustAdmit {
			a := netip.MustParseAddr(s)
			want := slices.ContainsFunc(p.Network.Allow, func(d compiler.Destination) bool {
				return d.Port == port && (!d.Addr.IsValid() || !privateAddr(d.Addr))
			})
			if egressAdmits(nps, tpl.Labels, a, port) != want {
				t.Errorf("%s: egress to public %s port %d admitted %v, want %v", name, a, port, !want, want)
			}
		}
	}
	for a := range named {
		if !egressAdmits(nps, tpl.Labels, a.Addr(), int(a.Port())) {
			t.Errorf("%s: the allowlist names %s, its NetworkPolicy refuses it", name, a)
		}
	}
}

// privateAddr reports whether a is in the ranges the backend excepts.
func privateAddr(a netip.Addr) bool {
	v4, v6 := kubernetes.PrivateRanges(kubernetes.Options{})
	return slices.ContainsFunc(append(v4, v6...), func(p netip.Prefix) bool { return p.Contains(a.Unmap()) })
}

// TestProxyEgressRanges: an allowlist with a host, a public address, and
// private addresses the policy names (each let through on its own port
// only), with and without the cluster's own ranges.
func TestProxyEgressRanges(t *testing.T) {
	p := plan()
	p.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24001,
		Allow: compiler.MustDestinations("api.example.com:443", "1.1.1.1:853", "10.1.2.3:5432", "[fd00::5]:8443", "192.168.1.1:443")}
	for _, o := range []kubernetes.Options{{}, {ClusterCIDRs: []string{"34.118.224.0/20", "2600:1900:4000::/44", "10.96.0.0/12"}}} {
		nps, err := kubernetes.NetworkPolicies(p, o)
		if err != nil {
			t.Fatal(err)
		}
		var api []*networkingv1.NetworkPolicy
		for _, np := range nps {
			api = append(api, apiObject[networkingv1.NetworkPolicy](t, np))
		}
		labels := kubernetes.EgressProxyLabels(p.Server)
		tpl := &corev1.PodTemplateSpec{}
		tpl.Labels = labels
		checkProxyEgress(t, p, "proxy", tpl, api)
		// What the entries name, and nothing of their range beside it.
		for _, c := range []struct {
			addr string
			port int
			want bool
		}{
			{"10.1.2.3", 5432, true}, {"10.1.2.4", 5432, false}, {"10.1.2.3", 443, false},
			{"fd00::5", 8443, true}, {"fd00::6", 8443, false},
			{"192.168.1.1", 443, true}, {"192.168.1.2", 443, false},
			{"1.1.1.1", 853, true}, {"8.8.8.8", 853, true}, // a public entry opens its port, as a host entry does
		} {
			if got := egressAdmits(api, labels, netip.MustParseAddr(c.addr), c.port); got != c.want {
				t.Errorf("%v: %s:%d admitted %v, want %v", o.ClusterCIDRs, c.addr, c.port, got, c.want)
			}
		}
		for _, s := range o.ClusterCIDRs {
			a := netip.MustParsePrefix(s).Addr().Next()
			if egressAdmits(api, labels, a, 443) {
				t.Errorf("cluster range %s: %s admitted on 443", s, a)
			}
		}
		if len(o.ClusterCIDRs) > 0 && !egressAdmits(api, labels, netip.MustParseAddr("34.118.240.1"), 443) {
			t.Error("34.118.240.1, outside the cluster's 34.118.224.0/20, refused on 443")
		}
	}
}

// TestClusterCIDRs: a cluster range that is no canonical prefix, or every
// address, is refused with what to write instead.
func TestClusterCIDRs(t *testing.T) {
	p := plan()
	p.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24001, Allow: compiler.MustDestinations("api.example.com:443")}
	for bad, want := range map[string]string{
		"10.96.0.1/12": "did you mean 10.96.0.0/12",
		"10.96.0.0":    "want a prefix",
		"0.0.0.0/0":    "every address",
		"::/0":         "every address",
	} {
		_, err := kubernetes.Manifest(p, compiler.Placeholders{}, kubernetes.Options{ClusterCIDRs: []string{bad}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cluster CIDR %q: %v, want an error saying %q", bad, err, want)
		}
	}
}

// TestRangesMatchTheProxy: the ranges the NetworkPolicy excepts are the
// addresses the proxy refuses (allowlist.Private), no more and no fewer
// (IPv4-mapped IPv6 aside: no packet carries it): checked on the first and
// last address of every range and of the IPv4 ranges' NAT64 and 6to4
// forms, and on random addresses around them (fixed seed).
func TestRangesMatchTheProxy(t *testing.T) {
	v4, v6 := kubernetes.PrivateRanges(kubernetes.Options{})
	all := append(slices.Clone(v4), v6...)
	mapped := netip.MustParsePrefix("::ffff:0:0/96")
	inRanges := func(a netip.Addr) bool {
		return slices.ContainsFunc(all, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	check := func(a netip.Addr) {
		if mapped.Contains(a) {
			return
		}
		if got, want := inRanges(a), allowlist.Private(a); got != want {
			t.Errorf("%s: excepted %v, the proxy refuses it %v", a, got, want)
		}
	}
	for _, s := range append(slices.Clone(mustRefuse), mustAdmit...) {
		check(netip.MustParseAddr(s))
	}
	rng := rand.New(rand.NewPCG(39, 39))
	for range 200000 { // the whole IPv4 space, and IPv6 where the special ranges are
		check(netip.AddrFrom4([4]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))}))
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		switch rng.IntN(4) {
		case 0:
			copy(b[:], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) // ::/96
		case 1:
			copy(b[:], []byte{0, 0x64, 0xff, 0x9b}) // NAT64 and local-use NAT64
			if rng.IntN(2) == 0 {
				copy(b[4:], make([]byte, 8))
			}
		case 2:
			b[0], b[1] = 0x20, 0x02 // 6to4
		case 3:
			b[0] |= 0xf0 // fc00::/7, fe80::/10, fec0::/10, ff00::/8 and around
		}
		check(netip.AddrFrom16(b))
	}
	for _, p := range all {
		first := p.Addr()
		b := first.AsSlice()
		for i := p.Bits(); i < len(b)*8; i++ {
			b[i/8] |= 0x80 >> (i % 8)
		}
		last, _ := netip.AddrFromSlice(b)
		check(first)
		check(last)
		check(first.Prev())
		check(last.Next())
		for range 200 {
			r := slices.Clone(first.AsSlice())
			for i := max(p.Bits()-8, 0); i < len(r)*8; i++ {
				if rng.IntN(2) == 1 {
					r[i/8] ^= 0x80 >> (i % 8)
				}
			}
			a, _ := netip.AddrFromSlice(r)
			check(a)
		}
	}
}
