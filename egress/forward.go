package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
)

// Inside a bwrap or container sandbox the network namespace is empty: the
// forwarder (mcpolicy itself, bound read-only) listens on loopback there
// and carries each connection to the proxy's unix socket, bound in from
// the host. These are their paths inside the sandbox.
const (
	SandboxDir      = "/.mcpolicy"
	ForwarderBinary = SandboxDir + "/mcpolicy"
	SandboxSocket   = SandboxDir + "/egress.sock"
)

// ForwardCommand is the argv that starts the forwarder in a sandbox; with
// lifeline it exits when the proxy goes away (a container sidecar has no
// parent to die with).
func ForwardCommand(port int, lifeline bool) []string {
	a := []string{ForwarderBinary, "egress-forward", "--port", strconv.Itoa(port), "--socket", SandboxSocket}
	if lifeline {
		a = append(a, "--lifeline")
	}
	return a
}

// lifelinePath is a request the proxy holds open until it stops: the
// forwarder's way to learn that the proxy, and so the supervisor, is gone.
// Its arrival also tells the supervisor that the forwarder is listening.
const lifelinePath = "/.mcpolicy/lifeline"

// Forward accepts connections on ln and carries each to the unix socket,
// until ln is closed.
func Forward(ln net.Listener, socket string) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("unix", socket)
			if err != nil {
				return // the client sees its connection closed: no way out
			}
			defer up.Close()
			splice(c, up)
		}()
	}
}

// splice copies both ways until both directions are done.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
}

// Lifeline connects to the proxy and returns when the proxy closes the
// connection (or cannot be reached).
func Lifeline(socket string) error {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: mcpolicy\r\n\r\n", lifelinePath); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, bufio.NewReader(c))
	return err
}

// serveLifeline holds the request until the proxy's server closes it; the
// proxy counts it so the supervisor can wait for a forwarder.
func (p *Proxy) serveLifeline(w http.ResponseWriter, r *http.Request) {
	p.lifelineMu.Lock()
	if p.lifelines == nil {
		p.lifelines = make(chan struct{}, 16)
	}
	ch := p.lifelines
	p.lifelineMu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	<-r.Context().Done()
}

// WaitForwarder returns once a forwarder has connected its lifeline.
func (p *Proxy) WaitForwarder(ctx context.Context) error {
	p.lifelineMu.Lock()
	if p.lifelines == nil {
		p.lifelines = make(chan struct{}, 16)
	}
	ch := p.lifelines
	p.lifelineMu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the egress forwarder did not start: %w", ctx.Err())
	}
}

// RunForwarder is `mcpolicy egress-forward`: listen on 127.0.0.1:port,
// forward to socket, and either run argv (stdio unchanged, signals passed
// on, its exit status returned) or, with lifeline, serve until the proxy
// is gone.
func RunForwarder(port int, socket string, lifeline bool, argv []string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 1, err
	}
	defer ln.Close()
	go Forward(ln, socket)

	if len(argv) == 0 {
		if !lifeline {
			return 1, errors.New("egress-forward: give a command to run, or --lifeline")
		}
		Lifeline(socket)
		return 0, nil
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 127, err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	if lifeline {
		go func() {
			Lifeline(socket)
			cmd.Process.Kill() // no proxy: no server
		}()
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}
