package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// lifelinePath is a request the proxy holds open until it stops: the
// forwarder's way to learn that the proxy, and so the supervisor, is gone.
// Its arrival also tells the supervisor that the forwarder is listening.
const lifelinePath = "/.mcpolicy/lifeline"

// lifelineWait bounds how long a lifeline waits to be let in.
const lifelineWait = 30 * time.Second

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
//
// A container sidecar may start before the supervisor has learnt its uid
// and opened the socket to it (see supervise): while the socket says
// permission denied, Lifeline tries again, for lifelineWait at most.
func Lifeline(socket string) error {
	c, err := net.Dial("unix", socket)
	for deadline := time.Now().Add(lifelineWait); err != nil && errors.Is(err, syscall.EACCES) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		c, err = net.Dial("unix", socket)
	}
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
	select {
	case p.lifelineArrivals() <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	<-r.Context().Done()
}

// lifelineArrivals signals each lifeline that arrives.
func (p *Proxy) lifelineArrivals() chan struct{} {
	p.lifelineMu.Lock()
	defer p.lifelineMu.Unlock()
	if p.lifelines == nil {
		p.lifelines = make(chan struct{}, 16)
	}
	return p.lifelines
}

// WaitForwarder returns once a forwarder has connected its lifeline.
func (p *Proxy) WaitForwarder(ctx context.Context) error {
	select {
	case <-p.lifelineArrivals():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the egress forwarder did not start: %w", ctx.Err())
	}
}
