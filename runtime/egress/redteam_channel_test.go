//go:build linux

package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/runtime/egress/forwarder"
	"golang.org/x/sys/unix"
)

// The red team's attacks on the hand-over channel: the server in the
// sandbox can connect to the proxy's socket itself, pass the same peer
// check a forwarder passes, and send what it likes on the channel. None
// of it may get a request served unchecked, hold more than MaxConns, leak
// descriptors or goroutines, or hang the proxy.

// rtProxy serves a proxy allowing only an echo server, on a guarded unix
// socket admitting every peer, at most maxConns at once. The caller
// closes it (Close is also a cleanup: a second Close is harmless).
func rtProxy(t *testing.T, maxConns int) (p *Proxy, sock, echo string, served chan error) {
	t.Helper()
	echo = echoUpstream(t)
	allow, err := allowlist.Parse([]string{echo})
	if err != nil {
		t.Fatal(err)
	}
	p = &Proxy{Allow: allow, MaxConns: maxConns, Resolve: noResolve}
	sock = filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	served = make(chan error, 1)
	go func() { served <- p.Serve(p.Guard(ln, func(net.Conn) error { return nil })) }()
	t.Cleanup(p.Close)
	return p, sock, echo, served
}

// noResolve resolves nothing: a denied name never reaches the network.
func noResolve(ctx context.Context, host string) ([]netip.Addr, error) {
	return nil, errors.New("no resolver in this test")
}

// settles fails unless the goroutines come back to at most base.
func settles(t *testing.T, base int) {
	t.Helper()
	n := 0
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, want at most %d as before:\n%s", n, base, buf)
		}
	}
}

// fdsSettle fails unless this process's descriptors come back to at most base.
func fdsSettle(t *testing.T, base int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); openFDs(t) > base; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open, want at most %d as before", openFDs(t), base)
		}
	}
}

// channelEnds fails unless the proxy ends the channel u, saying nothing.
func channelEnds(t *testing.T, u *net.UnixConn) {
	t.Helper()
	u.SetReadDeadline(time.Now().Add(10 * time.Second))
	if said, err := io.ReadAll(u); len(said) != 0 || err != nil && !errors.Is(err, unix.ECONNRESET) {
		t.Fatalf("the channel: %q, %v; want it ended with nothing said", said, err)
	}
}

// stillServes fails unless a fresh channel still carries a connection
// through to the echo server.
func stillServes(t *testing.T, sock, echo string) {
	t.Helper()
	u := openChannel(t, sock)
	client, server := tcpPair(t)
	if err := sendOn(u, []byte{forwarder.HandOver}, fileOf(t, server)); err != nil {
		t.Fatal(err)
	}
	server.Close()
	if err := echoes(client, echo); err != nil {
		t.Fatalf("after the attack, a forwarder's connection: %v", err)
	}
	u.Close()
}

// socketFile is a new socket's descriptor as a file.
func socketFile(t *testing.T, domain, typ, proto int) *os.File {
	t.Helper()
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), "socket")
}

// TestRedteamChannelDescriptorKinds: descriptors no forwarder sends, on
// a ready channel. Those not a TCP socket's end the channel, closed
// unused; a TCP socket that is not connected (new, bound, listening)
// passes the check, but serving it ends at its first read: nothing is
// served, nothing is held, and the proxy serves the next channel.
func TestRedteamChannelDescriptorKinds(t *testing.T) {
	for _, c := range []struct {
		name  string
		fd    func(t *testing.T) *os.File
		takes bool // a TCP socket: taken, then ends on its own
	}{
		{name: "udp", fd: func(t *testing.T) *os.File { return socketFile(t, unix.AF_INET, unix.SOCK_DGRAM, 0) }},
		{name: "udp-connected", fd: func(t *testing.T) *os.File {
			c, err := net.Dial("udp", "127.0.0.1:9")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			return fileOf(t, c.(*net.UDPConn))
		}},
		{name: "unix-dgram", fd: func(t *testing.T) *os.File { return socketFile(t, unix.AF_UNIX, unix.SOCK_DGRAM, 0) }},
		{name: "unix-listening", fd: func(t *testing.T) *os.File {
			l, err := net.Listen("unix", filepath.Join(t.TempDir(), "l.sock"))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			return fileOf(t, l.(*net.UnixListener))
		}},
		{name: "eventfd", fd: func(t *testing.T) *os.File {
			fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
			if err != nil {
				t.Fatal(err)
			}
			return os.NewFile(uintptr(fd), "eventfd")
		}},
		{name: "regular-file", fd: func(t *testing.T) *os.File {
			f, err := os.Create(filepath.Join(t.TempDir(), "f"))
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
		{name: "tcp-new", takes: true, fd: func(t *testing.T) *os.File { return socketFile(t, unix.AF_INET, unix.SOCK_STREAM, 0) }},
		{name: "tcp6-new", takes: true, fd: func(t *testing.T) *os.File { return socketFile(t, unix.AF_INET6, unix.SOCK_STREAM, 0) }},
		{name: "tcp-listening", takes: true, fd: func(t *testing.T) *os.File {
			f := socketFile(t, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP)
			if err := unix.Bind(int(f.Fd()), &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
				t.Fatal(err)
			}
			if err := unix.Listen(int(f.Fd()), 8); err != nil {
				t.Fatal(err)
			}
			return f
		}},
		// Go listens with MPTCP where the kernel has it: taken, not
		// accepted from.
		{name: "mptcp-listening", takes: true, fd: func(t *testing.T) *os.File {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP)
			if err != nil { // no MPTCP in this kernel: a plain TCP one
				t.Logf("no MPTCP here (%v): a TCP socket", err)
				fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
			}
			unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
			unix.Listen(fd, 8)
			return os.NewFile(uintptr(fd), "mptcp")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, sock, echo, _ := rtProxy(t, 8)
			stillServes(t, sock, echo) // the proxy's own goroutines and descriptors started
			base, fds := runtime.NumGoroutine(), openFDs(t)
			u := openChannel(t, sock)
			if err := sendOn(u, []byte{forwarder.HandOver}, c.fd(t)); err != nil {
				t.Fatal(err)
			}
			if !c.takes {
				channelEnds(t, u)
			} else {
				// Taken as a TCP socket's: served, its first read fails,
				// and the channel goes on. A connection sent after it is
				// served as any.
				client, server := tcpPair(t)
				if err := sendOn(u, []byte{forwarder.HandOver}, fileOf(t, server)); err != nil {
					t.Fatal(err)
				}
				server.Close()
				if err := echoes(client, echo); err != nil {
					t.Fatalf("the channel after %s: %v", c.name, err)
				}
				client.Close()
			}
			u.Close()
			fdsSettle(t, fds)
			settles(t, base)
			stillServes(t, sock, echo)
		})
	}
}

// TestRedteamChannelTCPListenerNotServed: a listening TCP socket sent on
// a channel is not accepted from: a process that connects to it is never
// answered by the proxy (it stays in the backlog, or is reset).
func TestRedteamChannelTCPListenerNotServed(t *testing.T) {
	_, sock, _, _ := rtProxy(t, 8)
	var lc net.ListenConfig
	lc.SetMultipathTCP(false) // a plain TCP listener: its protocol passes the check
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := openChannel(t, sock)
	if err := sendOn(u, []byte{forwarder.HandOver}, fileOf(t, l.(*net.TCPListener))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the proxy's read of it
	c, err := net.Dial("tcp", l.Addr().String())
	if errors.Is(err, unix.ECONNREFUSED) {
		return // the proxy's shutdown of it stopped its listening: nothing to serve
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if b, err := io.ReadAll(c); len(b) != 0 {
		t.Errorf("a connection to a listener sent on a channel was answered: %q, %v", b, err)
	}
	l.Close()
}

// TestRedteamChannelRequestsChecked: a TCP socket connected anywhere
// (here to a process of the attacker's, which writes the requests) sent
// on a channel is served as a client of the proxy: every request on it is
// checked against the allowlist as any other. A denied CONNECT, a denied
// absolute GET, an origin-form GET, and a CONNECT to a port of the allowed
// host not listed all get the proxy's refusal, and none reaches anything.
func TestRedteamChannelRequestsChecked(t *testing.T) {
	_, sock, echo, _ := rtProxy(t, 8)
	echoHost, _, _ := net.SplitHostPort(echo)
	u := openChannel(t, sock)
	for _, c := range []struct {
		req    string
		status int
		denied string
	}{
		{"CONNECT denied.example:443 HTTP/1.1\r\nHost: denied.example:443\r\n\r\n", 403, DeniedNotListed},
		{"GET http://denied.example/secret HTTP/1.1\r\nHost: denied.example\r\n\r\n", 403, DeniedNotListed},
		{"GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n", 403, "*"},
		{"CONNECT " + echoHost + ":1 HTTP/1.1\r\nHost: x\r\n\r\n", 403, "*"},
		{"GET /secret HTTP/1.1\r\nHost: denied.example\r\n\r\n", 400, ""},
		{"POST http://denied.example/ HTTP/1.1\r\nHost: denied.example\r\nContent-Length: 4\r\n\r\nleak", 403, DeniedNotListed},
	} {
		client, server := tcpPair(t)
		if err := sendOn(u, []byte{forwarder.HandOver}, fileOf(t, server)); err != nil {
			t.Fatal(err)
		}
		server.Close()
		fmt.Fprint(client, c.req)
		client.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(client), nil)
		if err != nil {
			t.Fatalf("%q: %v", c.req, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%q: %s, want %d", c.req, resp.Status, c.status)
		}
		if got := resp.Header.Get(DeniedHeader); c.denied == "*" && got == "" || c.denied != "*" && got != c.denied {
			t.Errorf("%q: %s %q, want %q", c.req, DeniedHeader, got, c.denied)
		}
		client.Close()
	}
}

// TestRedteamChannelAnnouncements: the channel's announcement sent as no
// forwarder sends it (with a descriptor, two bytes at once, then nothing;
// or the socket closed at once) is no channel: nothing is served, the
// descriptor is closed unused, and the proxy holds nothing after.
func TestRedteamChannelAnnouncements(t *testing.T) {
	_, sock, echo, _ := rtProxy(t, 8)
	stillServes(t, sock, echo)
	base, fds := runtime.NumGoroutine(), openFDs(t)
	dial := func() *net.UnixConn {
		u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	// Channel with a descriptor: refused, the descriptor not served.
	client, server := tcpPair(t)
	u := dial()
	sendOn(u, []byte{forwarder.Channel}, fileOf(t, server))
	server.Close()
	channelEnds(t, u)
	u.Close()
	notServed(t, client)
	client.Close()

	// Channel, then a HandOver byte with no descriptor: ended.
	u = dial()
	u.Write([]byte{forwarder.Channel, forwarder.HandOver})
	u.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(u, b); err != nil || b[0] != forwarder.ChannelReady {
		t.Fatalf("%q, %v", b, err)
	}
	channelEnds(t, u)
	u.Close()

	// Channel and gone at once, before the answer; half-closed after it.
	for range 20 {
		u = dial()
		u.Write([]byte{forwarder.Channel})
		u.Close()
	}
	u = openChannel(t, sock)
	u.CloseWrite()
	channelEnds(t, u)
	u.Close()

	// A HandOver message cut short: the byte goes, the socket closes.
	u = openChannel(t, sock)
	client, server = tcpPair(t)
	f := fileOf(t, server)
	server.Close()
	u.Write([]byte{forwarder.HandOver})
	u.Close()
	f.Close()
	notServed(t, client)
	client.Close()

	fdsSettle(t, fds)
	settles(t, base)
	stillServes(t, sock, echo)
}

// TestRedteamChannelsBeyondMaxConns: channels are connections: no more
// than MaxConns are ready at once, a silent one holds its own slot and no
// other, and a slot comes back when its channel ends.
func TestRedteamChannelsBeyondMaxConns(t *testing.T) {
	const maxConns = 3
	_, sock, echo, _ := rtProxy(t, maxConns)
	type result struct {
		u     *net.UnixConn
		ready bool
	}
	results := make(chan result, 3*maxConns)
	for range 3 * maxConns {
		go func() {
			u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
			if err != nil {
				results <- result{}
				return
			}
			u.Write([]byte{forwarder.Channel})
			u.SetReadDeadline(time.Now().Add(2 * time.Second))
			b := make([]byte, 1)
			_, err = io.ReadFull(u, b)
			u.SetReadDeadline(time.Time{})
			results <- result{u, err == nil && b[0] == forwarder.ChannelReady}
		}()
	}
	var ready, waiting []*net.UnixConn
	for range 3 * maxConns {
		r := <-results
		if r.u == nil {
			continue
		}
		t.Cleanup(func() { r.u.Close() })
		if r.ready {
			ready = append(ready, r.u)
		} else {
			waiting = append(waiting, r.u)
		}
	}
	if len(ready) != maxConns {
		t.Fatalf("%d channels ready at once, want MaxConns %d", len(ready), maxConns)
	}
	// Every slot is a silent channel's: a connection of the server's own waits.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "CONNECT denied.example:443 HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Fatalf("served beyond MaxConns: %q", b)
	}
	c.Close()
	// A channel that ends gives its slot back.
	for _, u := range ready[1:] {
		u.Close()
	}
	for _, u := range waiting {
		u.Close()
	}
	client, server := tcpPair(t)
	if err := sendOn(ready[0], []byte{forwarder.HandOver}, fileOf(t, server)); err != nil {
		t.Fatal(err)
	}
	server.Close()
	if err := echoes(client, echo); err != nil {
		t.Fatal(err)
	}
}

// TestRedteamChannelCloseRaces: Close while channels are being opened,
// are flooding connections, are waiting for a slot and are silent:
// Close returns, Serve returns ErrServerClosed, the channels are ended,
// and the proxy's goroutines and descriptors are all gone.
func TestRedteamChannelCloseRaces(t *testing.T) {
	for round := range 5 {
		base, fds := runtime.NumGoroutine(), openFDs(t)
		p := &Proxy{MaxConns: 4, Resolve: noResolve}
		sock := filepath.Join(t.TempDir(), "egress.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- p.Serve(p.Guard(ln, func(net.Conn) error { return nil })) }()
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
					if err != nil {
						return
					}
					u.Write([]byte{forwarder.Channel})
					u.SetDeadline(time.Now().Add(5 * time.Second))
					for range 50 {
						a, b, err := pairFDs()
						if err != nil {
							break
						}
						_, _, err = u.WriteMsgUnix([]byte{forwarder.HandOver}, unix.UnixRights(b), nil)
						unix.Close(b)
						unix.Close(a)
						if err != nil {
							break
						}
					}
					io.Copy(io.Discard, u)
					u.Close()
				}
			}()
		}
		time.Sleep(time.Duration(50+50*round) * time.Millisecond)
		closed := make(chan struct{})
		go func() { p.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(20 * time.Second):
			t.Fatal("Close hangs with channels open")
		}
		select {
		case err := <-served:
			if !errors.Is(err, http.ErrServerClosed) {
				t.Fatalf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after Close")
		}
		close(stop)
		wg.Wait()
		fdsSettle(t, fds)
		settles(t, base)
	}
}

// pairFDs is a connected pair of loopback TCP sockets, as descriptors.
func pairFDs() (a, b int, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return -1, -1, err
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return -1, -1, err
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		return -1, -1, err
	}
	defer s.Close()
	fa, err := c.(*net.TCPConn).File()
	if err != nil {
		return -1, -1, err
	}
	fb, err := s.(*net.TCPConn).File()
	if err != nil {
		fa.Close()
		return -1, -1, err
	}
	a, _ = unix.Dup(int(fa.Fd()))
	b, _ = unix.Dup(int(fb.Fd()))
	fa.Close()
	fb.Close()
	return a, b, nil
}

// TestRedteamGuardAcceptAfterClose: a guarded listener closed returns
// net.ErrClosed from every Accept after, never a connection, with one of
// the socket's waiting and a channel's waiting to be accepted.
func TestRedteamGuardAcceptAfterClose(t *testing.T) {
	for range 20 {
		p := &Proxy{}
		sock := filepath.Join(t.TempDir(), "egress.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		gl := p.Guard(ln, func(net.Conn) error { return nil })
		// A channel, served by hand as the HTTP server would, its first
		// connection waiting for Accept.
		u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ch, err := gl.Accept()
		if err != nil {
			t.Fatal(err)
		}
		go func() { ch.Read(make([]byte, 1)) }()
		u.Write([]byte{forwarder.Channel})
		io.ReadFull(u, make([]byte, 1))
		client, server := tcpPair(t)
		sendOn(u, []byte{forwarder.HandOver}, fileOf(t, server))
		server.Close()
		// One of the socket's, accepted and waiting.
		w, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		gl.Close()
		for range 3 {
			if c, err := gl.Accept(); !errors.Is(err, net.ErrClosed) {
				if c != nil {
					c.Close()
				}
				t.Fatalf("Accept after Close: %v, %v; want net.ErrClosed", c, err)
			}
		}
		ch.Close()
		u.Close()
		w.Close()
		client.Close()
	}
}

// errListener is a raw listener whose Accept fails with err, n times
// (forever for n < 0), then waits for Close.
type errListener struct {
	net.Listener
	err   error
	mu    sync.Mutex
	n     int
	calls int
	done  chan struct{}
	once  sync.Once
}

func (l *errListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	l.calls++
	fail := l.n != 0
	if l.n > 0 {
		l.n--
	}
	l.mu.Unlock()
	if fail {
		return nil, l.err
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *errListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *errListener) Calls() int { l.mu.Lock(); defer l.mu.Unlock(); return l.calls }

type tempErr struct{}

func (tempErr) Error() string   { return "temporary" }
func (tempErr) Timeout() bool   { return false }
func (tempErr) Temporary() bool { return true }

// TestRedteamGuardRawAcceptErrors: an error of the socket's own Accept
// reaches Serve through the guard: a lasting one ends Serve with it at
// once (no spinning, the guard's goroutine gone), a passing one is
// retried with the server's back-off, a handful of calls, not thousands.
func TestRedteamGuardRawAcceptErrors(t *testing.T) {
	base := runtime.NumGoroutine()
	lasting := errors.New("accept: the socket is gone")
	raw := &errListener{err: lasting, n: -1, done: make(chan struct{})}
	p := &Proxy{}
	served := make(chan error, 1)
	go func() { served <- p.Serve(p.Guard(raw, func(net.Conn) error { return nil })) }()
	select {
	case err := <-served:
		if !errors.Is(err, lasting) {
			t.Fatalf("Serve: %v, want %v", err, lasting)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return on a lasting accept error")
	}
	time.Sleep(100 * time.Millisecond)
	if n := raw.Calls(); n > 3 {
		t.Errorf("the socket's Accept called %d times after a lasting error, want it left", n)
	}
	p.Close()
	settles(t, base)

	raw = &errListener{err: tempErr{}, n: 1 << 30, done: make(chan struct{})}
	p = &Proxy{}
	served = make(chan error, 1)
	go func() { served <- p.Serve(p.Guard(raw, func(net.Conn) error { return nil })) }()
	time.Sleep(500 * time.Millisecond)
	if n := raw.Calls(); n > 20 {
		t.Errorf("a passing accept error retried %d times in half a second: spinning", n)
	}
	p.Close()
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	settles(t, base)
}

// TestRedteamForwarderFallbackRefusal: a forwarder whose channel the
// proxy refuses passes the refusal's text on to every client, channel or
// not, and opens no channel behind the proxy's back.
func TestRedteamForwarderFallbackRefusal(t *testing.T) {
	sock, echo, log := handOverProxy(t, func(net.Conn) error { return errors.New("not a process of the sandbox") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go forwarder.Forward(ln, sock)
	for i := range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", echo, echo)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(b), "HTTP/1.1 403 Forbidden") || !strings.Contains(string(b), "not a process of the sandbox") || !strings.Contains(string(b), DeniedNotSandbox) {
			t.Fatalf("client %d was told %q, want the 403 with the refusal", i, b)
		}
	}
	if strings.Contains(log.String(), `"allow"`) {
		t.Errorf("something was allowed: %s", log.String())
	}
}

// TestRedteamForwarderMPTCPClient: a client in the sandbox that connects
// to the forwarder with MPTCP (Go's listeners take it where the kernel
// has it) is served like any, policy checked, and does not end the
// forwarder's channel for the clients after it.
func TestRedteamForwarderMPTCPClient(t *testing.T) {
	var admits atomic.Int32
	sock, echo, _ := handOverProxy(t, func(net.Conn) error { admits.Add(1); return nil })
	ln, err := forwarder.Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go forwarder.Forward(ln, sock)
	var d net.Dialer
	d.SetMultipathTCP(true)
	dial := func(mptcp bool) *net.TCPConn {
		t.Helper()
		dd := d
		dd.SetMultipathTCP(mptcp)
		c, err := dd.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.TCPConn)
	}
	// Wait for the channel: a connection that costs no peer check.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := admits.Load()
		if err := echoes(dial(false), echo); err != nil {
			t.Fatal(err)
		}
		if admits.Load() == n && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no channel")
		}
	}
	c := dial(true)
	if mp, err := c.MultipathTCP(); err != nil || !mp {
		t.Logf("no MPTCP between the client and the forwarder here (%v, %v): a TCP client", mp, err)
	}
	if err := echoes(c, echo); err != nil {
		t.Errorf("an MPTCP client: %v", err)
	}
	n := admits.Load()
	if err := echoes(dial(false), echo); err != nil {
		t.Fatal(err)
	}
	if m := admits.Load(); m != n {
		t.Errorf("the client after an MPTCP one cost a peer check: its channel ended")
	}
}

// TestRedteamLingerClosesBeyondThePool: the sandbox can leave more
// handed-over connections lingering (SO_LINGER set, its descriptors
// closed, its window shut) than the proxy closes in the background
// (lingerClosers). Close of every one of them, in turn as the proxy's
// shutdown does, must still not wait on the sandbox.
func TestRedteamLingerClosesBeyondThePool(t *testing.T) {
	n := cap(lingerClosers) + 8
	var gs []*guardedConn
	var clients []*net.TCPConn
	defer func() {
		for _, c := range clients {
			c.Close() // the peers gone, any close still waiting ends
		}
	}()
	for range n {
		client, g := lingeringHanded(t, 4<<20, 20*time.Millisecond)
		clients = append(clients, client)
		gs = append(gs, g)
	}
	done := make(chan struct{})
	go func() {
		for _, g := range gs {
			g.Close()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("closing %d lingering handed-over connections (%d in the background) waited on the sandbox", n, cap(lingerClosers))
	}
}
