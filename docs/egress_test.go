package docs_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
)

// TestEgressAnswers holds docs/egress.md to what the proxy answers a
// server: a request the allowlist refuses gets 403, the X-Mcpolicy-Denied
// header naming the rule it missed and a JSON body (egress.Denial) whose
// error is "mcpolicy egress proxy: denied"; one it allows whose
// destination refuses the connection gets 502, with a body that does not
// say why (only the log does). The status line, the header and the body
// (or its error) of each must be in the doc, in a code span.
func TestEgressAnswers(t *testing.T) {
	// A port nobody listens on, on an address an entry names (a private
	// address is reachable only so).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	allow, err := allowlist.Parse([]string{"127.0.0.1:" + strconv.Itoa(closed)})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	proxy := &egress.Proxy{Allow: allow, Log: &log}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	defer proxy.Close()
	proxyURL, _ := url.Parse(srv.URL)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}

	doc, err := os.ReadFile(filepath.Join(root, "docs", "egress.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ") // code spans may wrap
	for _, c := range []struct {
		url    string
		status string
		body   string
	}{
		{"http://203.0.113.9/", "403 Forbidden", "mcpolicy egress proxy: denied"},
		{"http://127.0.0.1:" + strconv.Itoa(closed) + "/", "502 Bad Gateway", "mcpolicy egress proxy: upstream failed"},
	} {
		resp, err := client.Get(c.url)
		if err != nil {
			t.Fatalf("GET %s: %v", c.url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := strings.TrimSpace(string(b))
		wants := []string{"`" + resp.Status + "`", "`" + body + "`"}
		if resp.StatusCode == http.StatusForbidden {
			var d egress.Denial
			if err := json.Unmarshal(b, &d); err != nil {
				t.Errorf("GET %s: the 403's body is not an egress.Denial: %v: %s", c.url, err, b)
			}
			body = d.Error
			h := resp.Header.Get(egress.DeniedHeader)
			if h != egress.DeniedNotListed || d.Denied != h || d.Suggest != "203.0.113.9:80" {
				t.Errorf("GET %s: %s: %q, body %s", c.url, egress.DeniedHeader, h, b)
			}
			wants = []string{"`" + resp.Status + "`", "`" + body + "`", "`" + egress.DeniedHeader + ": " + h + "`"}
		}
		if resp.Status != c.status || body != c.body {
			t.Errorf("GET %s through the proxy: %s %q, the test expects %s %q", c.url, resp.Status, body, c.status, c.body)
		}
		for _, want := range wants {
			if !strings.Contains(text, want) {
				t.Errorf("docs/egress.md does not say %s (GET %s)", want, c.url)
			}
		}
	}
	if !strings.Contains(log.String(), `"reason":"upstream: `) {
		t.Errorf("the upstream failure is not logged with its reason:\n%s", log.String())
	}
}
