package egress

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/bytesize"
	"golang.org/x/net/netutil"
)

// The proxy runs on the host, outside every limit the sandbox sets, and
// the server decides how many connections it opens and how many decisions
// it causes. What the proxy holds for it is bounded here, so a server
// cannot turn the proxy into host memory, descriptors or disk it was not
// given: past the bound it waits (connections) or loses its own record
// (the log), and nothing else on the host does.
const (
	// DefaultMaxConns is how many connections the proxy serves at once; the
	// next one waits, unaccepted, until one ends. Each costs two
	// descriptors, two copy buffers and its parsed headers (up to about
	// 20 times maxHeaderBytes, for many short header lines).
	DefaultMaxConns = 256
	// maxHeaderBytes bounds a request's headers: a CONNECT is a few dozen
	// bytes, a forwarded API call's headers a few KiB (nginx's default
	// bound is 4 x 8 KiB). The server's default, 1 MiB, parsed into many
	// short header lines, costs the host far more than its size.
	maxHeaderBytes = 16 << 10
	// idleTimeout ends a kept-alive connection that sends nothing.
	idleTimeout = 2 * time.Minute
	// readHeaderTimeout ends a connection that sends no whole request header.
	readHeaderTimeout = 30 * time.Second
	// DefaultLogLimit is the size a decision log stops growing at: about
	// 250,000 decisions. A regular file's size counts (runs append to the
	// same file), so it bounds the file, not one run.
	DefaultLogLimit = 64 << 20
	// logNoticeRoom is kept free below the limit for the line that says
	// the log is full.
	logNoticeRoom = 1 << 10
)

// LogFull is the action of the lines that say decisions stopped being
// logged: one when the log reaches its limit, one when the proxy stops
// with how many were not logged.
const LogFull = "log-full"

// Serve serves the proxy on ln, at most MaxConns connections at once,
// until Close; it returns http.ErrServerClosed then. It may serve several
// listeners at once, each with its own bound.
func (p *Proxy) Serve(ln net.Listener) error {
	p.activeMu.Lock()
	if p.closed {
		p.activeMu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	if p.server == nil {
		p.server = &http.Server{
			Handler:           p,
			ReadHeaderTimeout: readHeaderTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
		}
	}
	srv := p.server
	p.activeMu.Unlock()
	max := p.MaxConns
	if max <= 0 {
		max = DefaultMaxConns
	}
	return srv.Serve(netutil.LimitListener(ln, max))
}

// logLine writes one decision line, unless the log is full: then the
// first refused line is replaced by a notice, and every later one is
// counted, not written. A regular file's size is read before each line:
// runs that append to one file at once share its limit. Called with p.mu
// held.
func (p *Proxy) logLine(b []byte) {
	if p.LogLimit < 0 { // no limit: the user's choice (--log-max 0)
		p.Log.Write(b)
		return
	}
	if p.logDropped > 0 {
		p.logDropped++
		return
	}
	if !p.logStarted {
		p.logStarted = true
		p.logFile, _ = p.Log.(*os.File)
		if p.logFile != nil {
			if fi, err := p.logFile.Stat(); err != nil || !fi.Mode().IsRegular() {
				p.logFile = nil // stderr, a pipe, /dev/null: this proxy's lines alone count
			}
		}
	}
	size := p.logWritten
	if p.logFile != nil {
		if fi, err := p.logFile.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if size+int64(len(b)) > p.limit()-logNoticeRoom {
		p.Log.Write(p.line(Decision{Action: LogFull, Reason: fmt.Sprintf("the decision log reached its limit of %s: later decisions are not logged (move the log aside, or raise the limit: --log-max)", bytesize.Format(p.limit()))}))
		p.logDropped++
		return
	}
	p.logWritten += int64(len(b))
	p.Log.Write(b)
}

// limit is the log's limit in bytes, the default for 0.
func (p *Proxy) limit() int64 {
	if p.LogLimit == 0 {
		return DefaultLogLimit
	}
	return p.LogLimit
}

// NotLogged is how many decisions the log had no room for.
func (p *Proxy) NotLogged() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logDropped
}

// logSummary writes, when decisions were not logged, how many.
func (p *Proxy) logSummary() {
	if p.Log == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := p.refusedPeers - MaxRefusedPeerLines; n > 0 {
		p.logLine(p.line(Decision{Action: "deny", Denied: DeniedNotSandbox,
			Reason: fmt.Sprintf("%d more connections from outside the sandbox were refused and not logged (only the first %d are)", n, MaxRefusedPeerLines)}))
	}
	if p.logDropped > 0 {
		p.Log.Write(p.line(Decision{Action: LogFull, Reason: fmt.Sprintf("%d decisions were not logged: the decision log reached its limit of %s", p.logDropped, bytesize.Format(p.limit()))}))
	}
}
