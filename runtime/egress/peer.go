package egress

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// Peer is the process at the other end of a unix socket connection, as the
// kernel recorded it when that process connected (SO_PEERCRED): its pid in
// this process's pid namespace (0 when it has none here) and its effective
// uid in this process's user namespace.
type Peer struct {
	PID int
	UID int
}

func (p Peer) String() string { return fmt.Sprintf("pid %d, uid %d", p.PID, p.UID) }

// ErrNoPeerCredentials: this system cannot tell who connected.
var ErrNoPeerCredentials = errors.New("peer credentials are not available on this system")

// ErrSelf, from an admit function, closes the connection unlogged: it
// is this process checking that the socket a sandbox is about to get is
// its own (launch's servedByUs), not a client.
var ErrSelf = errors.New("this process's own check of its socket")

// Guard returns ln with admit run on every connection before the proxy
// reads a byte of it. A connection admit refuses gets a 403 naming the
// reason, is closed, and is logged as a deny with no host. admit runs in
// the connection's own goroutine (at its first read), so a slow one holds
// up no other connection.
func (p *Proxy) Guard(ln net.Listener, admit func(net.Conn) error) net.Listener {
	return &guardedListener{Listener: ln, proxy: p, admit: admit}
}

type guardedListener struct {
	net.Listener
	proxy *Proxy
	admit func(net.Conn) error
}

func (l *guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardedConn{Conn: c, l: l}, nil
}

type guardedConn struct {
	net.Conn
	l    *guardedListener
	once sync.Once
	err  error
}

func (c *guardedConn) check() error {
	c.once.Do(func() {
		if err := c.l.admit(c.Conn); errors.Is(err, ErrSelf) {
			c.err = err
			c.Conn.Close()
		} else if err != nil {
			c.err = fmt.Errorf("connection refused: %w", err)
			c.l.proxy.logRefusedPeer(Decision{Action: "deny", Reason: c.err.Error(), Denied: DeniedNotSandbox})
			msg := "mcpolicy egress proxy: " + c.err.Error() + "\n"
			fmt.Fprintf(c.Conn, "HTTP/1.1 %d %s\r\n%s: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
				http.StatusForbidden, http.StatusText(http.StatusForbidden), DeniedHeader, DeniedNotSandbox, len(msg), msg)
			c.Conn.Close()
		}
	})
	return c.err
}

func (c *guardedConn) Read(b []byte) (int, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *guardedConn) Write(b []byte) (int, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// CloseWrite passes a half-close on: the HTTP server half-closes a
// connection it ends after an error, so the client reads the answer.
func (c *guardedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// MaxRefusedPeerLines is how many refused connections (DeniedNotSandbox)
// one proxy logs in full. Any process of the user's can connect to the
// socket, as often as it likes: its refusals must not spend the log the
// server's own decisions go to (a red team filled 64 MB in four minutes).
// The rest are counted, and said in one line when the proxy closes.
const MaxRefusedPeerLines = 100

func (p *Proxy) logRefusedPeer(d Decision) {
	if p.Log == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refusedPeers++; p.refusedPeers > MaxRefusedPeerLines {
		return
	}
	p.logLine(p.line(d))
}
