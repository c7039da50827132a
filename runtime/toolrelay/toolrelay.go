// Package toolrelay is the relay on a server's stdio pipe (issue 40): it
// filters tools/list and refuses the tools/call requests its
// toolpolicy.Policy does not allow, and passes every other message through
// byte for byte. It runs in the launcher, outside the sandbox, and sees
// messages, not files: the tool layer is a cooperating-server control,
// beside the kernel's, which still decides every open.
//
// The MCP stdio transport is newline-delimited JSON-RPC 2.0. What the relay
// does with each message:
//
//   - From the client, a tools/call (request or notification) whose tool
//     is not visible, was hidden for a pin change, or whose arguments
//     break a constraint is answered with a JSON-RPC error (code -32001,
//     naming the policy file and field) and not forwarded. A client line
//     the relay cannot parse, or longer than MaxClientLine, is refused the
//     same way (-32700, -32600): it might be a tools/call a more lenient
//     parser reads. A batch (a JSON array, MCP 2025-03-26) holding a
//     refused call is refused whole: each request in it gets an error, in
//     one array, and nothing of it is forwarded (its notifications are
//     dropped). Everything else is forwarded as the exact bytes read.
//   - From the server, the answer to a tools/list the client sent (the
//     relay remembers their ids, matched loosely: see idKey) is filtered:
//     tools not visible are removed, and with a pin, tools that differ
//     from it or are not in it are hidden for the rest of the session
//     (onPinChange "hide") or the answer becomes an error and every later
//     tools/list and tools/call is refused ("refuse"). Only a changed
//     answer is re-encoded. An answer that does not parse, or longer than
//     MaxServerLine, is replaced by an error: tools/list fails closed.
//     A result whose id is no request the relay forwarded is dropped (on a
//     long line, cut at it): the server was not asked, and a client whose
//     request the relay has not read yet (or holds while a long line
//     streams) would take it for the answer. Every other line passes byte
//     for byte, as it streams: a line longer
//     than MaxServerLine is never held whole. When such a line turns out
//     to answer a tools/list (its id comes late, or twice) or holds a
//     batch, it is cut where that begins, ending the line there (an
//     unfinished object no client parses), and the tools/list gets an
//     error. A line that ends inside a JSON value gets a NUL byte before
//     its newline: a client that reads values, not lines, would join it
//     to the next line, which the relay reads as a line of its own.
//
// Decisions are logged through Config.Log with names, fields and rules,
// never the values of arguments.
package toolrelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// Config is one relay: the client's stdio on one side, the sandbox's on the
// other.
type Config struct {
	Policy *toolpolicy.Policy

	ClientIn  io.Reader // the client's stdio (launcher's stdin/stdout)
	ClientOut io.Writer
	ServerIn  io.WriteCloser // the sandbox's stdio pipes
	ServerOut io.Reader

	Log func(Decision) // nil: none
}

// Decision is one thing the relay decided, logged as a JSON line in the
// server's launch log. It names tools, arguments and rules, never the
// values of arguments.
type Decision struct {
	Time   time.Time       `json:"time"`
	Kind   string          `json:"kind"` // "call-refused", "tool-hidden", "pin-changed", "pin-refused"
	Tool   string          `json:"tool,omitempty"`
	Arg    string          `json:"arg,omitempty"`
	Field  string          `json:"field,omitempty"`
	Reason string          `json:"reason,omitempty"`
	ID     json.RawMessage `json:"id,omitempty"`
}

// The kinds of Decision.
const (
	KindCallRefused = "call-refused"
	KindToolHidden  = "tool-hidden"
	KindPinChanged  = "pin-changed"
	KindPinRefused  = "pin-refused"
)

// The longest line the relay holds whole. A client line over
// MaxClientLine is refused; a server line over MaxServerLine streams
// through, except as the package comment says.
const (
	MaxClientLine = 8 << 20
	MaxServerLine = 8 << 20
)

// Run relays until the server's stdout ends (or ctx is done): the client's
// EOF closes ServerIn, and the server's last answers still reach the
// client. It returns nil at the server's EOF, ctx's error when ctx ends
// first, or the error of a side that failed. Before it returns it wakes
// its goroutines, setting a past deadline on the pipes that take one
// (os.Pipe's and exec's do), and waits for them: none is left. On a pipe
// that takes no deadline (os.Stdin on a terminal), the goroutine reading
// it ends at its next read, writing nothing.
func Run(ctx context.Context, c Config) error {
	r, err := newRelay(c)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	serverDone := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.fromClient()
	}()
	go func() { serverDone <- r.fromServer() }()

	var result error
	serverEnded := false
	select {
	case result = <-serverDone:
		serverEnded = true
	case <-ctx.Done():
		result = ctx.Err()
	}
	r.stop()
	r.closeServerIn()
	past := time.Unix(1, 0)
	out := wake(c.ClientOut, func(d deadliner) error { return d.SetWriteDeadline(past) })
	if !serverEnded && out && wake(c.ServerOut, func(d deadliner) error { return d.SetReadDeadline(past) }) {
		<-serverDone
	}
	if out && wake(c.ClientIn, func(d deadliner) error { return d.SetReadDeadline(past) }) {
		wg.Wait()
	}
	return result
}

type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// wake sets a deadline on x when it takes one.
func wake(x any, set func(deadliner) error) bool {
	d, ok := x.(deadliner)
	return ok && set(d) == nil
}

type relay struct {
	c   Config
	pol *toolpolicy.Policy
	pin *toolpolicy.PinCheck

	// out orders what reaches the client: a line is written whole under
	// it, and a tools/list id is remembered under it, so no answer the
	// server wrote before the id was remembered can be written after.
	out     sync.Mutex
	lists   *lists
	pending pending // under out
	stopped atomic.Bool

	mu         sync.Mutex // what the server's answers taught
	hidden     map[string]string
	pinRefused string // the refusal's reason, once refused
	seen       map[string]bool
	logged     map[string]bool

	logMu    sync.Mutex
	closeIn  sync.Once
	closeErr error
}

// maxLogged bounds the distinct hidden tools logged; past it, one more
// line says so.
const maxLogged = 4096

func newRelay(c Config) (*relay, error) {
	if c.Policy == nil {
		return nil, errors.New("toolrelay: no tool policy: a relay without one would pass every call")
	}
	r := &relay{
		c: c, pol: c.Policy, lists: newLists(),
		hidden: map[string]string{}, seen: map[string]bool{}, logged: map[string]bool{},
	}
	if c.Policy.Pin != nil {
		pc, err := toolpolicy.NewPinCheck(c.Policy.Pin)
		if err != nil {
			return nil, err
		}
		r.pin = pc
	}
	return r, nil
}

// stop makes every later write to the client a no-op: nothing reaches the
// client after Run returned. It takes no lock: a writer may be blocked.
func (r *relay) stop() { r.stopped.Store(true) }

func (r *relay) closeServerIn() {
	r.closeIn.Do(func() { r.closeErr = r.c.ServerIn.Close() })
}

func (r *relay) log(d Decision) {
	if r.c.Log == nil {
		return
	}
	d.Time = time.Now().UTC()
	r.logMu.Lock()
	defer r.logMu.Unlock()
	r.c.Log(d)
}

// logOnce logs d the first time its kind, tool and field are seen.
// Callers hold mu.
func (r *relay) logOnce(d Decision) {
	k := d.Kind + "\x00" + d.Tool + "\x00" + d.Field
	if r.logged[k] {
		return
	}
	switch {
	case len(r.logged) < maxLogged:
		r.logged[k] = true
		r.log(d)
	case len(r.logged) == maxLogged:
		r.logged[""] = true
		r.log(Decision{Kind: d.Kind, Reason: fmt.Sprintf("over %d tools decided: the others are not logged one by one", maxLogged)})
	}
}

// writeClient writes p to the client as one piece, nothing once Run
// returned. Callers hold out.
func (r *relay) writeClient(p ...[]byte) error {
	if r.stopped.Load() {
		return nil
	}
	for _, b := range p {
		if _, err := r.c.ClientOut.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// answer writes the relay's own messages to the client, each a line.
func (r *relay) answer(msgs ...[]byte) error {
	r.out.Lock()
	defer r.out.Unlock()
	for _, m := range msgs {
		if err := r.writeClient(m, nl); err != nil {
			return err
		}
	}
	return nil
}

var nl = []byte{'\n'}
