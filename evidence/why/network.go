package why

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// destination answers host:port through the egress proxy's own matcher.
func (e *eval) destination(v *Verdict, t Target) {
	defer finish(v)
	host, _ := allowlist.Canonical(t.Host)
	egress := e.be.Egress(e.p)
	v.Stops = append(v.Stops, Stop{Rule: StopDirect, Detail: egress.Direct})
	if e.p.Network.Mode != "allowlist" {
		v.Stops = append(v.Stops, Stop{Rule: StopNetNone, Pos: e.netPos(), Detail: "network: none: no egress proxy, nothing leaves the sandbox"})
		return
	}
	rule, ok := e.p.Network.Rules().MatchCanonical(host, t.Port)
	if !ok {
		e.notAllowed(v, host, t.Port)
		return
	}
	var pos position.Pos
	for _, d := range e.p.Network.Allow {
		if d.Rule.String() == rule.String() {
			pos = d.Pos
		}
	}
	g := Grant{Kind: string(compiler.GrantEgress), Summary: "egress to " + rule.String(), Pos: e.m.pos(orPos(pos, e.p.Network.Pos))}
	e.allowed(v, host, rule, g, "through mcpolicy's egress proxy (HTTP CONNECT, or plain HTTP, to "+egress.Proxy+")")
	dest := net.JoinHostPort(host, strconv.Itoa(t.Port))
	for _, c := range e.p.Credentials {
		if len(v.Access) > 0 && slices.Contains(c.To, dest) {
			v.At = append(v.At, fmt.Sprintf("the proxy intercepts TLS to %s and injects credential %s as %s in place of its placeholder", dest, c.Name, compiler.InjectionSummary(c.As)))
		}
	}
}

// notAllowed says why the allowlist refuses host:port, and what comes
// close: a wildcard below the name, the same host on another port.
func (e *eval) notAllowed(v *Verdict, host string, port int) {
	rules := e.p.Network.Rules()
	detail := net.JoinHostPort(host, strconv.Itoa(port)) + " is not in the allowlist (" + strings.Join(e.p.Network.Entries(), ", ") + "): the proxy answers 403"
	for _, r := range rules {
		if r.Wildcard && r.Host == "*."+host && r.Port == port {
			detail += "; " + r.String() + " allows the names below " + host + ", never " + host + " itself"
		}
	}
	v.Stops = append(v.Stops, Stop{Rule: StopAllowlist, Pos: e.netPos(), Detail: detail})
	if a, err := netip.ParseAddr(host); err == nil && allowlist.Private(a) {
		v.Stops = append(v.Stops, Stop{Rule: StopPrivate, Detail: fmt.Sprintf("%s is a private address (loopback, private, link-local, CGNAT, multicast or unspecified): only an entry naming it exactly would allow it, never a name that resolves to it", a)})
	}
	for _, r := range rules {
		if r.Port != port {
			if _, ok := (allowlist.List{{Host: r.Host, Port: port, Wildcard: r.Wildcard, Addr: r.Addr}}).MatchCanonical(host, port); ok {
				v.Stops = append(v.Stops, Stop{Rule: StopPortMissing, Detail: fmt.Sprintf("%s allows port %d only", r.String(), r.Port)})
			}
		}
	}
}

// allowed answers for a host the allowlist's rule allows, at the proxy's
// address: the proxy still refuses a name that resolves to a private
// address the rule does not name.
func (e *eval) allowed(v *Verdict, host string, rule allowlist.Rule, g Grant, at string) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a.Unmap()}
	} else if e.m.Resolve != nil {
		var err error
		if addrs, err = e.m.Resolve(host); err != nil || len(addrs) == 0 {
			v.Via = append(v.Via, g)
			v.Stops = append(v.Stops, Stop{Rule: "cannot-resolve", Detail: fmt.Sprintf("allowed by %s, but %s does not resolve here: %v", rule, host, err)})
			return
		}
	} else {
		v.Access = append(v.Access, Connect)
		v.At = append(v.At, at)
		v.Via = append(v.Via, g)
		v.Stops = append(v.Stops, Stop{Rule: StopPrivate, Detail: fmt.Sprintf("only if %s resolves to a public address when the proxy looks it up: a loopback, private, link-local (cloud metadata), CGNAT, multicast or unspecified answer is refused (403) unless an entry names that address", host)})
		return
	}
	for _, a := range addrs {
		a = a.Unmap()
		if allowlist.Private(a) && rule.Addr != a {
			v.Stops = append(v.Stops, Stop{Rule: StopPrivate, Detail: fmt.Sprintf("%s matches %s (%s), but resolves to the private address %s: the proxy refuses it (403) unless an entry names that address", host, rule, g.Pos, a)})
			continue
		}
		v.Access = append(v.Access, Connect)
		v.At = append(v.At, at)
		v.Via = append(v.Via, g)
		if allowlist.Private(a) {
			v.Stops = append(v.Stops, Stop{Rule: "private-named", Detail: fmt.Sprintf("%s is private, allowed only because the entry names that address", a)})
		}
		break
	}
}

// netPos is the network field's position, else the server's (network:
// none is the default, written nowhere).
func (e *eval) netPos() position.Pos {
	if e.p.Network.Pos.Line > 0 {
		return e.m.pos(e.p.Network.Pos)
	}
	return e.m.pos(e.p.Pos)
}
