// Package allowlist is the data of a network allowlist: a destination rule,
// its parsing and canonical spelling, matching, and the private ranges a
// name must never lead to. The compiler, lint, diff and emitters read it
// without the proxy (package egress), which enforces it.
package allowlist

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Rule is one allowed destination: a host (or *.suffix, or an address) and
// a port.
type Rule struct {
	Host     string // canonical: lower case, no trailing dot, punycode; "*.x.com" for a wildcard
	Port     int
	Wildcard bool
	Addr     netip.Addr // set when the rule names an address
}

func (r Rule) String() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

// Canonical spells a host name as the allowlist compares it: IDNA to
// punycode (UTS #46 mapping for lookup: fullwidth and other compatibility
// forms folded to ASCII, soft hyphens and zero-width characters removed),
// lower case, no trailing dot (an ideographic or fullwidth full stop
// included: the dot is trimmed again after mapping).
//
// It refuses what no destination is spelled as, whoever wrote it (a
// server's request, a log line): an IPv6 address with a zone ("%eth0":
// any bytes, quotes and newlines included, that the address would carry
// into a log, an entry, a patch) and a name longer than DNS allows
// (MaxHostLen), without reading more than maxRawHost bytes of it.
func Canonical(host string) (string, error) {
	if len(host) > maxRawHost {
		return "", fmt.Errorf("host %s: %d bytes: longer than any host name", quoteShort(host), len(host))
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "" {
		return "", fmt.Errorf("empty host")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("host %s: an address with a zone (%%...) is not a destination", quoteShort(host))
		}
		return h, nil
	}
	a, err := idna.Lookup.ToASCII(h)
	if err != nil {
		// idna's message quotes the label whole: the server's text, cut
		// as short as the host it came in.
		return "", fmt.Errorf("host %s: %s", quoteShort(host), clipText(err.Error(), 160))
	}
	if a = strings.TrimSuffix(a, "."); a == "" {
		return "", fmt.Errorf("host %q: empty after mapping", host)
	}
	if len(a) > MaxHostLen {
		return "", fmt.Errorf("host %s: %d characters: a host name has at most %d", quoteShort(host), len(a), MaxHostLen)
	}
	if _, err := netip.ParseAddr(a); err == nil {
		return a, nil // fullwidth digits and dots fold to an address
	}
	labels := strings.Split(a, ".")
	if slices.Contains(labels, "") {
		return "", fmt.Errorf("host %s: an empty label", quoteShort(host))
	}
	// No top-level domain is numeric (RFC 3696 2): 127.1, 2130706433 and
	// 0x7f000001 are the address 127.0.0.1 to inet_aton, which resolvers
	// and clients still call.
	if numericLabel(labels[len(labels)-1]) {
		return "", fmt.Errorf("host %s: a numeric form of an address, not a name: write the address as a.b.c.d or [v6]", quoteShort(host))
	}
	return a, nil
}

// numericLabel: all decimal digits, or 0x and hex digits.
func numericLabel(l string) bool {
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return strings.Trim(l, "0123456789") == ""
}

// MaxHostLen is the longest host name DNS can carry (RFC 1035, in its
// dotted spelling without the trailing dot).
const MaxHostLen = 253

// maxRawHost bounds a host as written, before mapping: a name of
// MaxHostLen in punycode is at most four bytes a character as Unicode.
const maxRawHost = 4 * 256

// quoteShort quotes a host for an error, cut to 64 bytes (at a character)
// when longer.
// clipText cuts s to at most n bytes, at a character.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func quoteShort(s string) string {
	const n = 64
	if len(s) <= n {
		return strconv.Quote(s)
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strconv.Quote(s[:i]) + "..."
}

// ParseRule reads "host:port", "*.suffix:port" or "ip:port" ("[v6]:port").
// A bare "*" is refused: it would be the whole network.
func ParseRule(s string) (Rule, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return Rule{}, fmt.Errorf("egress %q: want host:port", s)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return Rule{}, fmt.Errorf("egress %q: port must be 1-65535", s)
	}
	r := Rule{Port: p}
	if host == "*" {
		return Rule{}, fmt.Errorf("egress %q: a bare \"*\" would be the whole network: list the hosts", s)
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.Wildcard = true
		host = rest
	}
	if strings.Contains(host, "*") || host == "" {
		return Rule{}, fmt.Errorf("egress %q: only a leading \"*.\" wildcard is allowed", s)
	}
	c, err := Canonical(host)
	if err != nil {
		return Rule{}, fmt.Errorf("egress %q: %v", s, err)
	}
	if a, err := netip.ParseAddr(c); err == nil {
		if r.Wildcard {
			return Rule{}, fmt.Errorf("egress %q: a wildcard needs a name", s)
		}
		r.Addr = a.Unmap()
	}
	// No top-level domain is all digits (RFC 3696 2): *.0.2.2 would be
	// a wildcard over IPv4 addresses, not names.
	if last := c[strings.LastIndex(c, ".")+1:]; r.Wildcard && strings.Trim(last, "0123456789") == "" {
		return Rule{}, fmt.Errorf("egress %q: a wildcard needs a name (%q is no top-level domain: the entry would match addresses)", s, last)
	}
	r.Host = c
	if r.Wildcard {
		r.Host = "*." + c
	}
	return r, nil
}

// List is a plan's egress rules.
type List []Rule

// Parse reads every entry.
func Parse(entries []string) (List, error) {
	var l List
	for _, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return nil, err
		}
		l = append(l, r)
	}
	return l, nil
}

// Match finds the rule allowing host:port. A wildcard matches names below
// its suffix, never the suffix itself: *.x.com does not allow x.com.
func (l List) Match(host string, port int) (Rule, bool) {
	h, err := Canonical(host)
	if err != nil {
		return Rule{}, false
	}
	return l.MatchCanonical(h, port)
}

// MatchCanonical is Match for a host already spelled by Canonical: the
// proxy canonicalizes once, to log the spelling it matched.
func (l List) MatchCanonical(h string, port int) (Rule, bool) {
	for _, r := range l {
		if r.Port != port {
			continue
		}
		if r.Wildcard {
			if _, err := netip.ParseAddr(h); err == nil {
				continue // a wildcard matches names, never an address
			}
			if strings.HasSuffix(h, r.Host[1:]) && len(h) > len(r.Host)-1 {
				return r, true
			}
			continue
		}
		if h == r.Host {
			return r, true
		}
	}
	return Rule{}, false
}

// Private reports whether an address is loopback, private, link-local
// (cloud metadata 169.254.169.254 included), unspecified or multicast:
// somewhere a name on the internet must never lead.
//
// An IPv6 address that carries an IPv4 one to a translator is private
// when that one is: NAT64's well-known prefix 64:ff9b::/96 (an IPv6-only
// network's translator delivers 64:ff9b::a9fe:a9fe to 169.254.169.254);
// a local-use translation prefix (64:ff9b:1::/48) and the deprecated
// IPv4-compatible ::/96 are private whatever they carry.
func Private(a netip.Addr) bool {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		return Private(netip.AddrFrom4([4]byte(b[12:])))
	}
	if sixToFour.Contains(a) { // 2002:AABB:CCDD::/48 carries A.B.C.D
		b := a.As16()
		return Private(netip.AddrFrom4([4]byte(b[2:6])))
	}
	for _, p := range reserved {
		if p.Contains(a) {
			return true
		}
	}
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() ||
		cgnat.Contains(a) || nat64Local.Contains(a) || v4Compatible.Contains(a)
}

// reserved are ranges no internet host holds: "this network" (Linux
// connects 0.0.0.0/8 to the host itself), the benchmarking network, the
// former class E with the broadcast address, and IPv6 site-local.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("fec0::/10"),
}

var (
	cgnat        = netip.MustParsePrefix("100.64.0.0/10")  // carrier-grade NAT
	nat64        = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215
	v4Compatible = netip.MustParsePrefix("::/96")          // RFC 4291 2.5.5.1, deprecated
	sixToFour    = netip.MustParsePrefix("2002::/16")      // RFC 3056
)
