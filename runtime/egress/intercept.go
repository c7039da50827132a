package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// Credential is one credential the proxy injects (issue 41): its grant,
// the real value and the placeholder the server holds instead. It lives
// in the supervising process's memory alone: never in a file, an
// argument or a log line.
type Credential struct {
	Grant       credential.Grant
	Value       string
	Placeholder string
}

// ActionInject is the action of the line logged for each request a
// credential was put into: its destination and the credential's name,
// never the value or the placeholder.
const ActionInject = "inject"

// CACert is the PEM certificate of the proxy's session CA, which signs
// the certificates it shows the server for the credentials' destinations;
// generated on the first call, in memory. The sandbox trusts it (the
// supervisor binds it in); its key never leaves this process.
func (p *Proxy) CACert() ([]byte, error) {
	ca, err := p.sessionCA()
	if err != nil {
		return nil, err
	}
	return ca.PEM(), nil
}

func (p *Proxy) sessionCA() (*sessionCA, error) {
	p.caOnce.Do(func() { p.ca, p.caErr = newSessionCA(CredentialHosts(p.Credentials)) })
	return p.ca, p.caErr
}

// UseCA makes the proxy sign with the CA of certPEM and keyPEM
// (GenerateCA's) instead of one of its own: for a proxy whose sandbox
// must trust the CA before the proxy starts (the kubernetes backend's
// egress-proxy Pod, given both from a Secret mounted in it alone). Set
// Credentials first: the CA must be constrained to their hosts, and to
// nothing more. Call before Serve.
func (p *Proxy) UseCA(certPEM, keyPEM []byte) error {
	ca, err := loadSessionCA(certPEM, keyPEM, CredentialHosts(p.Credentials))
	if err != nil {
		return err
	}
	p.caOnce.Do(func() { p.ca = ca })
	if p.ca != ca {
		return errors.New("the proxy has a session CA already")
	}
	return nil
}

// CredentialHosts are the hosts the credentials are bound to, each once,
// sorted: what a session CA may vouch for.
func CredentialHosts(creds []Credential) []string {
	var hosts []string
	for _, c := range creds {
		for _, to := range c.Grant.To {
			if h, _, err := net.SplitHostPort(to); err == nil && !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	slices.Sort(hosts)
	return hosts
}

// bound are the credentials bound to host:port (host canonical).
func (p *Proxy) bound(host string, port int) []Credential {
	dest := net.JoinHostPort(host, strconv.Itoa(port))
	var out []Credential
	for _, c := range p.Credentials {
		for _, to := range c.Grant.To {
			if strings.EqualFold(to, dest) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// upstreamTimeout bounds the dial and the TLS handshake with an
// intercepted destination.
const upstreamTimeout = 10 * time.Second

// upstreamTLS is the proxy's own TLS client to the destination, verified
// against the host's roots (UpstreamRoots in tests); it offers HTTP/1.1
// alone, the protocol it relays.
func (p *Proxy) upstreamTLS(c net.Conn, host string) (*tls.Conn, error) {
	t := tls.Client(c, &tls.Config{ServerName: host, RootCAs: p.UpstreamRoots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	t.SetDeadline(time.Now().Add(upstreamTimeout))
	if err := t.Handshake(); err != nil {
		return nil, err
	}
	t.SetDeadline(time.Time{})
	return t, nil
}

// intercept serves a CONNECT to a destination credentials are bound to:
// the server's TLS ends here, with a certificate for host from the
// session CA, and each HTTP/1.1 request it sends is relayed to up (TLS
// verified already) with the placeholder replaced by the value in the
// bound header or query parameter; in each answer the value is replaced
// by the placeholder, so an upstream that reflects a request hands the
// server back only what it sent.
func (p *Proxy) intercept(client net.Conn, up *tls.Conn, host string, port int, creds []Credential, d *Decision) {
	ca, err := p.sessionCA()
	if err != nil {
		return
	}
	srv := tls.Server(client, &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return ca.leaf(host) },
		NextProtos:     []string{"http/1.1"}, // never h2: the relay reads HTTP/1.1
		MinVersion:     tls.VersionTLS12,
	})
	srv.SetDeadline(time.Now().Add(readHeaderTimeout))
	if err := srv.Handshake(); err != nil {
		d.Reason = "intercepted: the server's TLS handshake failed: " + err.Error()
		return
	}
	srv.SetDeadline(time.Time{})
	down := &countWriter{w: srv}
	upw := &countWriter{w: up}
	r := &relay{p: p, host: host, port: port, creds: creds, rule: d.Rule,
		limit: &io.LimitedReader{R: srv}, cl: srv, up: up, down: down, upc: upw, upw: bufio.NewWriter(upw),
		upr: bufio.NewReader(up), clw: bufio.NewWriter(down)}
	r.clr = bufio.NewReader(r.limit)
	r.serve()
	d.Up, d.Down = upw.n, down.n
}

// relay is one intercepted connection's HTTP/1.1 exchange.
type relay struct {
	p          *Proxy
	host, rule string
	port       int
	creds      []Credential
	limit      *io.LimitedReader // under clr: bounds a request's head
	cl         *tls.Conn
	up         *tls.Conn
	down, upc  *countWriter
	clr, upr   *bufio.Reader
	clw, upw   *bufio.Writer
}

func (r *relay) serve() {
	for {
		r.cl.SetReadDeadline(time.Now().Add(idleTimeout))
		r.limit.N = maxHeaderBytes + 4096
		req, err := http.ReadRequest(r.clr)
		over := r.limit.N <= 0
		r.limit.N = math.MaxInt64
		r.cl.SetReadDeadline(time.Time{})
		if err != nil {
			if over {
				r.refuse(http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("a request's head is limited to %d bytes", maxHeaderBytes))
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isTimeout(err) {
				r.refuse(http.StatusBadRequest, "the request could not be read")
			}
			return
		}
		if req.ProtoMajor != 1 {
			r.refuse(http.StatusHTTPVersionNotSupported, "HTTP/1.1 only on a destination with credentials")
			return
		}
		if !r.roundTrip(req) {
			return
		}
	}
}

// roundTrip relays one request and its answer; false ends the connection.
func (r *relay) roundTrip(req *http.Request) bool {
	for _, c := range r.creds {
		// Only a request for the bound host itself: one naming another
		// (Host, or an absolute URL) on the same address would carry the
		// value to another site a shared front end serves (domain
		// fronting).
		if r.forHost(req) && inject(req, c) {
			r.p.log(Decision{Action: ActionInject, Method: clip(req.Method, maxLoggedMethod), Host: r.host, Port: r.port, Rule: r.rule, Credential: c.Grant.Name})
		}
	}
	// An answer compressed would carry a reflected value unrecognised.
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	sent := make(chan error, 1)
	go func() {
		err := req.Write(r.upw)
		if err == nil {
			err = r.upw.Flush()
		}
		sent <- err
	}()
	var resp *http.Response
	for {
		var err error
		if resp, err = http.ReadResponse(r.upr, req); err != nil {
			r.up.Close() // a request write still under way ends
			<-sent
			r.refuse(http.StatusBadGateway, "the upstream's answer could not be read")
			return false
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		r.redactHeader(resp.Header)
		if resp.Write(r.clw) != nil || r.clw.Flush() != nil { // 100 Continue, 103 Early Hints
			return false
		}
	}
	if ce := encoded(resp.Header); ce != "" && resp.Body != http.NoBody && resp.ContentLength != 0 {
		resp.Body.Close()
		r.up.Close()
		<-sent
		r.refuse(http.StatusBadGateway, fmt.Sprintf("the upstream answered with Content-Encoding %q, which the proxy cannot search for a credential's value", clip(ce, 32)))
		return false
	}
	r.redactHeader(resp.Header)
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return r.switched(resp, sent)
	}
	// Trailers are filled in as the body ends, and written after it.
	red := newRedactor(&trailerRedactor{r: resp.Body, h: resp.Trailer, x: r}, r.creds)
	defer red.release()
	resp.Body = &flushBefore{r: red, w: r.clw, c: resp.Body}
	// Written through Write alone: the bufio.Writer's ReadFrom would
	// have the body read into its buffer, which flushBefore flushes.
	werr := resp.Write(struct{ io.Writer }{r.clw})
	if werr == nil {
		werr = r.clw.Flush()
	}
	select {
	case err := <-sent:
		if err != nil {
			return false
		}
	case <-time.After(idleTimeout): // the upstream answered and never read the rest
		r.up.Close()
		<-sent
		return false
	}
	return werr == nil && !resp.Close && !req.Close
}

// switched carries an upgraded connection (a WebSocket) both ways once
// its 101 is passed on: up as sent, down with the values redacted.
func (r *relay) switched(resp *http.Response, sent chan error) bool {
	if resp.Write(r.clw) != nil || r.clw.Flush() != nil || <-sent != nil {
		return false
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(r.upc, r.clr) // unbuffered: a WebSocket's frames go as they come
		r.up.CloseWrite()
	}()
	red := newRedactor(r.upr, r.creds)
	defer red.release()
	io.Copy(r.down, red)
	r.cl.CloseWrite()
	<-done
	return false
}

// forHost reports whether req is for the connection's host: its Host
// (and an absolute URL's, if any) is the host, with the port or, for
// 443, none.
func (r *relay) forHost(req *http.Request) bool {
	same := func(h string) bool {
		if h == "" {
			return false
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, "443"
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		return strings.EqualFold(host, r.host) && port == strconv.Itoa(r.port)
	}
	return same(req.Host) && (req.URL.Host == "" || same(req.URL.Host))
}

// refuse answers the server with status and why, and ends the exchange.
func (r *relay) refuse(status int, why string) {
	body := "mcpolicy egress proxy: " + why + "\n"
	fmt.Fprintf(r.clw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
	r.clw.Flush()
}

// redactHeader replaces each value in h, in each spelling, by its
// placeholder; a field whose name holds a value (its case lost to
// canonicalisation) is dropped.
func (r *relay) redactHeader(h http.Header) {
	forms := allSpellings(r.creds)
	for k, vs := range h {
		lk := strings.ToLower(k)
		if slices.ContainsFunc(r.creds, func(c Credential) bool { return strings.Contains(lk, strings.ToLower(c.Value)) }) {
			delete(h, k)
			continue
		}
		for i, v := range vs {
			for _, f := range forms {
				v = strings.ReplaceAll(v, f.old, f.new)
			}
			h[k][i] = v
		}
	}
}

// encoded is the answer's content coding other than identity, if any,
// in any of its Content-Encoding fields.
func encoded(h http.Header) string {
	for _, v := range h.Values("Content-Encoding") {
		for _, ce := range strings.Split(v, ",") {
			if ce = strings.TrimSpace(ce); ce != "" && !strings.EqualFold(ce, "identity") {
				return v
			}
		}
	}
	return ""
}

// spelling is a credential's value as an answer may echo it, and its
// placeholder spelt alike: the placeholder has the value's punctuation at
// the same places, so each pair is of one length.
type spelling struct{ old, new string }

// spellings are c's value as sent and as an upstream echoing a request
// writes it: percent-encoded (a query, a path) and JSON-escaped.
func spellings(c Credential) []spelling {
	out := []spelling{{c.Value, c.Placeholder}}
	add := func(f func(string) string) {
		old, new := f(c.Value), f(c.Placeholder)
		if old != c.Value && len(old) == len(new) && !slices.Contains(out, spelling{old, new}) {
			out = append(out, spelling{old, new})
		}
	}
	add(url.QueryEscape)
	add(url.PathEscape)
	add(func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) })
	return out
}

// allSpellings are the spellings of every credential in creds, longest
// first: a value inside another is replaced after it, never in it (which
// would leave the longer value's other characters to be read around the
// shorter's placeholder).
func allSpellings(creds []Credential) []spelling {
	var out []spelling
	for _, c := range creds {
		out = append(out, spellings(c)...)
	}
	slices.SortStableFunc(out, func(a, b spelling) int { return len(b.old) - len(a.old) })
	return out
}

// trailerRedactor reads an answer's body and, as it ends, redacts the
// trailer fields read with it.
type trailerRedactor struct {
	r io.Reader
	h http.Header
	x *relay
}

func (t *trailerRedactor) Read(b []byte) (int, error) {
	n, err := t.r.Read(b)
	if err != nil && t.h != nil {
		t.x.redactHeader(t.h)
	}
	return n, err
}

// inject puts c's value in req where its grant says, in place of the
// placeholder, and reports whether it did: the header's value must be
// the grant's format around the placeholder, exactly; a query parameter
// of the grant's name must hold the placeholder alone. Anywhere else
// (another header, the body, the path) the placeholder stays as it is.
func inject(req *http.Request, c Credential) bool {
	as := c.Grant.As
	done := false
	if as.Header != "" {
		format := as.Format
		if format == "" {
			format = "{}"
		}
		want := strings.Replace(format, "{}", c.Placeholder, 1)
		vs := req.Header[textproto.CanonicalMIMEHeaderKey(as.Header)]
		for i, v := range vs {
			if v == want {
				vs[i] = strings.Replace(format, "{}", c.Value, 1)
				done = true
			}
		}
	}
	if as.Query != "" && req.URL.RawQuery != "" {
		parts := strings.Split(req.URL.RawQuery, "&")
		for i, part := range parts {
			k, v, _ := strings.Cut(part, "=")
			if k, err := url.QueryUnescape(k); err != nil || k != as.Query {
				continue
			}
			if v, err := url.QueryUnescape(v); err != nil || v != c.Placeholder {
				continue
			}
			parts[i] = url.QueryEscape(as.Query) + "=" + url.QueryEscape(c.Value)
			done = true
		}
		req.URL.RawQuery = strings.Join(parts, "&")
	}
	return done
}

// redactor reads r with every credential's value replaced by its
// placeholder (the same length: a Content-Length stays true). It holds
// back, between reads, the last bytes that could begin a value split
// across them: at most the longest value's length less one.
type redactor struct {
	r     io.Reader
	creds []Credential
	keep  int
	forms []spelling
	bp    *[]byte // from redactBufs, until release
	buf   []byte  // read, replaced, not yet returned
	ready int     // buf[:ready] may be returned
	err   error
}

func newRedactor(r io.Reader, creds []Credential) *redactor {
	forms := allSpellings(creds)
	keep := 0
	for _, f := range forms {
		keep = max(keep, len(f.old)-1)
	}
	bp := redactBufs.Get().(*[]byte)
	if cap(*bp) < redactBufSize+keep {
		*bp = make([]byte, 0, redactBufSize+keep)
	}
	return &redactor{r: r, creds: creds, forms: forms, keep: keep, bp: bp, buf: (*bp)[:0]}
}

// redactBufSize is what a redactor reads at once; its buffers are reused
// across answers (an answer is most of an intercepted request's memory).
const redactBufSize = 32 << 10

var redactBufs = sync.Pool{New: func() any { b := make([]byte, 0, redactBufSize); return &b }}

// release gives the buffer back; the redactor is not read after.
func (x *redactor) release() {
	if x.bp != nil {
		*x.bp = x.buf[:0]
		redactBufs.Put(x.bp)
		x.bp, x.buf = nil, nil
	}
}

func (x *redactor) Read(b []byte) (int, error) {
	for x.ready == 0 {
		if x.err != nil {
			if len(x.buf) > 0 { // the end: what was held back goes too
				x.ready = len(x.buf)
				break
			}
			return 0, x.err
		}
		n, err := x.r.Read(x.buf[len(x.buf):cap(x.buf)])
		x.buf = x.buf[:len(x.buf)+n]
		x.err = err
		// Only what starts before the bytes held back: a value that may
		// go on past them is replaced once it has all come, never a
		// shorter one inside it first.
		limit := len(x.buf)
		if x.err == nil {
			limit = max(len(x.buf)-x.keep, 0)
		}
		for _, f := range x.forms {
			replaceAll(x.buf, f.old, f.new, limit)
		}
		x.ready = limit
	}
	n := copy(b, x.buf[:x.ready])
	x.buf = x.buf[:copy(x.buf, x.buf[n:])]
	x.ready -= n
	return n, nil
}

// replaceAll replaces, in place, every old in b that starts before limit
// by new, of the same length.
func replaceAll(b []byte, old, new string, limit int) {
	if old == "" {
		return
	}
	for i := 0; i < limit; {
		j := bytes.Index(b[i:], []byte(old))
		if j < 0 || i+j >= limit {
			return
		}
		copy(b[i+j:], new)
		i += j + len(old)
	}
}

// flushBefore flushes w before each read of r: what was written of a
// streamed answer reaches the server before the relay waits for more.
type flushBefore struct {
	r io.Reader
	w *bufio.Writer
	c io.Closer // the answer's body
}

func (f *flushBefore) Read(b []byte) (int, error) {
	if f.w.Buffered() > 0 {
		if err := f.w.Flush(); err != nil {
			return 0, err
		}
	}
	return f.r.Read(b)
}

func (f *flushBefore) Close() error { return f.c.Close() }

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
