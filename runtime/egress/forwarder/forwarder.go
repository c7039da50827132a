// Package forwarder is the egress forwarder inside a sandbox: it listens
// on the sandbox's loopback and hands every connection to the egress
// proxy's unix socket, bound in from the host. It is small on purpose
// (no HTTP, no CUE): mcpolicy-launch runs it, and it stays resident beside
// the server for as long as the server runs.
package forwarder

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/exitcode"
	"golang.org/x/sys/unix"
)

// Command is the forwarder's word on a command line: mcpolicy and
// mcpolicy-launch both run it (sandbox.ForwardCommand).
const Command = "egress-forward"

// LifelinePath is a request the proxy holds open until it stops: the
// forwarder's way to learn that the proxy, and so the supervisor, is gone.
// Its arrival also tells the supervisor that the forwarder is listening.
const LifelinePath = "/.mcpolicy/lifeline"

// HandOver is the one byte a forwarder sends on the proxy's socket with a
// connection's descriptor: the proxy serves that connection itself, so
// no byte of it passes through the forwarder. No HTTP request starts
// with it.
const HandOver byte = 0

// lifelineWait bounds how long a lifeline, or the hand-over channel,
// waits to be let in.
const lifelineWait = 30 * time.Second

// Channel is the first byte, sent alone, of a forwarder's hand-over
// channel: one connection to the proxy's socket, admitted once, that
// carries the descriptors of every connection accepted after the proxy
// answered it with ChannelReady (one HandOver byte and one descriptor a
// message), so a connection costs no dial and no peer check of its own.
// No HTTP request starts with it.
const Channel byte = 1

// ChannelReady is the proxy's answer to Channel: the channel is admitted.
// Anything else (a refusal's "HTTP/1.1 403 ...") leaves the forwarder on
// one socket connection per connection, whose client reads the refusal.
const ChannelReady byte = 6

// Forward accepts connections on ln and hands each to the proxy at the
// unix socket, until ln is closed: over the hand-over channel once the
// proxy admitted it, else (before that, or after it ended) on a socket
// connection of its own.
func Forward(ln net.Listener, socket string) error {
	ch := &channel{}
	go ch.open(socket)
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		// A send waits only while the proxy's side of the channel is
		// full (it serves MaxConns already): then so does accepting.
		if !ch.send(c) {
			go handOver(c, socket)
		}
	}
}

// channel is the forwarder's hand-over channel, once the proxy admitted it.
type channel struct {
	up atomic.Pointer[net.UnixConn]
}

// open connects the channel, waits for the proxy's ChannelReady, and
// keeps it until the proxy ends it; it is not opened again (the proxy
// ends it when it stops, or when it was sent what no forwarder sends).
func (ch *channel) open(socket string) {
	up, err := dialWaiting(socket)
	if err != nil {
		return
	}
	b := []byte{Channel}
	if _, err := up.Write(b); err != nil {
		up.Close()
		return
	}
	if _, err := io.ReadFull(up, b); err != nil || b[0] != ChannelReady {
		up.Close() // refused, or an older proxy: one connection each
		return
	}
	ch.up.Store(up)
	// The proxy says nothing more: a byte or the end, and the channel is done.
	up.Read(b)
	ch.up.CompareAndSwap(up, nil)
	up.Close()
}

// send hands c over on the channel and closes this process's descriptor
// of it; false when there is no channel, or it failed (c is then still
// open, for a connection of its own).
func (ch *channel) send(c net.Conn) bool {
	up := ch.up.Load()
	if up == nil {
		return false
	}
	sent := false
	withFD(c, func(fd int) {
		_, _, err := up.WriteMsgUnix([]byte{HandOver}, unix.UnixRights(fd), nil)
		sent = err == nil
	})
	if !sent {
		ch.up.CompareAndSwap(up, nil)
		return false
	}
	c.Close() // the proxy holds its own descriptor
	return true
}

// withFD runs f with c's descriptor, if it has one.
func withFD(c net.Conn, f func(fd int)) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { f(int(fd)) })
}

// dialUnix connects to the proxy's socket.
func dialUnix(socket string) (*net.UnixConn, error) {
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: socket, Net: "unix"})
}

// dialWaiting connects to the proxy's socket. A container sidecar may
// start before the supervisor has learnt its uid and opened the socket to
// it (see supervise): while the socket says permission denied, it tries
// again, for lifelineWait at most.
func dialWaiting(socket string) (*net.UnixConn, error) {
	c, err := dialUnix(socket)
	for deadline := time.Now().Add(lifelineWait); err != nil && errors.Is(err, syscall.EACCES) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		c, err = dialUnix(socket)
	}
	return c, err
}

// handOver sends c's descriptor to the proxy on a socket connection of
// its own. The proxy closes its end of the socket once it holds the
// connection; until then what it says (a refusal of this process) is the
// client's.
func handOver(c net.Conn, socket string) {
	defer c.Close() // this process's descriptor; the proxy holds its own
	up, err := dialUnix(socket)
	if err != nil {
		return // the client sees its connection closed: no way out
	}
	defer up.Close()
	// A write that fails (the proxy refused this process before it read
	// a byte) still leaves the refusal to read.
	withFD(c, func(fd int) {
		up.WriteMsgUnix([]byte{HandOver}, unix.UnixRights(fd), nil)
	})
	io.Copy(c, up)
}

// Lifeline connects to the proxy (dialWaiting) and returns when the proxy
// closes the connection (or cannot be reached).
func Lifeline(socket string) error {
	c, err := dialWaiting(socket)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: mcpolicy\r\n\r\n", LifelinePath); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, bufio.NewReader(c))
	return err
}

// Listen listens on 127.0.0.1:port (0: any free port). Its connections
// get no TCP keepalive: they are the sandbox's loopback ones, handed over
// at once, and setting it is four system calls each.
func Listen(port int) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	return lc.Listen(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// Run listens on 127.0.0.1:port, hands connections to the proxy's socket,
// and either runs argv (stdio unchanged; its exit status returned) or,
// with lifeline, serves until the proxy is gone. With both, the server is
// sent SIGTERM when the proxy goes: no proxy, no server.
func Run(port int, socket string, lifeline bool, argv []string) (int, error) {
	ln, err := Listen(port)
	if err != nil {
		return 1, err
	}
	defer ln.Close()
	go Forward(ln, socket)

	if len(argv) == 0 {
		if !lifeline {
			return 1, errors.New(Command + ": give a command to run, or --lifeline")
		}
		Lifeline(socket)
		return 0, nil
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if lifeline {
		go func() {
			Lifeline(socket)
			cancel()
		}()
	}
	return run(ctx, cmd)
}

// run starts cmd, passes SIGINT, SIGTERM and SIGHUP on to it (and SIGTERM
// when ctx ends), and returns its exit status, 128+N for a signal N as
// shells report it.
func run(ctx context.Context, cmd *exec.Cmd) (int, error) {
	// From before the start: a signal that comes while cmd starts is
	// passed on too, not the end of this process.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 127, err
	}
	done := make(chan struct{})
	passing := make(chan struct{})
	go func() {
		defer close(passing)
		for {
			select {
			case sig := <-sigs:
				cmd.Process.Signal(sig)
			case <-ctx.Done():
				cmd.Process.Signal(syscall.SIGTERM)
				return
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-passing // no signal is passed on after run returns

	return exitcode.OfWait(err)
}

// Main is `egress-forward --port N [--socket PATH] [--lifeline] [-- CMD
// ARGS...]` (args after the word): it returns the exit status.
func Main(args []string) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	port := fs.Int("port", 0, "loopback port to listen on")
	socket := fs.String("socket", sandbox.Socket, "the proxy's unix socket")
	lifeline := fs.Bool("lifeline", false, "exit when the proxy goes away")
	if err := fs.Parse(args); err != nil {
		return 1
	}
	if *port <= 0 || *port > 65535 {
		fmt.Fprintf(os.Stderr, "%s: --port N is required\n", Command)
		return 1
	}
	code, err := Run(*port, *socket, *lifeline, fs.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Command, err)
	}
	return code
}
