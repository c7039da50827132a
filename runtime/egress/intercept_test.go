package egress

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

const (
	testValue       = "ghp_R3alT0kenValue0123456789abcdefABCD"
	testPlaceholder = "ghp_Pl4ceh0lderXyz9876543210zyxwvuZYXW"
)

// seen is what a stand-in upstream received: each request's
// Authorization header and query.
type seen struct {
	mu    sync.Mutex
	auth  []string
	query []string
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.query = append(s.query, r.URL.RawQuery)
}

func (s *seen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.auth, "\n") + "\n" + strings.Join(s.query, "\n")
}

// reflecting answers every request with its headers and query, in the
// body (streamed in small chunks, the value split across them) and in a
// header: an upstream a server could use to read back what the proxy
// put in.
func reflecting(s *seen) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Echo", r.Header.Get("Authorization")+" "+r.URL.RawQuery)
		echo, _ := json.Marshal(map[string]any{"headers": r.Header, "query": r.URL.RawQuery, "proto": r.Proto})
		for len(echo) > 0 {
			n := min(7, len(echo))
			w.Write(echo[:n])
			w.(http.Flusher).Flush()
			echo = echo[n:]
		}
	}
}

type interceptRig struct {
	p            *Proxy
	log          *bytes.Buffer
	bound, other string // host:port
	boundSeen    *seen
	otherSeen    *seen
	client       *http.Client
}

// newInterceptRig: a proxy with one credential bound to one TLS
// upstream, a second TLS upstream allowed but not bound, and a client
// that trusts the session CA (for the bound one) and the second
// upstream's own certificate (which it sees only through a tunnel).
func newInterceptRig(t *testing.T, as credential.Injection) *interceptRig {
	t.Helper()
	r := &interceptRig{boundSeen: &seen{}, otherSeen: &seen{}, log: &bytes.Buffer{}}
	b := httptest.NewUnstartedServer(reflecting(r.boundSeen))
	b.EnableHTTP2 = true // offered; the proxy speaks HTTP/1.1 to it all the same
	b.StartTLS()
	t.Cleanup(b.Close)
	o := httptest.NewTLSServer(reflecting(r.otherSeen))
	t.Cleanup(o.Close)
	r.bound, r.other = b.Listener.Addr().String(), o.Listener.Addr().String()
	allow, err := allowlist.Parse([]string{r.bound, r.other})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(b.Certificate())
	r.p = &Proxy{Allow: allow, Log: r.log, UpstreamRoots: roots, Credentials: []Credential{{
		Grant: credential.Grant{Name: "GITHUB_TOKEN", To: []string{r.bound}, As: as},
		Value: testValue, Placeholder: testPlaceholder,
	}}}
	ca, err := r.p.CACert()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r.p)
	t.Cleanup(srv.Close)
	trust := x509.NewCertPool()
	if !trust.AppendCertsFromPEM(ca) {
		t.Fatal("the session CA's PEM does not parse")
	}
	trust.AddCert(o.Certificate())
	u, _ := url.Parse(srv.URL)
	r.client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: trust}}}
	t.Cleanup(r.client.CloseIdleConnections)
	return r
}

func (r *interceptRig) get(t *testing.T, rawURL, auth string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", rawURL, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestInterceptInjectsHeader: the bound upstream receives the value, the
// server never reads it back (body, headers), the second allowed host
// receives the placeholder as sent (a tunnel: the client verified that
// host's own certificate), and the log names the injection, never the
// value or the placeholder.
func TestInterceptInjectsHeader(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
	for i := range 3 { // kept alive: one connection, several requests
		resp, body := r.get(t, "https://"+r.bound+"/user", "Bearer "+testPlaceholder)
		if resp.StatusCode != 200 || resp.Proto != "HTTP/1.1" {
			t.Fatalf("request %d: %s %s", i, resp.Proto, resp.Status)
		}
		if strings.Contains(body, testValue) || strings.Contains(resp.Header.Get("X-Echo"), testValue) {
			t.Fatalf("the value came back to the server: %s / %s", body, resp.Header.Get("X-Echo"))
		}
		if !strings.Contains(body, testPlaceholder) || !strings.Contains(resp.Header.Get("X-Echo"), testPlaceholder) {
			t.Errorf("the reflected header is not the placeholder: %s", body)
		}
		if !strings.Contains(body, `"proto":"HTTP/1.1"`) {
			t.Errorf("the upstream leg is not HTTP/1.1: %s", body)
		}
	}
	if got := r.boundSeen.all(); strings.Count(got, "Bearer "+testValue) != 3 || strings.Contains(got, testPlaceholder) {
		t.Errorf("the bound upstream received:\n%s", got)
	}
	// The second allowed host: a tunnel, the placeholder just bytes.
	r.get(t, "https://"+r.other+"/", "Bearer "+testPlaceholder)
	if got := r.otherSeen.all(); !strings.Contains(got, "Bearer "+testPlaceholder) || strings.Contains(got, testValue) {
		t.Errorf("the other host received:\n%s", got)
	}
	// Elsewhere on the bound host (another header, the format not
	// matched) the placeholder is not replaced.
	r.get(t, "https://"+r.bound+"/", "token "+testPlaceholder)
	if got := r.boundSeen.all(); strings.Contains(got, "token "+testValue) {
		t.Errorf("replaced outside the bound format:\n%s", got)
	}
	r.client.CloseIdleConnections()
	r.p.Close()
	log := r.p.logged(r.log)
	if strings.Contains(log, testValue) || strings.Contains(log, testPlaceholder) {
		t.Fatalf("the log holds the value or the placeholder:\n%s", log)
	}
	lines, _ := decisionsOf(log)
	injects, intercepts, tunnels := 0, 0, 0
	for _, d := range lines {
		switch {
		case d.Action == ActionInject:
			injects++
			if d.Credential != "GITHUB_TOKEN" || d.Method != "GET" || net.JoinHostPort(d.Host, fmt.Sprint(d.Port)) != r.bound {
				t.Errorf("inject line %+v", d)
			}
		case d.Method == "CONNECT" && d.Intercept:
			intercepts++
		case d.Method == "CONNECT":
			tunnels++
		}
	}
	if injects != 3 || intercepts != 1 || tunnels != 1 { // one connection kept alive to each
		t.Errorf("%d inject lines, %d intercepted CONNECTs, %d tunnels; want 3, 1, 1:\n%s", injects, intercepts, tunnels, log)
	}
}

// TestInterceptInjectsQuery: a query parameter holding the placeholder
// alone gets the value; the answer (which reflects the query) gets the
// placeholder back.
func TestInterceptInjectsQuery(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Query: "access_token"})
	_, body := r.get(t, "https://"+r.bound+"/x?a=1&access_token="+testPlaceholder+"&b=2&other="+testPlaceholder, "")
	want := "a=1&access_token=" + testValue + "&b=2&other=" + testPlaceholder
	if got := r.boundSeen.all(); !strings.Contains(got, want) {
		t.Errorf("the upstream received %q, want %q", got, want)
	}
	if strings.Contains(body, testValue) {
		t.Errorf("the value came back: %s", body)
	}
}

// TestInterceptUpstreamVerified: an upstream whose certificate the
// host's roots (here: the test's pool) do not vouch for is refused
// before the server is told the tunnel is up; nothing is sent to it.
func TestInterceptUpstreamVerified(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
	r.p.UpstreamRoots = x509.NewCertPool() // trusts nothing
	req, _ := http.NewRequest("GET", "https://"+r.bound+"/", nil)
	req.Header.Set("Authorization", "Bearer "+testPlaceholder)
	if resp, err := r.client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("an unverified upstream: %s", resp.Status)
	}
	if got := r.boundSeen.all(); strings.TrimSpace(got) != "" {
		t.Errorf("the unverified upstream received: %q", got)
	}
	r.p.Close()
	if log := r.p.logged(r.log); !strings.Contains(log, `"denied":"upstream"`) || !strings.Contains(log, "certificate") {
		t.Errorf("log:\n%s", log)
	}
}

// TestInterceptChunkedUpload: a request body of unknown length is
// streamed through (chunked), and its answer follows.
func TestInterceptChunkedUpload(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
	pr, pw := io.Pipe()
	go func() {
		for range 100 {
			pw.Write(bytes.Repeat([]byte("z"), 1000))
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", "https://"+r.bound+"/upload", pr)
	req.Header.Set("Authorization", "Bearer "+testPlaceholder)
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"Transfer-Encoding"`) && !strings.Contains(string(body), "headers") {
		t.Errorf("%s %s", resp.Status, body)
	}
	if got := r.boundSeen.all(); !strings.Contains(got, testValue) {
		t.Errorf("upload: the upstream received %q", got)
	}
}

// TestRedactorSplit: a value split across reads at every place, and
// read one byte at a time, still comes out as the placeholder; the
// length is kept.
func TestRedactorSplit(t *testing.T) {
	creds := []Credential{{Value: testValue, Placeholder: testPlaceholder}}
	in := "head " + testValue + " mid " + testValue + testValue + " tail " + testValue[:10]
	want := strings.ReplaceAll(in, testValue, testPlaceholder)
	for _, wrap := range []func(io.Reader) io.Reader{
		func(r io.Reader) io.Reader { return r },
		iotest.OneByteReader,
		iotest.HalfReader,
		iotest.DataErrReader,
	} {
		out, err := io.ReadAll(newRedactor(wrap(strings.NewReader(in)), creds))
		if err != nil || string(out) != want {
			t.Errorf("got %q (%v), want %q", out, err, want)
		}
	}
	// Large: more than the buffer, the value at a buffer's edge.
	big := strings.Repeat("x", 32<<10-5) + testValue + strings.Repeat("y", 70<<10) + testValue
	out, _ := io.ReadAll(newRedactor(strings.NewReader(big), creds))
	if string(out) != strings.ReplaceAll(big, testValue, testPlaceholder) {
		t.Error("a large body is not redacted exactly")
	}
}

func decisionsOf(log string) ([]Decision, error) {
	var out []Decision
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var d Decision
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// interceptedConn opens a CONNECT to the bound upstream and completes
// the server-side TLS handshake with the session CA, offering h2 first.
func (r *interceptRig) interceptedConn(t *testing.T, proxyAddr string) *tls.Conn {
	t.Helper()
	c, err := connect(proxyAddr, r.bound)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := r.p.CACert()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	host, _, _ := net.SplitHostPort(r.bound)
	tc := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: host, NextProtos: []string{"h2", "http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("ALPN chose %q on the intercepted leg, want http/1.1", p)
	}
	t.Cleanup(func() { tc.Close() })
	return tc
}

// TestInterceptRefusesWhatItCannotRead: HTTP/2's preface (prior
// knowledge) and a request head past the bound are answered with an
// error and the connection ends; the upstream gets nothing.
func TestInterceptRefusesWhatItCannotRead(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go r.p.Serve(ln)
	defer r.p.Close()
	for _, c := range []struct {
		name, send, want string
	}{
		{"h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/1.1 505 "},
		{"a head past the bound", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n", "HTTP/1.1 431 "},
		{"not HTTP", "\x16\x03\x01 nonsense\r\n\r\n", "HTTP/1.1 400 "},
	} {
		tc := r.interceptedConn(t, ln.Addr().String())
		go tc.Write([]byte(c.send))
		got, _ := io.ReadAll(io.LimitReader(tc, 4096))
		if !strings.HasPrefix(string(got), c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := r.boundSeen.all(); strings.TrimSpace(got) != "" {
		t.Errorf("the upstream received: %q", got)
	}
}

// TestInterceptUpgrade: a WebSocket-style upgrade on the bound host is
// carried both ways after its 101, the value still redacted on the way
// down.
func TestInterceptUpgrade(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(buf, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		fmt.Fprintf(buf, "you sent %s;", req.Header.Get("Authorization"))
		buf.Flush()
		line := make([]byte, 5)
		io.ReadFull(buf, line)
		fmt.Fprintf(buf, "echo %s", line)
		buf.Flush()
	}))
	up.TLS = &tls.Config{Certificates: []tls.Certificate{}}
	up.StartTLS()
	defer up.Close()
	target := up.Listener.Addr().String()
	r.p.Allow, _ = allowlist.Parse([]string{target})
	r.p.UpstreamRoots.AddCert(up.Certificate())
	r.p.Credentials[0].Grant.To = []string{target}
	r.bound = target
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go r.p.Serve(ln)
	defer r.p.Close()
	tc := r.interceptedConn(t, ln.Addr().String())
	fmt.Fprintf(tc, "GET /ws HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nhello", testPlaceholder)
	got, _ := io.ReadAll(io.LimitReader(tc, 4096))
	if strings.Contains(string(got), testValue) || !strings.Contains(string(got), "you sent Bearer "+testPlaceholder+";echo hello") {
		t.Errorf("got %q", got)
	}
}

// TestInterceptOtherHostHeader: a request on the bound connection that
// names another host (its Host header, or an absolute URL) gets no
// value: a front end shared with other sites would route it there.
func TestInterceptOtherHostHeader(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go r.p.Serve(ln)
	defer r.p.Close()
	for _, head := range []string{
		"GET / HTTP/1.1\r\nHost: attacker.example\r\n",
		"GET https://attacker.example/ HTTP/1.1\r\nHost: " + r.bound + "\r\n",
		"GET / HTTP/1.1\r\nHost: 127.0.0.1:1\r\n", // the bound host, another port
	} {
		tc := r.interceptedConn(t, ln.Addr().String())
		fmt.Fprintf(tc, "%sAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", head, testPlaceholder)
		io.ReadAll(tc)
	}
	// The control: the bound host by its Host header gets the value.
	tc := r.interceptedConn(t, ln.Addr().String())
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", r.bound, testPlaceholder)
	io.ReadAll(tc)
	got := r.boundSeen.all()
	if strings.Count(got, testValue) != 1 || strings.Count(got, "Bearer "+testPlaceholder) != 3 {
		t.Errorf("the upstream received:\n%s", got)
	}
}

// TestInterceptAnswers: an answer encoded despite the proxy's
// Accept-Encoding: identity is refused (a reflected value inside it
// could not be found); one of a given length, and one delimited by the
// connection's close, are relayed whole, redacted.
func TestInterceptAnswers(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Accept-Encoding") != "identity" {
			t.Errorf("Accept-Encoding %q reached the upstream", req.Header.Get("Accept-Encoding"))
		}
		if req.URL.Path == "/gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write([]byte("\x1f\x8b compressed " + req.Header.Get("Authorization")))
			return
		}
		if req.URL.Path == "/length" {
			msg := "you sent " + req.Header.Get("Authorization")
			w.Header().Set("Content-Length", fmt.Sprint(len(msg)))
			io.WriteString(w, msg)
			return
		}
		c, buf, _ := w.(http.Hijacker).Hijack()
		defer c.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nyou sent %s", req.Header.Get("Authorization"))
		buf.Flush()
	}))
	up.StartTLS()
	defer up.Close()
	target := up.Listener.Addr().String()
	r.p.Allow, _ = allowlist.Parse([]string{target})
	r.p.UpstreamRoots.AddCert(up.Certificate())
	r.p.Credentials[0].Grant.To = []string{target}
	resp, body := r.get(t, "https://"+target+"/gzip", "Bearer "+testPlaceholder)
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(body, testValue) || !strings.Contains(body, "Content-Encoding") {
		t.Errorf("an encoded answer: %s %q", resp.Status, body)
	}
	resp, body = r.get(t, "https://"+target+"/length", "Bearer "+testPlaceholder)
	if resp.StatusCode != 200 || body != "you sent Bearer "+testPlaceholder || resp.ContentLength != int64(len(body)) {
		t.Errorf("an answer of a given length: %s %d %q", resp.Status, resp.ContentLength, body)
	}
	resp, body = r.get(t, "https://"+target+"/close", "Bearer "+testPlaceholder)
	if resp.StatusCode != 200 || body != "you sent Bearer "+testPlaceholder {
		t.Errorf("an answer ended by the close: %s %q", resp.Status, body)
	}
}
