package egress

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mcpolicy/mcpolicy/runtime/egress/forwarder"
)

// lifelinePath is the forwarder's request the proxy holds open until it
// stops (forwarder.LifelinePath).
const lifelinePath = forwarder.LifelinePath

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
