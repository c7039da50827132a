package egress

// Red-team tests: the server behind the proxy is hostile and controls
// every byte of what it asks for (CONNECT targets, absolute-form URLs,
// methods). Each test asserts the attack fails: the answer's header is
// one of the Denied* constants, the body and the log line are one valid
// JSON line each, nothing suggested is more than the exact destination,
// and nothing the server sends makes a log line unbounded.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/syncbuf"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// redteamProxy is a proxy allowing api.test:443 and *.wild.test:443,
// where every name resolves to a public address, logging to a locked
// buffer.
func redteamProxy(t *testing.T) (*Proxy, *syncbuf.Buffer, string) {
	t.Helper()
	allow, err := allowlist.Parse([]string{"api.test:443", "*.wild.test:443"})
	if err != nil {
		t.Fatal(err)
	}
	log := &syncbuf.Buffer{}
	p := &Proxy{Allow: allow, Log: log, Resolve: func(_ context.Context, h string) ([]netip.Addr, error) {
		return nil, fmt.Errorf("no such host") // never connect anywhere from a test
	}}
	return p, log, serve(t, p)
}

// serve serves p as mcpolicy run and egress-proxy do (Serve: its bounds
// on connections and headers), on loopback, until the test ends.
func serve(t *testing.T, p *Proxy) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(p.Close)
	return ln.Addr().String()
}

// send writes a raw request and reads the answer (nil when the server
// refused to parse it and closed the connection).
func send(t *testing.T, addr, req string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go c.Write([]byte(req)) // a huge request: the server may answer before reading it all
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil
	}
	return resp
}

var deniedValues = map[string]bool{
	DeniedNotListed: true, DeniedOtherPort: true, DeniedPrivate: true, DeniedUnresolved: true,
	DeniedBadHost: true, DeniedUpstream: true, DeniedStopping: true, DeniedNotSandbox: true,
}

// maxLogLine bounds one decision line, whatever the request: a line a
// reader (mcpolicy suggest) cannot hold would hide every decision.
const maxLogLine = 4 << 10

// checkAnswer: a 403 has exactly one X-Mcpolicy-Denied, a known value, no
// header the request named, and a one-line JSON body whose suggestion,
// if any, is an exact host:port.
func checkAnswer(t *testing.T, what string, resp *http.Response) *Denial {
	t.Helper()
	if resp == nil {
		return nil // refused by the HTTP server itself: nothing reached the proxy
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
			return nil // refused by the HTTP server: nothing reached the proxy
		}
		t.Errorf("%s: status %d, want 403, 400 or 431", what, resp.StatusCode)
		return nil
	}
	if vs := resp.Header.Values(DeniedHeader); len(vs) != 1 || !deniedValues[vs[0]] {
		t.Errorf("%s: %s: %q", what, DeniedHeader, vs)
	}
	for k := range resp.Header {
		switch k {
		case DeniedHeader, "Content-Type", "X-Content-Type-Options", "Date", "Content-Length", "Connection":
		default:
			t.Errorf("%s: unexpected answer header %q", what, k)
		}
	}
	var body strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		body.Write(sc.Bytes())
	}
	if lines != 1 {
		t.Errorf("%s: body of %d lines", what, lines)
	}
	var d Denial
	if err := json.Unmarshal([]byte(body.String()), &d); err != nil {
		t.Errorf("%s: body is not JSON: %v", what, err)
		return nil
	}
	if d.Suggest != "" {
		r, err := allowlist.ParseRule(d.Suggest)
		if err != nil || r.Wildcard || r.String() != d.Suggest || strings.Contains(d.Suggest, "%") {
			t.Errorf("%s: suggests %q (%v)", what, d.Suggest, err)
		}
	}
	return &d
}

// checkLog: every line is one Decision, bounded, a deny for each request
// that reached the proxy, and none allows anything.
func checkLog(t *testing.T, log string) []Decision {
	t.Helper()
	var ds []Decision
	for _, l := range strings.SplitAfter(log, "\n") {
		if l == "" {
			continue
		}
		if !strings.HasSuffix(l, "\n") {
			t.Errorf("a log line without its newline: %.200q", l)
		}
		if len(l) > maxLogLine {
			t.Errorf("a log line of %d bytes: %.200q", len(l), l)
		}
		var d Decision
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Errorf("a log line is not JSON: %v: %.200q", err, l)
			continue
		}
		if d.Action != "deny" {
			t.Errorf("allowed: %.200q", l)
		}
		if !deniedValues[d.Denied] {
			t.Errorf("denied %q: %.200q", d.Denied, l)
		}
		if d.Suggest != "" {
			if r, err := allowlist.ParseRule(d.Suggest); err != nil || r.Wildcard || r.String() != d.Suggest {
				t.Errorf("log suggests %q: %.200q", d.Suggest, l)
			}
		}
		ds = append(ds, d)
	}
	return ds
}

// TestRedteamHostileTargets: CONNECT targets and absolute-form URLs
// carrying syntax of every format the log and the policy are written in,
// IPv6 zones with quotes and shell syntax, bidi overrides, ports out of
// range: each is denied with a known header, a one-line JSON body and one
// bounded JSON log line, and nothing is suggested but an exact
// host:port without a zone.
func TestRedteamHostileTargets(t *testing.T) {
	_, log, addr := redteamProxy(t)
	targets := []string{
		`evil.test:443`,
		`[2606:4700::1%25a"b]:443`,                 // a zone: any bytes the URL parser lets through
		`[2606:4700::1%25$(id)'x,]:443`,            // shell and list syntax in a zone
		`[2606:4700::1%25` + "\u202e" + `moc]:443`, // a bidi override in a zone
		`[2606:4700::1%25evil.test]:443`,
		`[::ffff:169.254.169.254]:80`,
		`[fe80::1%25eth0]:80`,
		"a\u202egnp.test:443",
		"xn--80ak6aa92e.com:443", // a homoglyph of apple.com, in punycode
		"аpple.com:443",          // ... and as sent
		`$(id):443`,
		`evil.test:99999`,
		`evil.test:0`,
		`evil.test:0443`,
		`*.test:443`,
		`api.test.:443`,
		`API.TEST:22`,
		`a.wild.test:8443`,
		`{a}:443`,
		`a]:443`,
	}
	for _, target := range targets {
		d := checkAnswer(t, "CONNECT "+target, send(t, addr, "CONNECT "+target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		if d != nil && strings.Contains(target, "%25") && d.Suggest != "" {
			t.Errorf("CONNECT %s: suggests %q: a zone is not a destination", target, d.Suggest)
		}
		d = checkAnswer(t, "GET "+target, send(t, addr, "GET http://"+target+"/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		if d != nil && strings.Contains(target, "%25") && d.Suggest != "" {
			t.Errorf("GET %s: suggests %q: a zone is not a destination", target, d.Suggest)
		}
	}
	// Header injection attempts in the Host header and the target.
	for _, req := range []string{
		"CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test\r\nX-Mcpolicy-Denied: forged\r\nConnection: close\r\n\r\n",
		"GET http://evil.test/%0d%0aX-Mcpolicy-Denied:%20forged HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n",
		"GET http://evil.test%0d%0aSet-Cookie:a=b/ HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n",
	} {
		checkAnswer(t, fmt.Sprintf("%q", req), send(t, addr, req))
	}
	ds := checkLog(t, log.String())
	if len(ds) == 0 {
		t.Fatal("nothing logged")
	}
	for _, d := range ds {
		if strings.Contains(d.Host, "%") || strings.Contains(d.Suggest, "%") {
			t.Errorf("a zone was decided on as a host: %+v", d)
		}
		if d.Host != "" && !hostChars(d.Host) {
			t.Errorf("the logged host %q is not a canonical spelling", d.Host)
		}
	}
}

// hostChars: what a canonical host may hold (a name in punycode, or an
// address without a zone).
func hostChars(h string) bool {
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == ':') {
			return false
		}
	}
	return true
}

// TestRedteamHugeRequests: a near-1 MiB host (valid labels, or garbage),
// a near-1 MiB method: the proxy answers, and the log line stays bounded
// (it holds a prefix of what was asked and says how long it was).
func TestRedteamHugeRequests(t *testing.T) {
	_, log, addr := redteamProxy(t)
	// Just under the proxy's header bound (maxHeaderBytes), so each
	// reaches the proxy and is decided and logged.
	long := strings.Repeat("a.", 7<<10) + "test"
	for _, req := range []string{
		"CONNECT " + long + ":443 HTTP/1.1\r\nConnection: close\r\n\r\n",
		"GET http://" + long + "/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"CONNECT " + strings.Repeat("ü", 7<<10) + ":443 HTTP/1.1\r\nConnection: close\r\n\r\n",
		"CONNECT " + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 63) + ".test:443 HTTP/1.1\r\nConnection: close\r\n\r\n", // 260 bytes: longer than DNS allows
		strings.Repeat("M", 14<<10) + " http://evil.test/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		// Past the bound: the HTTP server refuses it (431) before the proxy sees it.
		"CONNECT " + strings.Repeat("a.", 450<<10) + "test:443 HTTP/1.1\r\nConnection: close\r\n\r\n",
	} {
		start := time.Now()
		checkAnswer(t, fmt.Sprintf("%.60q (%d bytes)", req, len(req)), send(t, addr, req))
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%.60q: %v", req, d)
		}
	}
	ds := checkLog(t, log.String())
	if len(ds) < 4 {
		t.Errorf("%d decisions logged, want at least 4", len(ds))
	}
	for _, d := range ds {
		if len(d.Host) > allowlist.MaxHostLen {
			t.Errorf("a name longer than DNS allows was decided on: %.100q", d.Host)
		}
		if d.Suggest != "" && d.Suggest != "evil.test:80" {
			t.Errorf("suggested: %.100q", d.Suggest)
		}
	}
}

// TestRedteamFloodLinesWhole: many concurrent denials; every log line is
// whole (no interleaving), one per request.
func TestRedteamFloodLinesWhole(t *testing.T) {
	_, log, addr := redteamProxy(t)
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			fmt.Fprintf(c, "CONNECT h%d.evil.test:443 HTTP/1.1\r\nConnection: close\r\n\r\n", i)
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if ds := checkLog(t, log.String()); len(ds) != n {
		t.Errorf("%d decisions, want %d", len(ds), n)
	}
}

// TestRedteamNAT64Rebinding: an allowed name the server controls the DNS
// of answers with a private or metadata address embedded in an IPv6
// translation prefix (NAT64's 64:ff9b::/96, its local-use 64:ff9b:1::/48,
// an IPv4-compatible ::a.b.c.d). On a network with NAT64 (IPv6-only
// clouds) the translator delivers it to the IPv4 address: it is refused
// as private, like the address itself, and never suggested.
func TestRedteamNAT64Rebinding(t *testing.T) {
	answers := map[string]string{
		"meta.test":   "64:ff9b::a9fe:a9fe", // 169.254.169.254
		"lan.test":    "64:ff9b::a00:5",     // 10.0.0.5
		"local.test":  "64:ff9b:1::a00:5",   // a local-use translator
		"compat.test": "::a9fe:a9fe",        // IPv4-compatible
	}
	var entries []string
	for h := range answers {
		entries = append(entries, h+":80")
	}
	allow, err := allowlist.Parse(entries)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncbuf.Buffer{}
	p := &Proxy{Allow: allow, Log: log, Resolve: func(_ context.Context, h string) ([]netip.Addr, error) {
		if a, ok := answers[h]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return nil, fmt.Errorf("no such host")
	}}
	srv := httptest.NewServer(p)
	defer p.Close()
	defer srv.Close()
	for h, a := range answers {
		resp := send(t, srv.Listener.Addr().String(), "CONNECT "+h+":80 HTTP/1.1\r\nConnection: close\r\n\r\n")
		if resp == nil || resp.Header.Get(DeniedHeader) != DeniedPrivate {
			t.Errorf("%s (%s): answered %v, want a %s refusal", h, a, resp, DeniedPrivate)
		}
		if resp != nil {
			resp.Body.Close()
		}
		// By address: private, so suggested only when named.
		resp = send(t, srv.Listener.Addr().String(), "CONNECT ["+a+"]:80 HTTP/1.1\r\nConnection: close\r\n\r\n")
		if d := checkAnswer(t, a, resp); d == nil || !strings.Contains(d.Hint, "private address") {
			t.Errorf("[%s]:80: %+v, want the private-address hint", a, d)
		}
	}
	for _, d := range checkLog(t, log.String()) {
		if d.Addr != "" {
			t.Errorf("connected to %s: %+v", d.Addr, d)
		}
	}
}

// TestRedteamLogIsShellInert: the host and the method a server asks for
// are logged; where the log is appended is a path the server's grants
// may cover (mcpolicy run --log FILE), and a symlink it plants there
// makes the next run append to a file a shell reads (~/.bashrc). Each
// line, read by sh, must run nothing: "$(...)" in a host, "`...`" in a
// method (both token characters HTTP lets through) are written escaped.
func TestRedteamLogIsShellInert(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	_, log, addr := redteamProxy(t)
	for _, req := range []string{
		"CONNECT $(touch$IFS'pwned1'):443 HTTP/1.1\r\nConnection: close\r\n\r\n",
		"GET http://$(touch$IFS'pwned2')/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"`touch$IFS'pwned3'` http://evil.test/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET http://[2606:4700::1%25$(touch$IFS'pwned4')]/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	} {
		if resp := send(t, addr, req); resp != nil {
			resp.Body.Close()
		}
	}
	lines := log.String()
	if strings.Count(lines, "\n") != 4 {
		t.Fatalf("want 4 decisions:\n%s", lines)
	}
	checkLog(t, lines)
	dir := t.TempDir()
	rc := filepath.Join(dir, "rc")
	if err := os.WriteFile(rc, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, rc)
	cmd.Dir = dir
	cmd.Run() // "command not found", line after line
	for i := 1; i <= 4; i++ {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("pwned%d", i))); err == nil {
			t.Errorf("sh reading the log ran the server's command %d:\n%s", i, lines)
		}
	}
	if strings.ContainsAny(lines, "$`") {
		t.Errorf("the log holds $ or `:\n%s", lines)
	}
}

// TestRedteamHostAddress: an allowed name that resolves to an address of
// the proxy's own machine that is not private (a public address on eth0,
// a global IPv6 one) reached every service of the host listening on
// 0.0.0.0 (a red team read a host-only secret through api.test). It is
// refused like a private answer, unless an entry names the address; the
// control, the machine's addresses not looked at, lets it through.
func TestRedteamHostAddress(t *testing.T) {
	own := netip.MustParseAddr("198.51.100.9") // stands for eth0's public address
	allow, err := allowlist.Parse([]string{"api.test:80", "198.51.100.9:81"})
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(_ context.Context, h string) ([]netip.Addr, error) { return []netip.Addr{own}, nil }
	for _, c := range []struct {
		name  string
		local func(netip.Addr) bool
		want  bool // refused as the machine's
	}{
		{"checked", func(a netip.Addr) bool { return a == own }, true},
		{"control: not looked at", func(netip.Addr) bool { return false }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &Proxy{Allow: allow, Resolve: resolve, Local: c.local}
			_, d, ok := p.check(context.Background(), "CONNECT", "api.test", 80)
			if refused := !ok && d.Denied == DeniedPrivate && strings.Contains(d.Reason, "an address of this machine"); refused != c.want {
				t.Errorf("api.test -> %s: ok %v, %+v; want refused %v", own, ok, d, c.want)
			}
			if _, d, ok := p.check(context.Background(), "CONNECT", "198.51.100.9", 81); !ok {
				t.Errorf("an entry naming the address: refused %+v", d)
			}
		})
	}
	// HostAddress knows every address of this machine's interfaces, and
	// not one it does not hold.
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok && !HostAddress(a) {
				t.Errorf("HostAddress(%s) = false for an interface's address", a)
			}
		}
	}
	if HostAddress(netip.MustParseAddr("198.51.100.9")) {
		t.Errorf("HostAddress(198.51.100.9) = true: TEST-NET-2 on an interface here?")
	}
}

// TestRedteamLogIsTerminalInert: JSON leaves C1 controls and format
// characters raw, and a terminal showing the log (tail -f) acts on them:
// U+009D 52 sets the clipboard, U+009B clears the screen, U+202E turns
// the line around. A server put them in the hosts it asked for; each is
// written \uXXXX, and decodes back to what was asked.
func TestRedteamLogIsTerminalInert(t *testing.T) {
	_, log, addr := redteamProxy(t)
	hosts := []string{
		"a\u009d52;c;cHduZWQ=\u009cb.test",
		"\u009b2J.test",
		"api\u202etset.evil",
		"x\u00ady\u200d.test",
	}
	for _, h := range hosts {
		if resp := send(t, addr, "CONNECT "+h+":443 HTTP/1.1\r\nConnection: close\r\n\r\n"); resp != nil {
			resp.Body.Close()
		}
	}
	lines := log.String()
	if strings.Count(lines, "\n") != len(hosts) {
		t.Fatalf("want %d decisions:\n%s", len(hosts), lines)
	}
	for _, r := range lines {
		if unsafeRune(r) {
			t.Fatalf("the log holds %U raw:\n%q", r, lines)
		}
	}
	got := map[string]bool{}
	for _, d := range checkLog(t, lines) {
		got[d.Requested] = true
	}
	for _, h := range hosts {
		if !got[h] {
			t.Errorf("%q: not in the log as asked (decoded):\n%s", h, lines)
		}
	}
}

// TestRedteamChunkedUploadIsCounted: bytesUp is what was carried up; a
// chunked body has no Content-Length, and was logged as -1 (red team: a
// 12,813-byte upload hidden from the log).
func TestRedteamChunkedUploadIsCounted(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	}))
	defer up.Close()
	a := netip.MustParseAddrPort(up.Listener.Addr().String())
	allow, err := allowlist.Parse([]string{a.String()})
	if err != nil {
		t.Fatal(err)
	}
	log := &syncbuf.Buffer{}
	p := &Proxy{Allow: allow, Log: log}
	srv := httptest.NewServer(p)
	defer srv.Close()
	body := strings.Repeat("x", 12813)
	req := fmt.Sprintf("POST http://%s/ HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", a, a, len(body), body)
	if resp := send(t, srv.Listener.Addr().String(), req); resp != nil {
		resp.Body.Close()
	}
	p.Close()
	var d Decision
	if err := json.Unmarshal([]byte(log.String()), &d); err != nil || d.Action != "allow" || d.Up != int64(len(body)) {
		t.Errorf("a chunked upload of %d bytes: %v %s", len(body), err, log.String())
	}
}

// TestRedteamDeliveredLocally: an address no interface holds that the
// kernel still delivers to this machine (ip route add local
// 198.51.100.0/24 dev lo: a red team read a host-only service through
// anyip.test) shows as a connection whose two ends are the same address:
// refused, unless an entry names the address or the operator's table
// says where it is.
func TestRedteamDeliveredLocally(t *testing.T) {
	a := netip.MustParseAddr("198.51.100.77")
	same := fakeConn{local: &net.TCPAddr{IP: a.AsSlice(), Port: 40000}, remote: &net.TCPAddr{IP: a.AsSlice(), Port: 8081}}
	other := fakeConn{local: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 40000}, remote: same.remote}
	p := &Proxy{}
	d := Decision{Action: "allow", Host: "anyip.test", Port: 8081, Rule: "anyip.test:8081", Addr: a.String()}
	if got := d; !p.deliveredLocally(same, &got) || got.Action != "deny" || got.Denied != DeniedPrivate {
		t.Errorf("delivered to this machine: %+v", got)
	}
	if got := d; p.deliveredLocally(other, &got) {
		t.Errorf("a connection out: refused %+v", got)
	}
	named := d
	named.Rule = "198.51.100.77:8081"
	if p.deliveredLocally(same, &named) {
		t.Errorf("an entry naming the address: refused")
	}
	p.Exempt = func(b netip.Addr) bool { return b == a }
	if got := d; p.deliveredLocally(same, &got) {
		t.Errorf("the operator's table names the address: refused")
	}
}

type fakeConn struct {
	net.Conn
	local, remote net.Addr
}

func (c fakeConn) LocalAddr() net.Addr  { return c.local }
func (c fakeConn) RemoteAddr() net.Addr { return c.remote }
