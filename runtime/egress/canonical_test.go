package egress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// TestDecisionLogCanonical: a request for a fullwidth or soft-hyphen
// spelling of an allowed name is decided on the canonical name, and the
// log says so: "host" is the name the rule matched and the resolver was
// asked, "requested" the spelling the client sent. A plain spelling has
// no "requested".
func TestDecisionLogCanonical(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "up") }))
	defer up.Close()
	port := up.Listener.Addr().(*net.TCPAddr).Port

	allow, err := allowlist.Parse([]string{
		fmt.Sprintf("api.test:%d", port),
		fmt.Sprintf("127.0.0.1:%d", port), // listed by address: reachable though loopback
	})
	if err != nil {
		t.Fatal(err)
	}
	var (
		log     bytes.Buffer
		askedMu sync.Mutex
		asked   []string
	)
	p := &Proxy{Allow: allow, Log: &log, Resolve: func(_ context.Context, h string) ([]netip.Addr, error) {
		askedMu.Lock()
		asked = append(asked, h)
		askedMu.Unlock()
		if h == "api.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, fmt.Errorf("no such host %s", h)
	}}
	srv := httptest.NewServer(p)
	defer srv.Close()

	// send writes one request line on a fresh connection and returns the
	// status code.
	send := func(line string) int {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "%s\r\nHost: x\r\n\r\n", line)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	fullwidth := "ａｐｉ．ｔｅｓｔ"        // U+FF41.. and the fullwidth full stop U+FF0E
	softHyphen := "ap\u00adi.test" // U+00AD, ignored by IDNA mapping
	fwAddr := "１２７.０.０.１"          // fullwidth digits: the address, once folded
	cases := []struct {
		line   string
		status int
		d      Decision
	}{
		// Allowed names that resolve to loopback: refused, after the rule matched.
		{fmt.Sprintf("CONNECT %s:%d HTTP/1.1", fullwidth, port), 403,
			Decision{Action: "deny", Method: "CONNECT", Host: "api.test", Requested: fullwidth, Port: port,
				Rule: fmt.Sprintf("api.test:%d", port), Reason: "api.test resolves to the private address 127.0.0.1", Denied: DeniedPrivate}},
		{fmt.Sprintf("GET http://%s:%d/ HTTP/1.1", softHyphen, port), 403,
			Decision{Action: "deny", Method: "GET", Host: "api.test", Requested: softHyphen, Port: port,
				Rule: fmt.Sprintf("api.test:%d", port), Reason: "api.test resolves to the private address 127.0.0.1", Denied: DeniedPrivate}},
		{fmt.Sprintf("GET http://API.test.:%d/ HTTP/1.1", port), 403,
			Decision{Action: "deny", Method: "GET", Host: "api.test", Requested: "API.test.", Port: port,
				Rule: fmt.Sprintf("api.test:%d", port), Reason: "api.test resolves to the private address 127.0.0.1", Denied: DeniedPrivate}},
		{fmt.Sprintf("GET http://api.test:%d/ HTTP/1.1", port), 403,
			Decision{Action: "deny", Method: "GET", Host: "api.test", Port: port,
				Rule: fmt.Sprintf("api.test:%d", port), Reason: "api.test resolves to the private address 127.0.0.1", Denied: DeniedPrivate}},
		{fmt.Sprintf("CONNECT ａｐｉ.test。:%d HTTP/1.1", port), 403,
			Decision{Action: "deny", Method: "CONNECT", Host: "api.test", Requested: "ａｐｉ.test。", Port: port,
				Rule: fmt.Sprintf("api.test:%d", port), Reason: "api.test resolves to the private address 127.0.0.1", Denied: DeniedPrivate}},
		// Not listed: the log still names the canonical host.
		{fmt.Sprintf("CONNECT ｄｅｎｉｅｄ.test:%d HTTP/1.1", port), 403,
			Decision{Action: "deny", Method: "CONNECT", Host: "denied.test", Requested: "ｄｅｎｉｅｄ.test", Port: port,
				Reason: "not in the allowlist", Denied: DeniedNotListed, Suggest: fmt.Sprintf("denied.test:%d", port)}},
		// An address in fullwidth digits is the listed address: allowed,
		// connected to, and logged as the address.
		{fmt.Sprintf("GET http://%s:%d/ HTTP/1.1", fwAddr, port), 200,
			Decision{Action: "allow", Method: "GET", Host: "127.0.0.1", Requested: fwAddr, Port: port,
				Rule: fmt.Sprintf("127.0.0.1:%d", port), Addr: "127.0.0.1"}},
	}
	for _, c := range cases {
		if got := send(c.line); got != c.status {
			t.Errorf("%s: status %d, want %d", c.line, got, c.status)
		}
	}
	var got []Decision
	for _, line := range strings.Split(strings.TrimSpace(p.logged(&log)), "\n") {
		var d Decision
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		d.Time, d.Up, d.Down, d.Hint = "", 0, 0, "" // the hint is prose: denial_test.go checks it
		got = append(got, d)
	}
	if len(got) != len(cases) {
		t.Fatalf("%d decisions for %d requests:\n%s", len(got), len(cases), p.logged(&log))
	}
	for i, c := range cases {
		if got[i] != c.d {
			t.Errorf("%s:\n got %+v\nwant %+v", c.line, got[i], c.d)
		}
	}
	if l := p.logged(&log); !strings.Contains(l, `"requested":"ａｐｉ．ｔｅｓｔ"`) || strings.Count(l, `"requested"`) != 6 {
		t.Errorf("the raw spellings are not in their own field:\n%s", l)
	}
	askedMu.Lock()
	defer askedMu.Unlock()
	for _, h := range asked {
		if h != "api.test" {
			t.Errorf("the resolver was asked %q: it must get the canonical name", h)
		}
	}
}
