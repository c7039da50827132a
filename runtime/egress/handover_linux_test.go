package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/syncbuf"
	"github.com/mcpolicy/mcpolicy/runtime/egress/forwarder"
	"golang.org/x/sys/unix"
)

// handOverProxy serves a proxy allowing an echo server on a guarded unix
// socket; admit decides who is let in. It returns the socket and the echo
// server's address.
func handOverProxy(t *testing.T, admit func(net.Conn) error) (sock, echo string, log *syncbuf.Buffer) {
	t.Helper()
	return handOverProxyMax(t, admit, 0)
}

// handOverProxyMax is handOverProxy serving at most maxConns connections
// at once (0: the default).
func handOverProxyMax(t *testing.T, admit func(net.Conn) error, maxConns int) (sock, echo string, log *syncbuf.Buffer) {
	t.Helper()
	echo = echoUpstream(t)
	allow, err := allowlist.Parse([]string{echo})
	if err != nil {
		t.Fatal(err)
	}
	log = &syncbuf.Buffer{}
	p := &Proxy{Allow: allow, Log: log, MaxConns: maxConns}
	sock = filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(p.Guard(ln, admit))
	t.Cleanup(p.Close)
	return sock, echo, log
}

// echoUpstream serves an echo on a loopback port, for the test's life,
// and returns its address.
func echoUpstream(t *testing.T) string {
	t.Helper()
	eln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eln.Close() })
	go func() {
		for {
			c, err := eln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return eln.Addr().String()
}

// tcpPair is a connected pair of loopback TCP connections.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// sendFDs writes b on the proxy's socket with the descriptors fds, as a
// forwarder does with one, closes them, and returns the socket's
// connection. A proxy that refused this process may have closed it first.
func sendFDs(t *testing.T, sock string, b []byte, fds ...*os.File) *net.UnixConn {
	t.Helper()
	u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	var ints []int
	for _, f := range fds {
		ints = append(ints, int(f.Fd()))
	}
	if _, _, err := u.WriteMsgUnix(b, unix.UnixRights(ints...), nil); err != nil {
		t.Logf("sent: %v", err)
	}
	for _, f := range fds {
		f.Close()
	}
	return u
}

// fileOf is a descriptor of c's own.
func fileOf(t *testing.T, c interface {
	File() (*os.File, error)
}) *os.File {
	t.Helper()
	f, err := c.File()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestHandOver: a forwarder's connection handed over with HandOver is
// served by the proxy itself, the forwarder's end of the socket closed at
// once: a CONNECT sent on it, with the tunnel's first bytes in the same
// write, comes back from the echo server through the tunnel, with none of
// it passing through the socket.
func TestHandOver(t *testing.T) {
	sock, echo, log := handOverProxy(t, func(net.Conn) error { return nil })
	client, server := tcpPair(t)
	u := sendFDs(t, sock, []byte{forwarder.HandOver}, fileOf(t, server))
	server.Close()
	u.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.Copy(io.Discard, u); n != 0 || err != nil {
		t.Fatalf("the forwarder's end: %d bytes, %v; want closed with nothing said", n, err)
	}
	fmt.Fprintf(client, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nping", echo, echo)
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(client)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "ping" {
		t.Fatalf("through the tunnel: %q, %v", got, err)
	}
	client.CloseWrite()
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Errorf("after the echo: %q", rest)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), `"bytesUp":4`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("log %q: want the tunnel's 4 bytes up counted", log.String())
		}
	}
}

// TestHandOverRefused: the proxy takes a descriptor only from an admitted
// peer, only one, and only a TCP socket's; any other is closed unused and
// the socket's connection ended. A refused peer's connection is answered
// on the socket (the forwarder passes it on), its descriptor untouched.
func TestHandOverRefused(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, c := range []struct {
		name   string
		refuse bool
		first  byte
		fds    func(t *testing.T, server *net.TCPConn) []*os.File
	}{
		{name: "pipe", first: forwarder.HandOver, fds: func(*testing.T, *net.TCPConn) []*os.File { return []*os.File{w} }},
		{name: "unix-socket", first: forwarder.HandOver, fds: func(t *testing.T, _ *net.TCPConn) []*os.File {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(fds[1]) })
			return []*os.File{os.NewFile(uintptr(fds[0]), "socketpair")}
		}},
		{name: "two", first: forwarder.HandOver, fds: func(t *testing.T, s *net.TCPConn) []*os.File { return []*os.File{fileOf(t, s), fileOf(t, s)} }},
		{name: "request-byte", first: 'C', fds: func(t *testing.T, s *net.TCPConn) []*os.File { return []*os.File{fileOf(t, s)} }},
		{name: "not-admitted", refuse: true, first: forwarder.HandOver, fds: func(t *testing.T, s *net.TCPConn) []*os.File { return []*os.File{fileOf(t, s)} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			sock, _, _ := handOverProxy(t, func(net.Conn) error {
				if c.refuse {
					return errors.New("not a process of the sandbox")
				}
				return nil
			})
			client, server := tcpPair(t)
			u := sendFDs(t, sock, []byte{c.first}, c.fds(t, server)...)
			server.Close()
			u.SetReadDeadline(time.Now().Add(10 * time.Second))
			said, err := io.ReadAll(u)
			switch {
			case c.refuse && errors.Is(err, unix.ECONNRESET):
				// The refusal closed the socket with the descriptor unread.
			case err != nil:
				t.Fatal(err)
			case c.refuse != strings.Contains(string(said), "403 Forbidden"):
				t.Errorf("the socket's answer: %q", said)
			}
			// Nobody serves the handed connection: it ends unanswered.
			fmt.Fprint(client, "CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: x\r\n\r\n")
			client.SetReadDeadline(time.Now().Add(10 * time.Second))
			// (Reset when it was closed with the request unread.)
			if b, err := io.ReadAll(client); len(b) != 0 || err != nil && !errors.Is(err, unix.ECONNRESET) {
				t.Errorf("the connection handed over was served: %q, %v", b, err)
			}
		})
	}
}

// TestForwarderRelaysRefusal: a forwarder whose process the proxy refuses
// passes the refusal on to its client.
func TestForwarderRelaysRefusal(t *testing.T) {
	sock, echo, _ := handOverProxy(t, func(net.Conn) error { return errors.New("not a process of the sandbox") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go forwarder.Forward(ln, sock)
	c, err := connect(ln.Addr().String(), echo)
	if err == nil {
		c.Close()
		t.Fatal("a refused forwarder's client got a tunnel")
	}
	if !strings.Contains(err.Error(), "403") {
		t.Errorf("%v, want the proxy's 403", err)
	}
}
