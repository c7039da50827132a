package allowlist

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestMatching(t *testing.T) {
	l, err := Parse([]string{"api.github.com:443", "*.example.com:443", "Bücher.example:8443", "127.0.0.1:9000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		port int
		ok   bool
	}{
		{"api.github.com", 443, true},
		{"API.GitHub.com.", 443, true},      // case and the trailing dot fold
		{"ａｐｉ.ｇｉｔｈｕｂ.ｃｏｍ", 443, true},       // fullwidth forms fold
		{"ap\u00adi.github.com", 443, true}, // a soft hyphen is ignored
		{"api.github.com。", 443, true},      // an ideographic full stop is a trailing dot too
		{"api.github.com", 80, false},
		{"github.com", 443, false},
		{"x.example.com", 443, true},
		{"a.b.example.com", 443, true},
		{"example.com", 443, false}, // a wildcard never matches its apex
		{"evilexample.com", 443, false},
		{"xn--bcher-kva.example", 8443, true}, // IDN, either spelling
		{"bücher.example", 8443, true},
		{"127.0.0.1", 9000, true},
	} {
		if _, ok := l.Match(c.host, c.port); ok != c.ok {
			t.Errorf("%s:%d: allowed=%v, want %v", c.host, c.port, ok, c.ok)
		}
	}
	for _, bad := range []string{"*:443", "*.com*:443", "host", "host:0", "host:70000", "*.1.2.3.4:80", "*.0.2.2:80", "*.2:80"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
	// inet_aton's numeric forms are addresses, not names: never matched,
	// suggested or listed as one (red team: 127.1:18080 was suggested).
	for _, h := range []string{"127.1", "2130706433", "0x7f000001", "0177.0.0.1", "api.0x1f", "a..b"} {
		if c, err := Canonical(h); err == nil {
			t.Errorf("Canonical(%q) = %q, want refused", h, c)
		}
	}
	for _, h := range []string{"1password.com", "x.1a", "0xdead.example", "１２７.０.０.１"} {
		if _, err := Canonical(h); err != nil {
			t.Errorf("Canonical(%q): %v", h, err)
		}
	}
	// A label idna refuses is quoted in its error: cut short, as the host.
	if _, err := Canonical("a" + strings.Repeat("\u05d0", 500) + ".test"); err == nil || len(err.Error()) > 300 {
		t.Errorf("a 1 KB label idna refuses: %d bytes of error", len(fmt.Sprint(err)))
	}
	// A wildcard matches names, never an address, whatever its suffix (a
	// list built without ParseRule's check).
	w := List{{Host: "*.0.2.2", Port: 80, Wildcard: true}}
	if _, ok := w.Match("192.0.2.2", 80); ok {
		t.Error("*.0.2.2 matched the address 192.0.2.2")
	}
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "192.168.0.1", "172.16.0.1", "169.254.169.254", "::1", "fe80::1", "100.64.0.1", "0.0.0.0",
		"0.0.0.1", "198.18.0.1", "240.0.0.1", "255.255.255.255", "fec0::1", "2002:7f00:1::1", "2002:a9fe:a9fe::"} {
		if !Private(netip.MustParseAddr(a)) {
			t.Errorf("%s is not private", a)
		}
	}
	if Private(netip.MustParseAddr("140.82.112.3")) || Private(netip.MustParseAddr("2002:8c52:7003::1")) {
		t.Error("a public address is private")
	}
}

// BenchmarkMatch: one decision against a 20-entry allowlist (a miss, the
// worst case: every rule is compared).
func BenchmarkMatch(b *testing.B) {
	var entries []string
	for i := range 10 {
		entries = append(entries, fmt.Sprintf("api%d.example.com:443", i), fmt.Sprintf("*.cdn%d.example.net:443", i))
	}
	l, err := Parse(entries)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := l.Match("Registry.npmjs.org.", 443); ok {
			b.Fatal("matched")
		}
	}
}
