package egress

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// TestDenialBody: a refused request, CONNECT or plain HTTP, gets 403, the
// X-Mcpolicy-Denied header naming the rule it missed, and a JSON body
// with the destination and the smallest entry that would allow it; the
// log line carries the same fields.
func TestDenialBody(t *testing.T) {
	allow, err := allowlist.Parse([]string{"api.test:443", "rebind.test:443", "gone.test:443", "*.wild.test:443"})
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	p := &Proxy{Allow: allow, Log: &log, Resolve: func(_ context.Context, h string) ([]netip.Addr, error) {
		if h == "rebind.test" {
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
		}
		return nil, fmt.Errorf("no such host %s", h)
	}}
	srv := httptest.NewServer(p)
	defer srv.Close()
	defer p.Close()

	for _, c := range []struct {
		req                         string
		denied, dest, suggest, rule string
		hint                        string
	}{
		{"CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n", DeniedNotListed, "evil.test:443", "evil.test:443", "", `add "evil.test:443"`},
		{"GET http://evil.test/x HTTP/1.1\r\nHost: evil.test\r\n\r\n", DeniedNotListed, "evil.test:80", "evil.test:80", "", `add "evil.test:80"`},
		{"GET http://API.test:8443/ HTTP/1.1\r\nHost: API.test:8443\r\n\r\n", DeniedOtherPort, "api.test:8443", "api.test:8443", "", "api.test is allowed on port 443 only"},
		// Below a wildcard, on another port: exact, never a wildcard.
		{"CONNECT a.wild.test:8443 HTTP/1.1\r\nHost: a.wild.test:8443\r\n\r\n", DeniedOtherPort, "a.wild.test:8443", "a.wild.test:8443", "", "allowed on port 443 only"},
		{"CONNECT rebind.test:443 HTTP/1.1\r\nHost: rebind.test:443\r\n\r\n", DeniedPrivate, "rebind.test:443", "", "rebind.test:443", `only an entry naming the address itself ("10.1.2.3:443")`},
		{"CONNECT gone.test:443 HTTP/1.1\r\nHost: gone.test:443\r\n\r\n", DeniedUnresolved, "gone.test:443", "", "gone.test:443", "does not resolve"},
		{"CONNECT 10.9.9.9:22 HTTP/1.1\r\nHost: 10.9.9.9:22\r\n\r\n", DeniedNotListed, "10.9.9.9:22", "10.9.9.9:22", "", "private address: only an entry naming the address itself"},
	} {
		c2, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c2.Write([]byte(c.req))
		resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
		if err != nil {
			t.Fatalf("%q: %v", c.req, err)
		}
		var body Denial
		dec := json.NewDecoder(resp.Body)
		dec.DisallowUnknownFields()
		derr := dec.Decode(&body)
		resp.Body.Close()
		c2.Close()
		first, _, _ := strings.Cut(c.req, "\r\n")
		if resp.StatusCode != 403 || resp.Header.Get(DeniedHeader) != c.denied || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %s, %s: %q, Content-Type %q; want 403, %q", first, resp.Status, DeniedHeader, resp.Header.Get(DeniedHeader), resp.Header.Get("Content-Type"), c.denied)
		}
		if derr != nil {
			t.Errorf("%s: body: %v", first, derr)
			continue
		}
		if body.Error != "mcpolicy egress proxy: denied" || body.Denied != c.denied || body.Destination != c.dest ||
			body.Suggest != c.suggest || body.Rule != c.rule || !strings.Contains(body.Hint, c.hint) {
			t.Errorf("%s: body %+v\nwant denied %q, destination %q, suggest %q, rule %q, hint containing %q", first, body, c.denied, c.dest, c.suggest, c.rule, c.hint)
		}
		if strings.Contains(body.Suggest, "*") {
			t.Errorf("%s: a wildcard suggested: %q", first, body.Suggest)
		}
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d log lines, want 7:\n%s", len(lines), log.String())
	}
	var d Decision
	if err := json.Unmarshal([]byte(lines[0]), &d); err != nil {
		t.Fatal(err)
	}
	if d.Denied != DeniedNotListed || d.Suggest != "evil.test:443" || d.Hint == "" || d.Host != "evil.test" || d.Port != 443 {
		t.Errorf("log line: %+v", d)
	}
}
