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
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/runtime/egress/forwarder"
	"golang.org/x/sys/unix"
)

// openChannel connects to the proxy's socket and announces a hand-over
// channel, as a forwarder does, and returns it once the proxy answered
// ChannelReady.
func openChannel(t *testing.T, sock string) *net.UnixConn {
	t.Helper()
	u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	if _, err := u.Write([]byte{forwarder.Channel}); err != nil {
		t.Fatal(err)
	}
	u.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(u, b); err != nil || b[0] != forwarder.ChannelReady {
		t.Fatalf("the channel's answer: %q, %v; want ChannelReady", b, err)
	}
	u.SetReadDeadline(time.Time{})
	return u
}

// sendOn writes b with the descriptors fds on u and closes them.
func sendOn(u *net.UnixConn, b []byte, fds ...*os.File) error {
	var ints []int
	for _, f := range fds {
		ints = append(ints, int(f.Fd()))
	}
	_, _, err := u.WriteMsgUnix(b, unix.UnixRights(ints...), nil)
	for _, f := range fds {
		f.Close()
	}
	return err
}

// echoes reports whether a CONNECT to echo sent on client, with the
// tunnel's first bytes, comes back through the tunnel, and the connection
// then ends (nobody else holds it open).
func echoes(client *net.TCPConn, echo string) error {
	fmt.Fprintf(client, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nping", echo, echo)
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(client)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("CONNECT: %s", resp.Status)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "ping" {
		return fmt.Errorf("through the tunnel: %q, %v", got, err)
	}
	client.CloseWrite()
	if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
		return fmt.Errorf("after the echo: %q, %v", rest, err)
	}
	return nil
}

// notServed fails unless nobody serves client: a request on it ends
// unanswered.
func notServed(t *testing.T, client *net.TCPConn) {
	t.Helper()
	fmt.Fprint(client, "CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: x\r\n\r\n")
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	// (Reset when it was closed with the request unread.)
	if b, err := io.ReadAll(client); len(b) != 0 || err != nil && !errors.Is(err, unix.ECONNRESET) {
		t.Errorf("the connection handed over was served: %q, %v", b, err)
	}
}

// TestChannel: a hand-over channel is admitted once, and every connection
// it carries is served as a handed-over one.
func TestChannel(t *testing.T) {
	var admits atomic.Int32
	sock, echo, log := handOverProxy(t, func(net.Conn) error { admits.Add(1); return nil })
	u := openChannel(t, sock)
	for i := range 3 {
		client, server := tcpPair(t)
		if err := sendOn(u, []byte{forwarder.HandOver}, fileOf(t, server)); err != nil {
			t.Fatal(err)
		}
		server.Close()
		if err := echoes(client, echo); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	if n := admits.Load(); n != 1 {
		t.Errorf("%d peer checks, want 1 (the channel's)", n)
	}
	for deadline := time.Now().Add(10 * time.Second); strings.Count(log.String(), `"bytesUp":4`) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("log %q: want three tunnels logged", log.String())
		}
	}
}

// TestChannelHostile: the server in the sandbox can open a channel of its
// own (it passes the same peer check); what it sends on it is taken only
// as a forwarder sends it. Any other message ends the channel, and closes
// unused every descriptor it carried; a connection sent after that is
// not served either.
func TestChannelHostile(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, c := range []struct {
		name  string
		first byte
		fds   func(t *testing.T, server *net.TCPConn) []*os.File
	}{
		{name: "garbage", first: 'x'},
		{name: "request-byte-with-fd", first: 'C', fds: func(t *testing.T, s *net.TCPConn) []*os.File { return []*os.File{fileOf(t, s)} }},
		{name: "channel-again", first: forwarder.Channel},
		{name: "no-fd", first: forwarder.HandOver},
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
		{name: "channel-with-fd", first: forwarder.Channel, fds: func(t *testing.T, s *net.TCPConn) []*os.File { return []*os.File{fileOf(t, s)} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			sock, _, _ := handOverProxy(t, func(net.Conn) error { return nil })
			u := openChannel(t, sock)
			client, server := tcpPair(t)
			var fds []*os.File
			if c.fds != nil {
				fds = c.fds(t, server)
			}
			if err := sendOn(u, []byte{c.first}, fds...); err != nil {
				t.Fatal(err)
			}
			server.Close()
			u.SetReadDeadline(time.Now().Add(10 * time.Second))
			if said, err := io.ReadAll(u); len(said) != 0 || err != nil && !errors.Is(err, unix.ECONNRESET) {
				t.Fatalf("the channel after %q: %q, %v; want it ended with nothing said", c.first, said, err)
			}
			notServed(t, client)
			// The channel is gone: a connection sent on it now is lost.
			late, lateServer := tcpPair(t)
			sendOn(u, []byte{forwarder.HandOver}, fileOf(t, lateServer))
			lateServer.Close()
			notServed(t, late)
		})
	}
}

// TestChannelRefused: a channel from a peer the proxy refuses is told
// the refusal, as any connection of that peer, and is never ready.
func TestChannelRefused(t *testing.T) {
	sock, _, _ := handOverProxy(t, func(net.Conn) error { return errors.New("not a process of the sandbox") })
	u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	// (The refusal may come first: the write then fails, its answer stays.)
	u.Write([]byte{forwarder.Channel})
	u.SetReadDeadline(time.Now().Add(10 * time.Second))
	said, err := io.ReadAll(u)
	if err != nil && !errors.Is(err, unix.ECONNRESET) {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(said), "HTTP/1.1 403 Forbidden") {
		t.Errorf("a refused channel was told %q, want the 403", said)
	}
}

// openFDs is how many descriptors this process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1 // ReadDir's own
}

// TestChannelFloodIsBounded: a server that sends connections on a channel
// faster than the proxy serves them (here: none of them ever sends a
// request) gets no more of them held by the proxy than MaxConns allows:
// the channel reads the next one only once the last was accepted, and the
// rest wait in the kernel, charged to the sender.
func TestChannelFloodIsBounded(t *testing.T) {
	const maxConns, flood = 4, 200
	sock, _, _ := handOverProxyMax(t, func(net.Conn) error { return nil }, maxConns)
	u := openChannel(t, sock)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var servers []*os.File
	for range flood {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() // held, silent, until the end
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, fileOf(t, s.(*net.TCPConn)))
		s.Close()
	}
	before := openFDs(t)
	u.SetWriteDeadline(time.Now().Add(2 * time.Second))
	sent := 0
	for _, f := range servers {
		if sendOn(u, []byte{forwarder.HandOver}, f) == nil {
			sent++
		}
	}
	if sent <= maxConns+2 {
		t.Fatalf("only %d connections sent: no flood to bound", sent)
	}
	held := func() int { return openFDs(t) - (before - flood) }
	for deadline := time.Now().Add(10 * time.Second); held() < maxConns-1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy holds %d of the %d connections sent, want at least %d", held(), sent, maxConns-1)
		}
	}
	time.Sleep(300 * time.Millisecond) // room to take more, if it would
	// MaxConns less the channel's own, one read and waiting to be
	// accepted, and one of slack.
	n := held()
	t.Logf("%d connections sent, %d held by the proxy", sent, n)
	if n > maxConns+1 {
		t.Errorf("the proxy holds %d of the %d connections sent on one channel; want at most %d (MaxConns %d)", n, sent, maxConns+1, maxConns)
	}
}

// TestForwarderUsesChannel: a forwarder opens its channel at once, and
// once it is ready no connection costs a peer check of its own.
func TestForwarderUsesChannel(t *testing.T) {
	var admits atomic.Int32
	sock, echo, _ := handOverProxy(t, func(net.Conn) error { admits.Add(1); return nil })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go forwarder.Forward(ln, sock)
	through := func() {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := echoes(c.(*net.TCPConn), echo); err != nil {
			t.Fatal(err)
		}
	}
	// Until the channel is ready, connections go on their own.
	for deadline := time.Now().Add(10 * time.Second); ; {
		n := admits.Load()
		through()
		if admits.Load() == n && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("every connection still costs a peer check (%d)", admits.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	n := admits.Load()
	for range 10 {
		through()
	}
	if m := admits.Load(); m != n {
		t.Errorf("%d more peer checks for 10 connections over a ready channel, want none", m-n)
	}
}

// TestForwarderChannelLifecycle, against a stand-in proxy that says how
// each connection reached it: before the channel is ready, and after it
// ended, the forwarder hands each connection over on a socket connection
// of its own; in between, over the channel, its own descriptor closed
// at once.
func TestForwarderChannelLifecycle(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "egress.sock")
	fl, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	// answer writes how on the handed descriptor and closes it.
	answer := func(fd int, how string) {
		unix.Write(fd, []byte(how))
		unix.Close(fd)
	}
	read := func(u *net.UnixConn) (byte, []int, error) {
		b, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := u.ReadMsgUnix(b, oob)
		if err == nil && n == 0 {
			err = io.EOF
		}
		return b[0], receivedFDs(oob[:oobn]), err
	}
	channels := make(chan *net.UnixConn, 1)
	go func() {
		for {
			c, err := fl.Accept()
			if err != nil {
				return
			}
			u := c.(*net.UnixConn)
			first, fds, err := read(u)
			switch {
			case err == nil && first == forwarder.Channel && len(fds) == 0:
				channels <- u
			case err == nil && first == forwarder.HandOver && len(fds) == 1:
				answer(fds[0], "own")
				u.Close()
			default:
				t.Errorf("the stand-in proxy read %q, %d descriptors, %v", first, len(fds), err)
				u.Close()
			}
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go forwarder.Forward(ln, sock)
	how := func() string {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(c) // to its end: nobody else holds it open
		if err != nil {
			t.Fatalf("after %q: %v", b, err)
		}
		return string(b)
	}
	var ch *net.UnixConn
	select {
	case ch = <-channels:
	case <-time.After(10 * time.Second):
		t.Fatal("the forwarder opened no channel")
	}
	if got := how(); got != "own" {
		t.Fatalf("before the channel is ready: %q, want own", got)
	}
	if _, err := ch.Write([]byte{forwarder.ChannelReady}); err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			first, fds, err := read(ch)
			if err != nil {
				return
			}
			if first != forwarder.HandOver || len(fds) != 1 {
				t.Errorf("on the channel: %q, %d descriptors", first, len(fds))
				return
			}
			answer(fds[0], "channel")
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); how() != "channel"; {
		if time.Now().After(deadline) {
			t.Fatal("no connection came over the ready channel")
		}
	}
	for range 5 {
		if got := how(); got != "channel" {
			t.Fatalf("over a ready channel: %q", got)
		}
	}
	ch.Close()
	<-served
	for range 3 {
		if got := how(); got != "own" {
			t.Fatalf("after the channel ended: %q, want own", got)
		}
	}
}
