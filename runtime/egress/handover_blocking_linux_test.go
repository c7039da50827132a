package egress

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHandedConnStaysNonBlocking: the sender of a handed-over socket
// shares its open file, O_NONBLOCK included, and may clear it once it is
// sent. The proxy's reads and writes on it must still wait through its
// poller, so that deadlines (the header timeout) and Close end them, not
// in a system call that blocks a thread until the sandbox says.
func TestHandedConnStaysNonBlocking(t *testing.T) {
	client, server := tcpPair(t)
	defer client.Close()
	f := fileOf(t, server)
	defer f.Close()
	dup, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := handedConn(dup)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The sandbox's own descriptor: the same open file, made blocking.
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFL, fl&^unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past its deadline: %v", err)
		}
	case <-time.After(10 * time.Second):
		client.Close() // lets the blocked read go
		t.Fatal("a read past its deadline blocked in the kernel: the sender cleared O_NONBLOCK")
	}
	// A write the client does not read: it fills the buffers, then waits.
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	go func() {
		_, err := c.Write(make([]byte, 64<<20))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write past its deadline: %v", err)
		}
	case <-time.After(10 * time.Second):
		client.Close()
		t.Fatal("a write past its deadline blocked in the kernel: the sender cleared O_NONBLOCK")
	}
}

// TestHandedConnCloseIgnoresSendersLinger: the sender of a handed-over
// socket may set SO_LINGER on it (the socket's, not the descriptor's),
// close its own descriptors and leave its peer's window shut: the
// proxy's close is then the last and waits, in the kernel, until the data
// is taken or the linger time passes. Close (the supervisor's shutdown
// closes each tunnel in turn) must not wait on the sandbox so.
func TestHandedConnCloseIgnoresSendersLinger(t *testing.T) {
	client, g := lingeringHanded(t, 16<<20, 300*time.Millisecond)
	defer client.Close()
	done := make(chan struct{})
	go func() { g.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		client.Close() // the peer gone, the close ends
		<-done
		t.Fatal("Close waited on the sender's SO_LINGER with the peer's window shut")
	}
}

// TestCopyBufsBounded: no more than cap(bigBufs) large copy buffers are
// out at once (a stalled tunnel keeps its buffer while its write waits);
// beyond them a copy gets a small one.
func TestCopyBufsBounded(t *testing.T) {
	type out struct {
		bp  *[]byte
		big bool
	}
	var outs []out
	defer func() {
		for _, o := range outs {
			putCopyBuf(o.bp, o.big)
		}
	}()
	large := 0
	for range cap(bigBufs) + 8 {
		bp, big := getCopyBuf()
		outs = append(outs, out{bp, big})
		if len(*bp) >= copyBufSize {
			large++
		}
	}
	if large > cap(bigBufs) {
		t.Fatalf("%d large copy buffers out at once, want at most %d", large, cap(bigBufs))
	}
}

// lingeringHanded is a connection handed over by a sender that set a 1 h
// SO_LINGER on its copy and closed it, with up to fill bytes of the
// proxy's queued (for at most wait) to a client that reads nothing.
func lingeringHanded(t *testing.T, fill int, wait time.Duration) (client *net.TCPConn, g *guardedConn) {
	t.Helper()
	client, server := tcpPair(t)
	client.SetReadBuffer(1024)
	f := fileOf(t, server)
	dup, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := handedConn(dup)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetsockoptLinger(int(f.Fd()), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 3600}); err != nil {
		t.Fatal(err)
	}
	server.Close()
	f.Close()
	c.SetWriteDeadline(time.Now().Add(wait))
	c.Write(make([]byte, fill))
	return client, &guardedConn{Conn: c, handed: true}
}
