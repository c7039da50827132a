// Package egress is the enforcement point of a network allowlist: an HTTP
// proxy (CONNECT for TLS, plain forwarding for HTTP) that resolves names
// itself, checks host and port against the plan's list and the resolved
// addresses against private ranges, and logs every decision. The list's
// data (rules, matching, private ranges) is package allowlist.
package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// Decision is one logged verdict.
type Decision struct {
	Time   string `json:"time"`
	Action string `json:"action"`           // "allow" or "deny"
	Method string `json:"method,omitempty"` // CONNECT or the HTTP method; none for a refused connection
	// Host is the name (or address) the decision was made on, spelled by
	// allowlist.Canonical; empty when the requested one has no canonical spelling.
	Host string `json:"host,omitempty"`
	// Requested is the host as the client spelled it, when that differs
	// from Host (case, a trailing dot, IDN, fullwidth forms, soft hyphens).
	Requested string `json:"requested,omitempty"`
	Port      int    `json:"port,omitempty"`
	Addr      string `json:"addr,omitempty"` // the address connected to
	Rule      string `json:"rule,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Denied names the rule a deny missed (DeniedNotListed, DeniedOtherPort,
	// DeniedPrivate, ...: the X-Mcpolicy-Denied header's value).
	Denied string `json:"denied,omitempty"`
	// Suggest is the smallest entry that would have allowed a deny: exact
	// host:port, never a wildcard; none when no entry can (a private
	// answer, a name that does not resolve). Hint says what to change.
	Suggest string `json:"suggest,omitempty"`
	Hint    string `json:"hint,omitempty"`
	// Credential names the credential an "inject" line put in a request
	// (never its value); Intercept marks a CONNECT whose TLS the proxy
	// terminated to do so.
	Credential string `json:"credential,omitempty"`
	Intercept  bool   `json:"intercept,omitempty"`
	Up         int64  `json:"bytesUp"`
	Down       int64  `json:"bytesDown"`
}

// Proxy enforces an allowlist. It resolves names itself and connects to
// the address it checked, so a name cannot be re-resolved to somewhere
// else (DNS rebinding) between the check and the connection.
type Proxy struct {
	Allow   allowlist.List
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error) // nil: the system resolver
	// Local reports whether an address is this machine's own; nil:
	// HostAddress. Like a private one, it is reached only when the rule
	// names it: a public address on eth0 leads to every service of the
	// host listening on 0.0.0.0.
	Local func(netip.Addr) bool
	// Exempt reports whether the operator said where an address is (a
	// hosts table naming a host at it: a local stand-in for an internet
	// host): neither refused as this machine's nor for being delivered
	// locally. A private one still is. nil: none is.
	Exempt func(netip.Addr) bool
	Log    io.Writer        // JSON lines; nil: none
	Now    func() time.Time // nil: time.Now
	// LogLimit is the size in bytes the log stops growing at (see
	// DefaultLogLimit, the limit for 0); negative: no limit.
	LogLimit int64
	// MaxConns is how many connections Serve serves at once; 0: DefaultMaxConns.
	MaxConns int
	// Credentials are put into requests to their destinations (issue
	// 41): a CONNECT to one is intercepted, its TLS terminated with a
	// certificate of the session CA (CACert); every other CONNECT stays a
	// tunnel. nil: none.
	Credentials []Credential
	// UpstreamRoots verify an intercepted destination's certificate;
	// nil: the host's roots. Tests give their own CA.
	UpstreamRoots *x509.CertPool
	// Dial makes every connection to a destination, given the address
	// the check allowed (never a name); ctx carries dialTimeout, and a
	// connection made outlives it. nil: a net.Dialer. For tests and
	// embedding: a test dials into its stand-in upstreams' namespace.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	caOnce sync.Once
	ca     *sessionCA
	caErr  error

	mu         sync.Mutex // the log
	logStarted bool
	logFile    *os.File // the log when it is a regular file, whose size is read before each line
	logWritten int64    // what this proxy wrote, for a log that is not
	logDropped int
	// refusedPeers counts connections refused from outside the sandbox
	// (logRefusedPeer).
	refusedPeers int

	lifelineMu sync.Mutex
	lifelines  chan struct{}

	// Requests in flight and the connections of open tunnels, so Close
	// can end them and wait for their decisions to be logged.
	activeMu sync.Mutex
	closed   bool
	stop     context.Context // done once Close starts: ends what a request waits on
	stopNow  context.CancelFunc
	server   *http.Server // once Serve runs
	active   sync.WaitGroup
	tunnels  map[net.Conn]struct{}
}

// enter counts a request in; false once the proxy is closed.
func (p *Proxy) enter() bool {
	p.activeMu.Lock()
	defer p.activeMu.Unlock()
	if p.closed {
		return false
	}
	p.active.Add(1)
	return true
}

// track registers a tunnel's connection; false (and the connection
// closed) once the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.activeMu.Lock()
	defer p.activeMu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	if p.tunnels == nil {
		p.tunnels = map[net.Conn]struct{}{}
	}
	p.tunnels[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.activeMu.Lock()
	defer p.activeMu.Unlock()
	delete(p.tunnels, c)
}

// Close stops Serve, which ends the requests that are not tunnels (the
// lifeline among them), then ends every open tunnel (a hijacked
// connection is no longer the HTTP server's to close), and returns once
// every request has finished and logged its decision. A forwarded request
// blocked on its destination (one that accepts a body and never reads
// it) ends too: its context is cancelled.
func (p *Proxy) Close() {
	p.stopping()
	p.activeMu.Lock()
	p.closed = true
	srv := p.server
	p.stopNow()
	p.activeMu.Unlock()
	if srv != nil {
		srv.Close()
	}
	p.activeMu.Lock()
	for c := range p.tunnels {
		c.Close()
	}
	p.activeMu.Unlock()
	p.active.Wait()
	p.logSummary()
}

// stopping returns the context Close cancels.
func (p *Proxy) stopping() context.Context {
	p.activeMu.Lock()
	defer p.activeMu.Unlock()
	if p.stop == nil {
		p.stop, p.stopNow = context.WithCancel(context.Background())
	}
	return p.stop
}

func (p *Proxy) log(d Decision) {
	if p.Log == nil {
		return
	}
	b := p.line(d)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.logLine(b)
}

// line is d as a log line, its time set when it has none.
func (p *Proxy) line(d Decision) []byte {
	if d.Time == "" {
		now := time.Now
		if p.Now != nil {
			now = p.Now
		}
		d.Time = now().UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(d)
	return append([]byte(terminalInert(shellInert.Replace(string(b)))), '\n')
}

// terminalInert escapes, in a JSON line, what JSON leaves raw and a
// terminal acts on: C1 controls (U+009B is CSI, U+009D OSC: a host a
// server asks for must not clear the screen or set the clipboard of
// whoever runs tail -f on the log) and format characters (bidi overrides,
// zero-width ones that make a host read as another). JSON readers decode
// \uXXXX back.
func terminalInert(s string) string {
	i := strings.IndexFunc(s, unsafeRune)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if !unsafeRune(r) {
			b.WriteRune(r)
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(&b, `\u%04x`, u)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Cf, r)
}

// shellInert escapes, in a JSON line, the characters a shell expands in
// a double-quoted string ($, `): a server can put "$(...)" in the host it
// asks for, and a log appended to a file a shell reads (a symlink planted
// where the log goes, pointing to ~/.bashrc) must run nothing. JSON
// readers decode \u0024 and \u0060 back; outside strings a JSON line holds
// neither.
var shellInert = strings.NewReplacer("$", `\u0024`, "`", `\u0060`)

// check decides a destination and returns the address to connect to.
// Everything after the first line works on the canonical spelling of the
// host: the match, the lookup, the address check and the log, so the
// logged host is the one the decision was made on.
func (p *Proxy) check(ctx context.Context, method, requested string, port int) (_ netip.AddrPort, d Decision, _ bool) {
	// What the client spelled is logged cut short: a line a reader
	// cannot hold would hide every decision around it.
	d = Decision{Action: "deny", Method: clip(method, maxLoggedMethod), Port: port}
	var private netip.Addr
	defer func() {
		if d.Action == "deny" {
			p.explain(&d, private)
		}
	}()
	host, err := allowlist.Canonical(requested)
	if err != nil {
		d.Requested, d.Reason = clip(requested, maxLoggedHost), "not a host name: "+err.Error()
		return netip.AddrPort{}, d, false
	}
	d.Host = host
	if requested != host {
		d.Requested = requested
	}
	rule, ok := p.Allow.MatchCanonical(host, port)
	if !ok {
		d.Reason = "not in the allowlist"
		return netip.AddrPort{}, d, false
	}
	d.Rule = rule.String()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a.Unmap()}
	} else {
		resolve := p.Resolve
		if resolve == nil {
			resolve = func(ctx context.Context, h string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
			}
		}
		var err error
		if addrs, err = resolve(ctx, host); err != nil || len(addrs) == 0 {
			d.Reason = fmt.Sprintf("cannot resolve: %v", err)
			return netip.AddrPort{}, d, false
		}
	}
	for _, a := range addrs {
		a = a.Unmap()
		// A private address, or one of this machine's, is reachable only
		// when the rule names it.
		why := ""
		switch {
		case rule.Addr == a:
		case allowlist.Private(a):
			why = fmt.Sprintf("%s resolves to the private address %s", host, a)
		case p.exempt(a):
		case p.local(a):
			why = fmt.Sprintf("%s resolves to %s, an address of this machine", host, a)
		}
		if why != "" {
			d.Reason = why
			if !private.IsValid() {
				private = a
			}
			continue
		}
		d.Action, d.Reason, d.Addr = "allow", "", a.String()
		return netip.AddrPortFrom(a, uint16(port)), d, true
	}
	return netip.AddrPort{}, d, false
}

// dialTimeout bounds the connection to a destination.
const dialTimeout = 10 * time.Second

// dial connects to addr, the address check returned.
func (p *Proxy) dial(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if p.Dial != nil {
		return p.Dial(ctx, "tcp", addr.String())
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr.String())
}

func (p *Proxy) exempt(a netip.Addr) bool { return p.Exempt != nil && p.Exempt(a) }

// deliveredLocally refuses a connection the kernel delivered to this
// machine though no interface holds the address (a local route: ip route
// add local 198.51.100.0/24 dev lo; a red team reached a host-only
// service so): its two ends are the same address. An entry naming the
// address, or the operator's table, allows it.
func (p *Proxy) deliveredLocally(c net.Conn, d *Decision) bool {
	l, lok := c.LocalAddr().(*net.TCPAddr)
	r, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok || !l.IP.Equal(r.IP) {
		return false
	}
	a, _ := netip.AddrFromSlice(r.IP)
	a = a.Unmap()
	if rule, err := allowlist.ParseRule(d.Rule); err == nil && rule.Addr == a || p.exempt(a) {
		return false
	}
	d.Action, d.Addr, d.Denied = "deny", "", DeniedPrivate
	d.Reason = fmt.Sprintf("%s: this machine delivers %s to itself", d.Host, a)
	p.explain(d, a)
	return true
}

func (p *Proxy) local(a netip.Addr) bool {
	if p.Local != nil {
		return p.Local(a)
	}
	return HostAddress(a)
}

// HostAddress reports whether a is an address of one of this machine's
// interfaces, read at each call: docker, a VPN or DHCP add and change
// them while a run lasts. An error reading them counts as yes: the
// decision fails closed.
func HostAddress(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true
	}
	a = a.Unmap()
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if b, ok := netip.AddrFromSlice(n.IP); ok && b.Unmap() == a {
				return true
			}
		}
	}
	return false
}

// The longest method and requested host a decision logs as sent.
const (
	maxLoggedMethod = 32
	maxLoggedHost   = 256
)

// clip cuts s to at most n bytes (at a character), saying how long it was.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:i], len(s))
}

func splitPort(hostport, defaultPort string) (string, int, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, defaultPort
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return "", 0, fmt.Errorf("bad port in %q", hostport)
	}
	return host, n, nil
}

// ServeHTTP handles CONNECT (tunnels, for TLS) and absolute-form HTTP
// requests (plain forwarding); anything else is refused.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		http.Error(w, "mcpolicy egress proxy: stopping", http.StatusServiceUnavailable)
		return
	}
	defer p.active.Done()
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.Method == http.MethodGet && r.URL.Host == "" && r.URL.Path == lifelinePath {
		p.serveLifeline(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "mcpolicy egress proxy: send absolute http:// URLs or CONNECT", http.StatusBadRequest)
		return
	}
	host, port, err := splitPort(r.URL.Host, "80")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(p.stopping(), cancel)()
	addr, d, ok := p.check(ctx, r.Method, host, port)
	if !ok {
		p.log(d)
		deny(w, d)
		return
	}
	var local *Decision // set when the connection was delivered to this machine
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			c, err := p.dial(ctx, addr)
			if err == nil {
				if ld := d; p.deliveredLocally(c, &ld) {
					c.Close()
					local = &ld
					return nil, errors.New(ld.Reason)
				}
			}
			return c, err
		},
		Proxy: nil,
	}
	defer tr.CloseIdleConnections()
	out := r.Clone(ctx)
	out.RequestURI = ""
	// What was carried up, counted: a chunked body has no length to read
	// (ContentLength -1), and the log is where its size is told.
	up := &countingReader{r: out.Body}
	if out.Body != nil && out.Body != http.NoBody {
		out.Body = up
	}
	out.Header.Del("Proxy-Connection")
	out.Header.Del("Proxy-Authorization")
	resp, err := tr.RoundTrip(out)
	if err != nil && local != nil {
		p.log(*local)
		deny(w, *local)
		return
	}
	if err != nil {
		d.Action, d.Reason, d.Denied = "deny", "upstream: "+err.Error(), DeniedUpstream
		p.log(d)
		http.Error(w, "mcpolicy egress proxy: upstream failed", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	d.Down, _ = io.Copy(w, resp.Body)
	d.Up = up.n.Load()
	p.log(d)
}

// countingReader counts what is read through it (the transport reads
// in its own goroutine, which may still run when the answer is in).
type countingReader struct {
	r io.ReadCloser
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitPort(r.Host, "443")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	addr, d, ok := p.check(r.Context(), "CONNECT", host, port)
	if !ok {
		p.log(d)
		deny(w, d)
		return
	}
	upstream, err := p.dial(r.Context(), addr)
	if err != nil {
		d.Action, d.Reason, d.Denied = "deny", "upstream: "+err.Error(), DeniedUpstream
		p.log(d)
		http.Error(w, "mcpolicy egress proxy: upstream failed", http.StatusBadGateway)
		return
	}
	if p.deliveredLocally(upstream, &d) {
		upstream.Close()
		p.log(d)
		deny(w, d)
		return
	}
	// A destination credentials are bound to: the proxy's own TLS to it,
	// verified before the server is told the tunnel is there.
	var upTLS *tls.Conn
	creds := p.bound(d.Host, port)
	if len(creds) > 0 {
		if upTLS, err = p.upstreamTLS(upstream, d.Host); err == nil {
			_, err = p.sessionCA()
		}
		if err != nil {
			upstream.Close()
			d.Action, d.Reason, d.Denied = "deny", "upstream: "+err.Error(), DeniedUpstream
			p.log(d)
			http.Error(w, "mcpolicy egress proxy: upstream failed", http.StatusBadGateway)
			return
		}
		d.Intercept = true
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "hijacking not supported", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if !p.track(client) || !p.track(upstream) {
		client.Close()
		upstream.Close()
		d.Action, d.Reason, d.Denied = "deny", "the proxy is stopping", DeniedStopping
		p.log(d)
		return
	}
	defer p.untrack(client)
	defer p.untrack(upstream)
	client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	if upTLS != nil {
		p.intercept(readerConn{client, buf.Reader}, upTLS, d.Host, port, creds, &d)
		client.Close()
		upstream.Close()
		p.log(d)
		return
	}
	// What the client sent past the headers is in buf; the rest is copied
	// between the bare sockets.
	pending, _ := buf.Reader.Peek(buf.Reader.Buffered())
	raw := bare(client)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		n, err := upstream.Write(pending)
		if d.Up = int64(n); err == nil {
			d.Up += copyConn(upstream, raw)
		}
		if tc, ok := upstream.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	go func() {
		defer wg.Done()
		d.Down = copyConn(raw, upstream)
		client.Close()
	}()
	wg.Wait()
	upstream.Close()
	p.log(d)
}

// readerConn is a hijacked connection read through the server's reader,
// which may hold what the client sent past the CONNECT's head.
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c readerConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// copyBufSize is a tunnel's copy buffer. Large, because a loopback
// socket moves more per system call the more it is given (measured:
// BenchmarkEgress, 512 KiB carried 1.3x what 32 KiB did); held only while
// data is there to copy (copyConn), so an idle tunnel holds none.
var copyBufSize = 256 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// A write that waits keeps its buffer: a tunnel whose reader stalls holds
// one per direction for as long as it likes. So only bigBufs large
// buffers are out at once; beyond them a tunnel copies through a small
// one: at MaxConns stalled tunnels, 8 MiB of large buffers and 32 KiB per
// direction, not 256 KiB (a red team held 544 KiB per stalled tunnel).
var (
	bigBufs   = make(chan struct{}, 32)
	smallBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
)

// getCopyBuf is a large buffer if one may be out, else a small one;
// putCopyBuf gives it back, told which.
func getCopyBuf() (bp *[]byte, big bool) {
	select {
	case bigBufs <- struct{}{}:
		return copyBufs.Get().(*[]byte), true
	default:
		return smallBufs.Get().(*[]byte), false
	}
}

func putCopyBuf(bp *[]byte, big bool) {
	if big {
		copyBufs.Put(bp)
		<-bigBufs
		return
	}
	smallBufs.Put(bp)
}

// copyConn copies src to dst until src ends or either fails, and returns
// how much was written. A buffer is taken from the pool only once src is
// readable, and given back before the next wait.
func copyConn(dst io.Writer, src io.Reader) int64 {
	sc, ok := src.(syscall.Conn)
	if !ok {
		bp, big := getCopyBuf()
		defer putCopyBuf(bp, big)
		n, _ := io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *bp)
		return n
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	// One closure for every read (not one a read): a tunnel's first
	// bytes are most of a short connection's work.
	var (
		bp   *[]byte
		big  bool
		n    int
		rerr error
	)
	read := func(fd uintptr) bool {
		bp, big = getCopyBuf()
		for {
			n, rerr = readNow(int(fd), *bp)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			putCopyBuf(bp, big)
			bp = nil
			return false // wait until readable, holding no buffer
		}
		return true
	}
	var written int64
	for {
		bp = nil
		err := rc.Read(read)
		if err != nil || rerr != nil || n <= 0 {
			if bp != nil {
				putCopyBuf(bp, big)
			}
			return written
		}
		m, werr := dst.Write((*bp)[:n])
		putCopyBuf(bp, big)
		written += int64(m)
		if werr != nil {
			return written
		}
	}
}

// readNow reads what the socket fd has, without waiting: MSG_DONTWAIT,
// not the descriptor's O_NONBLOCK, which a handed-over socket's sender
// shares and may clear.
func readNow(fd int, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_DONTWAIT)
	return n, err
}
