package credential

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGrantJSON: the plan's spelling of a grant, the hash's input, is
// stable: field names and omitted empties.
func TestGrantJSON(t *testing.T) {
	g := Grant{Name: "GITHUB_TOKEN", Field: "servers.gh.credentials.GITHUB_TOKEN", From: Source{Env: "GITHUB_TOKEN"},
		To: []string{"api.github.com:443"}, As: Injection{Header: "Authorization", Format: "Bearer {}"}}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"GITHUB_TOKEN","field":"servers.gh.credentials.GITHUB_TOKEN","from":{"env":"GITHUB_TOKEN"},"to":["api.github.com:443"],"as":{"header":"Authorization","format":"Bearer {}"}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// TestGrantCheckHeaders: a grant handed to the proxy by flag is refused
// where the compiler refuses it: a header that frames the request or
// speaks to a proxy, in any case (Proxy-Authorization is dropped after
// injection: the value would silently never be sent).
func TestGrantCheckHeaders(t *testing.T) {
	g := Grant{Name: "T", To: []string{"api.example.com:443"}, As: Injection{Header: "Authorization", Format: "Bearer {}"}}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Host", "proxy-authorization", "Transfer-Encoding", "CONNECTION", "Content-Length", "Upgrade"} {
		g.As = Injection{Header: h, Format: "{}"}
		if err := g.Check(); err == nil || !strings.Contains(err.Error(), "a credential cannot go there") {
			t.Errorf("header %s: %v", h, err)
		}
	}
}
