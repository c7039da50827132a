package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// TestDialHook: Proxy.Dial makes every connection to a destination, to
// the address the check allowed: a plain request's, a tunnel's and an
// intercepted one's; when it fails, the request fails (no other way out).
func TestDialHook(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "plain ok") }))
	t.Cleanup(plain.Close)
	p := plain.Listener.Addr().String()
	allow, err := allowlist.Parse([]string{r.bound, r.other, p})
	if err != nil {
		t.Fatal(err)
	}
	r.p.Allow = allow
	var (
		mu      sync.Mutex
		dialled []string
		refuse  bool
	)
	r.p.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, network+" "+addr)
		no := refuse
		mu.Unlock()
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("the dial has no deadline")
		}
		if no {
			return nil, errors.New("refused by the test's dial")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	took := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := dialled
		dialled = nil
		return out
	}
	urls := []string{"http://" + p + "/", "https://" + r.other + "/", "https://" + r.bound + "/"}
	want := []string{"tcp " + p, "tcp " + r.other, "tcp " + r.bound}

	for _, u := range urls {
		if resp, body := r.get(t, u, "Bearer "+testPlaceholder); resp.StatusCode != 200 {
			t.Fatalf("%s: %s %s", u, resp.Status, body)
		}
	}
	if got := took(); !slices.Equal(got, want) {
		t.Errorf("dialled %q, want %q", got, want)
	}
	if got := r.boundSeen.all(); !strings.Contains(got, "Bearer "+testValue) {
		t.Errorf("the intercepted request did not carry the value upstream:\n%s", got)
	}
	if got := r.otherSeen.all(); !strings.Contains(got, "Bearer "+testPlaceholder) {
		t.Errorf("the tunnel's upstream received:\n%s", got)
	}

	mu.Lock()
	refuse = true
	mu.Unlock()
	r.client.CloseIdleConnections()
	for _, u := range urls {
		resp, err := r.client.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway {
				t.Errorf("%s with the dial refusing: %s", u, resp.Status)
			}
		}
	}
	if got := took(); !slices.Equal(got, want) {
		t.Errorf("with the dial refusing, dialled %q, want %q", got, want)
	}
	r.client.CloseIdleConnections()
	r.p.Close()
	if log := r.p.logged(r.log); strings.Count(log, "refused by the test's dial") != 3 {
		t.Errorf("want 3 upstream denials naming the dial's error:\n%s", log)
	}
}
