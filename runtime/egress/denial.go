package egress

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strconv"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// DeniedHeader names, on every answer the proxy refuses, the rule the
// request missed (one of the Denied* constants).
const DeniedHeader = "X-Mcpolicy-Denied"

// The rules a request can miss: the value of DeniedHeader, of the body's
// and the log line's "denied".
const (
	DeniedNotListed  = "not-in-allowlist" // no entry names the host, on any port
	DeniedOtherPort  = "other-port"       // entries name the host, on other ports
	DeniedPrivate    = "private-address"  // an entry names the host, which resolves to a private address
	DeniedUnresolved = "cannot-resolve"   // an entry names the host, which does not resolve
	DeniedBadHost    = "not-a-host-name"  // the host has no canonical spelling
	DeniedUpstream   = "upstream"         // allowed; the destination refused or timed out (502, log only)
	DeniedStopping   = "stopping"         // the proxy was closing (log only)
	DeniedNotSandbox = "not-the-sandbox"  // the connection does not come from the sandbox (peer check)
)

// Denial is the body of a 403 the proxy answers a refused request with:
// what was asked, the rule it missed, and the smallest allowlist entry
// that would allow it (never a wildcard), or why there is none.
type Denial struct {
	Error  string `json:"error"`  // always "mcpolicy egress proxy: denied"
	Denied string `json:"denied"` // the rule missed: DeniedNotListed, DeniedOtherPort, ...
	Reason string `json:"reason"` // as in the decision log
	Method string `json:"method"`
	// Destination is host:port as the allowlist compares it (empty when
	// the host has no canonical spelling); Requested the host as sent,
	// when it differs.
	Destination string `json:"destination,omitempty"`
	Requested   string `json:"requested,omitempty"`
	// Rule is the entry that matched the name, when one did.
	Rule string `json:"rule,omitempty"`
	// Suggest is the smallest entry that would allow the request: exact
	// host:port, never a wildcard; empty when no entry can.
	Suggest string `json:"suggest,omitempty"`
	Hint    string `json:"hint"`
}

// explain fills d's Denied, Suggest and Hint for a refused request. d
// holds the method, host, port, rule and reason check decided.
func (p *Proxy) explain(d *Decision, private netip.Addr) {
	dest := net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
	switch {
	case d.Host == "":
		d.Denied = DeniedBadHost
		d.Hint = "the host is not a name or an address the allowlist can hold: no entry allows it"
	case private.IsValid():
		d.Denied = DeniedPrivate
		addr := net.JoinHostPort(private.String(), strconv.Itoa(d.Port))
		d.Hint = fmt.Sprintf("no entry naming a host allows a private answer (DNS rebinding): only an entry naming the address itself (%q) allows it, for a request to the address", addr)
	case d.Rule != "":
		d.Denied = DeniedUnresolved
		d.Hint = fmt.Sprintf("%q allows it: the name does not resolve here, no entry would change that", d.Rule)
	default:
		if r, err := allowlist.ParseRule(dest); err != nil || r.Wildcard { // cannot happen: Canonical refuses "*"
			d.Denied, d.Hint = DeniedBadHost, "not an exact host:port an entry can name"
			return
		}
		d.Suggest = dest
		if ports := list(p.Allow).portsOf(d.Host); len(ports) > 0 {
			d.Denied = DeniedOtherPort
			d.Hint = fmt.Sprintf("%s is allowed on port %s only: add %q to the server's network.allow (mcpolicy suggest --from-log LOG prints the patch)", d.Host, joinInts(ports), dest)
		} else {
			d.Denied = DeniedNotListed
			d.Hint = fmt.Sprintf("add %q to the server's network.allow (mcpolicy suggest --from-log LOG prints the patch)", dest)
		}
		if a, err := netip.ParseAddr(d.Host); err == nil && allowlist.Private(a) {
			d.Hint = fmt.Sprintf("%s is a private address: only an entry naming the address itself (%q) allows it (lint: EGRESS_PRIVATE)", d.Host, dest)
		}
	}
}

type list allowlist.List

// portsOf lists the ports entries allow a canonical host on.
func (l list) portsOf(host string) []int {
	var ports []int
	seen := map[int]bool{}
	for _, r := range l {
		if _, ok := (allowlist.List{r}).MatchCanonical(host, r.Port); ok && !seen[r.Port] {
			seen[r.Port] = true
			ports = append(ports, r.Port)
		}
	}
	sort.Ints(ports)
	return ports
}

func joinInts(ns []int) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += strconv.Itoa(n)
	}
	return s
}

// deny answers a refused request: 403, DeniedHeader, and the Denial as
// JSON.
func deny(w http.ResponseWriter, d Decision) {
	body := Denial{
		Error: "mcpolicy egress proxy: denied", Denied: d.Denied, Reason: d.Reason, Method: d.Method,
		Requested: d.Requested, Rule: d.Rule, Suggest: d.Suggest, Hint: d.Hint,
	}
	if d.Host != "" {
		body.Destination = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
	}
	b, _ := json.Marshal(body)
	h := w.Header()
	h.Set(DeniedHeader, d.Denied)
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	w.Write(append(b, '\n'))
}
