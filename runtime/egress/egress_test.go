package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// logged reads the log under the proxy's lock.
func (p *Proxy) logged(b *bytes.Buffer) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return b.String()
}

// proxyClient sends requests through the proxy, resolving names through
// the proxy only (the client never resolves: like a server in a sandbox).
func proxyClient(_ testing.TB, proxyURL string) *http.Client {
	u, _ := url.Parse(proxyURL)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the test server's own certificate
}

// TestProxyAgainstLocalServers: loopback servers stand in for the
// internet; the test's resolver stands in for DNS.
func TestProxyAgainstLocalServers(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "plain ok") }))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tls ok") }))
	defer secure.Close()
	plainPort := plain.Listener.Addr().(*net.TCPAddr).Port
	securePort := secure.Listener.Addr().(*net.TCPAddr).Port

	var log bytes.Buffer
	allow, err := allowlist.Parse([]string{
		fmt.Sprintf("127.0.0.1:%d", plainPort), // listed by address: loopback allowed
		fmt.Sprintf("127.0.0.1:%d", securePort),
		fmt.Sprintf("rebind.test:%d", plainPort), // a name that resolves to loopback: refused
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Allow: allow, Log: &log, Resolve: func(ctx context.Context, h string) ([]netip.Addr, error) {
		if h == "rebind.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, fmt.Errorf("no such host %s", h)
	}}
	srv := httptest.NewServer(p)
	defer srv.Close()
	c := proxyClient(t, srv.URL)

	get := func(u string) (int, string) {
		resp, err := c.Get(u)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(plain.URL); code != 200 || body != "plain ok" {
		t.Errorf("allowed http: %d %q", code, body)
	}
	if code, body := get(secure.URL); code != 200 || body != "tls ok" {
		t.Errorf("allowed https via CONNECT: %d %q", code, body)
	}
	if code, _ := get(fmt.Sprintf("http://127.0.0.1:%d/", plainPort+1)); code != 403 {
		t.Errorf("denied port: %d", code)
	}
	if code, _ := get(fmt.Sprintf("http://rebind.test:%d/", plainPort)); code != 403 {
		t.Errorf("a name resolving to loopback: %d", code)
	}
	if code, _ := get(fmt.Sprintf("http://denied.test:%d/", plainPort)); code != 403 {
		t.Errorf("denied host: %d", code)
	}
	// A tunnel is logged when it closes, with its byte counts.
	c.CloseIdleConnections()
	var text string
	for range 100 {
		if text = p.logged(&log); strings.Count(text, "\n") >= 5 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []string{`"action":"allow","method":"GET","host":"127.0.0.1"`, `"action":"allow","method":"CONNECT"`,
		`"reason":"not in the allowlist"`, `resolves to the private address 127.0.0.1`, `"host":"denied.test"`, `"bytesDown":8`} {
		if !strings.Contains(text, want) {
			t.Errorf("the decision log lacks %s:\n%s", want, text)
		}
	}
}
