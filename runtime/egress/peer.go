package egress

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/mcpolicy/mcpolicy/runtime/egress/forwarder"
	"golang.org/x/sys/unix"
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
	return &guardedListener{Listener: ln, proxy: p, admit: admit,
		accepted: make(chan accepted), handed: make(chan *guardedConn), done: make(chan struct{})}
}

// guardedListener's Accept returns the socket's connections and those
// its hand-over channels (serveChannel) carried, alike: the server's
// bound (Serve's MaxConns) counts both.
type guardedListener struct {
	net.Listener
	proxy *Proxy
	admit func(net.Conn) error

	start     sync.Once
	accepted  chan accepted     // the socket's, one at a time (acceptLoop)
	handed    chan *guardedConn // a channel's, one at a time
	done      chan struct{}     // closed by Close
	closeOnce sync.Once
}

type accepted struct {
	c   net.Conn
	err error
}

func (l *guardedListener) Accept() (net.Conn, error) {
	l.start.Do(func() { go l.acceptLoop() })
	select {
	case g := <-l.handed:
		return g, nil
	case a := <-l.accepted:
		if a.err != nil {
			return nil, a.err
		}
		return &guardedConn{Conn: a.c, l: l}, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// acceptLoop accepts the socket's connections for Accept, each once
// Accept takes the one before: at most one waits here, accepted.
func (l *guardedListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- accepted{c, err}:
		case <-l.done:
			if c != nil {
				c.Close()
			}
			return
		}
	}
}

func (l *guardedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type guardedConn struct {
	// Conn is the socket's connection, until a forwarder hands one over
	// on it (takeOver): that one from then on. It changes only under mu,
	// before the check is done.
	net.Conn
	l    *guardedListener
	once sync.Once
	err  error
	// first is the byte read to look for a handed-over connection when
	// none came: the request's first, for the first Read.
	first []byte

	mu      sync.Mutex
	closed  bool
	handed  bool      // Conn was handed over: the sandbox may hold it too
	readDL  time.Time // the deadlines set, to carry over to a handed-over connection
	writeDL time.Time
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
		} else if err := c.takeOver(); err != nil {
			c.err = err
			c.Close()
		}
	})
	return c.err
}

// takeOver reads the admitted connection's first byte. A forwarder sends
// forwarder.HandOver with the descriptor of the connection it accepted
// in the sandbox: this proxy then serves that connection itself, and the
// forwarder's is closed (no byte of the traffic passes through the
// forwarder). Any other first byte is a request's, kept for Read. A
// descriptor is taken only from an admitted peer, only one, and only a
// TCP socket (handedConn); any other is closed unused.
func (c *guardedConn) takeOver() error {
	uc, ok := c.Conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	b := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4)) // room for one descriptor: the kernel closes any more it carried
	n, oobn, flags, _, err := uc.ReadMsgUnix(b, oob)
	fds := receivedFDs(oob[:oobn])
	if err == nil && n == 1 && b[0] == forwarder.HandOver && len(fds) == 1 && flags&unix.MSG_CTRUNC == 0 {
		conn, err := handedConn(fds[0])
		if err != nil {
			return fmt.Errorf("the connection handed over: %w", err)
		}
		return c.swap(conn)
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	switch {
	case err != nil:
		return err
	case n == 0:
		return io.EOF
	case len(fds) > 0 || flags&unix.MSG_CTRUNC != 0 || b[0] == forwarder.HandOver:
		return errors.New("a connection handed over other than as the forwarder does")
	case b[0] == forwarder.Channel:
		return c.serveChannel(uc)
	}
	c.first = b
	return nil
}

// errChannelEnded ends a hand-over channel's own connection.
var errChannelEnded = errors.New("the hand-over channel ended")

// serveChannel serves an admitted connection that announced itself as a
// forwarder's hand-over channel (forwarder.Channel): it answers
// forwarder.ChannelReady, then takes one connection per message, each as
// takeOver takes one (one forwarder.HandOver byte, one descriptor, a TCP
// socket's), and gives it to the listener's Accept as a connection handed
// over. It returns when the channel ends: at its end, at Close, or at the
// first message no forwarder sends (another byte, no descriptor or more
// than one, one not a TCP socket's, a truncated one), whose descriptors
// are closed unused.
//
// The sandbox's server is the adversary here, and it gains nothing from a
// channel: it can always connect to the socket itself and pass the same
// admit (once, for a channel), and what a channel then takes is what
// takeOver takes on a connection of its own, checked as strictly, and
// served as a handed-over connection (no request it carries is trusted
// more). Each connection a channel carries is a connection of the
// server's under Serve's MaxConns like any other: the channel reads the
// next message only once Accept took the last, so a channel that floods
// waits (the kernel bounds what is in flight on the socket, charging it
// to the sender), holding one connection's slot itself, as a held
// lifeline does. Its read deadline (the header's, set by the HTTP server)
// is lifted: a channel lasts as long as its forwarder.
func (c *guardedConn) serveChannel(uc *net.UnixConn) error {
	if _, err := uc.Write([]byte{forwarder.ChannelReady}); err != nil {
		return err
	}
	uc.SetReadDeadline(time.Time{})
	b := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, flags, _, err := uc.ReadMsgUnix(b, oob)
		fds := receivedFDs(oob[:oobn])
		if err != nil || n != 1 || b[0] != forwarder.HandOver || len(fds) != 1 || flags&unix.MSG_CTRUNC != 0 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return errChannelEnded
		}
		conn, err := handedConn(fds[0])
		if err != nil {
			return fmt.Errorf("%w: %v", errChannelEnded, err)
		}
		g := &guardedConn{Conn: conn, l: c.l, handed: true}
		g.once.Do(func() {}) // checked: the channel was admitted, the descriptor is a TCP socket's
		select {
		case c.l.handed <- g:
		case <-c.l.done:
			g.Close()
			return errChannelEnded
		}
	}
}

// receivedFDs are the descriptors a control message carried.
func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if f, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

// swap makes n the connection, the deadlines set so far carried over,
// and closes the forwarder's.
func (c *guardedConn) swap(n net.Conn) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		n.Close()
		return net.ErrClosed
	}
	old := c.Conn
	c.Conn, c.handed = n, true
	n.SetReadDeadline(c.readDL)
	n.SetWriteDeadline(c.writeDL)
	old.Close()
	return nil
}

func (c *guardedConn) Read(b []byte) (int, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	if len(c.first) > 0 && len(b) > 0 {
		b[0], c.first = c.first[0], nil
		return 1, nil
	}
	return c.Conn.Read(b)
}

func (c *guardedConn) Write(b []byte) (int, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// Close ends a handed-over connection both ways first: the sandbox
// holds descriptors of it too, and it ends when the proxy says. Its last
// close may wait in the kernel on an SO_LINGER the sandbox set (any
// setting of ours it can set back first), so it runs in the background,
// lingerClosers at a time: the proxy's shutdown does not wait on the
// sandbox, and no more threads than that wait so. Beyond them a close
// resets the connection (abortive).
func (c *guardedConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if !c.handed {
		return c.Conn.Close()
	}
	if tc, ok := c.Conn.(interface {
		CloseRead() error
		CloseWrite() error
	}); ok {
		tc.CloseRead()
		tc.CloseWrite()
	}
	conn := c.Conn
	select {
	case lingerClosers <- struct{}{}:
		go func() {
			conn.Close()
			<-lingerClosers
		}()
		return nil
	default:
		// The pool is full: only a sandbox that leaves connections
		// lingering fills it. This close resets the connection rather
		// than wait: SO_LINGER 0. A sender that still holds a descriptor
		// may set its own back, but then this close is not the last,
		// and does not wait either (only a sender that sets it back and
		// closes its own in the instant between the two still can).
		abortive(conn)
		return conn.Close()
	}
}

// abortive makes c's close reset the connection at once (SO_LINGER 0).
func abortive(c net.Conn) {
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				unix.SetsockoptLinger(int(fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
			})
		}
	}
}

// lingerClosers bounds the handed-over connections closed in the
// background (guardedConn.Close).
var lingerClosers = make(chan struct{}, 64)

func (c *guardedConn) LocalAddr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.LocalAddr()
}

func (c *guardedConn) RemoteAddr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.RemoteAddr()
}

func (c *guardedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDL, c.writeDL = t, t
	return c.Conn.SetDeadline(t)
}

func (c *guardedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDL = t
	return c.Conn.SetReadDeadline(t)
}

func (c *guardedConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeDL = t
	return c.Conn.SetWriteDeadline(t)
}

// bare is the connection a guard admitted, unwrapped once it has been
// (a hijacked request was read through the check) and its first byte
// read: what the tunnel copies from and to.
func bare(c net.Conn) net.Conn {
	if g, ok := c.(*guardedConn); ok && g.check() == nil && len(g.first) == 0 {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.Conn
	}
	return c
}

// CloseWrite passes a half-close on: the HTTP server half-closes a
// connection it ends after an error, so the client reads the answer.
func (c *guardedConn) CloseWrite() error {
	c.mu.Lock()
	defer c.mu.Unlock()
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
