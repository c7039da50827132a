package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// BenchmarkForwardGET: one plain-HTTP request through the proxy to a
// loopback server, a new connection each time (what a server without
// keep-alive pays per request), with a 64 KiB body.
func BenchmarkForwardGET(b *testing.B) {
	body := make([]byte, 64<<10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer up.Close()
	port := up.Listener.Addr().(*net.TCPAddr).Port
	allow, _ := allowlist.Parse([]string{fmt.Sprintf("127.0.0.1:%d", port)})
	p := &Proxy{Allow: allow}
	srv := httptest.NewServer(p)
	defer srv.Close()
	c := proxyClient(nil, srv.URL)
	c.Transport.(*http.Transport).DisableKeepAlives = true
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		resp, err := c.Get(up.URL)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
	}
}
