package compiler

import (
	"slices"
	"testing"
)

// TestEgressBaseline (#34): a server with an egress allowlist gets the CA
// certificates its TLS client verifies hosts with where its runtime's
// baseline lacks them — static has none, and its HTTPS through the proxy
// failed — and no more where the baseline holds them already.
func TestEgressBaseline(t *testing.T) {
	for _, c := range []struct {
		server string
		want   []string
	}{
		{`command: ["/app"], runtime: "static", network: allow: ["api.github.com:443"]`,
			[]string{"/etc/ssl/certs", "/etc/ca-certificates", "/etc/pki/tls/certs", "/etc/pki/ca-trust/extracted", "/usr/share/ca-certificates"}},
		{`command: ["/app"], runtime: "static"`, nil},
	} {
		plans, _, err := compileSrc(t, "version: \"v1\"\nservers: s: {"+c.server+"}\n")
		if err != nil {
			t.Fatalf("%s: %v", c.server, err)
		}
		if got := plans[0].Runtime.ReadOnly; !slices.Equal(got, c.want) {
			t.Errorf("%s: baseline %q, want %q", c.server, got, c.want)
		}
	}
	// system holds /usr and Debian's folders: only the others are added.
	plans, _, err := compileSrc(t, "version: \"v1\"\nservers: s: {command: [\"/app\"], network: allow: [\"api.github.com:443\"]}\n")
	if err != nil {
		t.Fatal(err)
	}
	ro := plans[0].Runtime.ReadOnly
	for _, p := range []string{"/etc/pki/tls/certs", "/etc/pki/ca-trust/extracted"} {
		if !slices.Contains(ro, p) {
			t.Errorf("system with egress: %s missing from %q", p, ro)
		}
	}
	if slices.Contains(ro, "/usr/share/ca-certificates") || len(ro) != len(slices.Compact(slices.Clone(ro))) {
		t.Errorf("system with egress: a path /usr already holds, or twice: %q", ro)
	}
}
