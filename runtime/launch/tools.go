package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
	"github.com/mcpolicy/mcpolicy/runtime/toolrelay"
)

// ReadTools reads the tool surface a verified artefact pins by digest
// (BwrapSpec.Tools, Ruleset.Tools, the engine's LabelTools):
// ROOT/.mcpolicy/tools/SERVER.json, opened below root without following a
// symlink, read once and used only when its digest is the artefact's. A
// missing or changed file is a TamperError: the server would otherwise
// start with no relay, or another one, on its stdio pipe.
func ReadTools(root, server, digest string) (*toolpolicy.Policy, error) {
	want := strings.TrimPrefix(digest, "sha256:")
	if !strings.HasPrefix(digest, "sha256:") || len(want) != 64 || strings.Trim(want, "0123456789abcdef") != "" {
		return nil, tampered("server %q: the artefact's tool-surface digest %q is not sha256:HEX: refusing to start; hint: run `mcpolicy build`", server, digest)
	}
	if server == "" || server == "." || server == ".." || strings.ContainsAny(server, "/\x00") {
		return nil, tampered("the artefact names the server %q: no tool surface has that name; refusing to start; hint: run `mcpolicy build`", server)
	}
	rel := ".mcpolicy/" + artefact.ToolsPath(server)
	b, err := readBeneath(root, rel, hostfile.MaxArtefact)
	if err != nil {
		return nil, err
	}
	if got := artefact.Digest(b); got != digest {
		return nil, tampered("%s/%s has changed since the artefact was built (%s, the artefact pins %s): the tool relay would enforce other rules than the reviewed ones, refusing to start; hint: if you changed the policy, run `mcpolicy build` (and `mcpolicy client TARGET --write`) and review the diff; if not, something rewrote it", root, rel, got, digest)
	}
	// Strict: a field this launcher does not know may be a rule it would
	// not enforce.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p toolpolicy.Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s/%s: not a tool surface: %v; hint: run `mcpolicy build` with this launcher's mcpolicy", root, rel, err)
	}
	if p.Server != server {
		return nil, tampered("%s/%s is the tool surface of server %q, not of %q: refusing to start; hint: run `mcpolicy build`", root, rel, p.Server, server)
	}
	return &p, nil
}

// missingTools is ReadTools' refusal of a tool surface that is not there.
func missingTools(root, rel string) error {
	return tampered("%s/%s is missing, and the artefact pins a tool surface: the server would start with no tool relay on its stdio, refusing to start; hint: run `mcpolicy build` (it writes the tool surface), then `mcpolicy client TARGET --write`", root, rel)
}

// ToolRelay is the tool relay (runtime/toolrelay) on a sandbox's stdio:
// the sandbox's first process gets the ends of two pipes as its stdin and
// stdout (Stdio), and the relay runs between their other ends and the
// client's stdio, in the launcher, outside every sandbox. A nil
// *ToolRelay is no relay: Stdio passes the launcher's own descriptors on
// untouched, and the other methods do nothing.
type ToolRelay struct {
	cfg     toolrelay.Config
	in, out *os.File // the child's stdin and stdout
	done    chan error
	cancel  context.CancelFunc
}

// NewToolRelay makes the pipes of a relay enforcing p, its decisions
// logged in log (nil: not logged); nil when p is nil.
func NewToolRelay(p *toolpolicy.Policy, log *launchlog.Launch) (*ToolRelay, error) {
	if p == nil {
		return nil, nil
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	t := &ToolRelay{in: inR, out: outW, cfg: toolrelay.Config{Policy: p, ServerIn: inW, ServerOut: outR}}
	if log != nil {
		t.cfg.Log = func(d toolrelay.Decision) {
			log.Decided(launchlog.Decision{Time: d.Time, Decision: d.Kind, Tool: d.Tool, Arg: d.Arg, Field: d.Field, Reason: d.Reason, ID: d.ID})
		}
	}
	return t, nil
}

// Stdio is what the child gets as its stdin and stdout: the relay's
// pipes, or in and out when there is no relay.
func (t *ToolRelay) Stdio(in, out *os.File) (*os.File, *os.File) {
	if t == nil {
		return in, out
	}
	return t.in, t.out
}

// Start runs the relay between the client's stdio and the child's, once
// the child has started: this process's copies of the child's ends are
// closed first, so that the child's end is the relay's end.
func (t *ToolRelay) Start(clientIn io.Reader, clientOut io.Writer) {
	if t == nil {
		return
	}
	t.in.Close()
	t.out.Close()
	// A client that closed its stdout must not end the launcher by
	// SIGPIPE (Go's default for a write to fd 1), and with it the sandbox:
	// with a handler the write fails instead (as launchlog.NewTee does).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	t.done = make(chan error, 1)
	if clientIn == nil { // as exec.Cmd reads a nil Stdin: nothing
		clientIn = strings.NewReader("")
	}
	if clientOut == nil {
		clientOut = io.Discard
	}
	t.cfg.ClientIn, t.cfg.ClientOut = clientIn, clientOut
	go func() {
		err := toolrelay.Run(ctx, t.cfg)
		// Nothing relays any more: the server sees the end of its input,
		// and a write fails rather than wait for a reader.
		t.cfg.ServerIn.Close()
		t.cfg.ServerOut.(io.Closer).Close()
		t.done <- err
	}()
}

// relayDrain bounds the wait, once the child ended, for the relay to pass
// on what the sandbox still wrote: anything left holding the pipe's
// write end is not waited for (as launchlog.Tee's drain).
const relayDrain = 500 * time.Millisecond

// Wait waits, once the child has ended, for the relay to pass on the
// child's last output (at most relayDrain), then stops it.
func (t *ToolRelay) Wait() {
	if t == nil || t.done == nil {
		return
	}
	select {
	case <-t.done:
	case <-time.After(relayDrain):
		t.cfg.ServerOut.(*os.File).SetReadDeadline(time.Now())
		t.cancel()
		select {
		case <-t.done:
		case <-time.After(relayDrain):
		}
	}
	t.cancel()
}

// Close closes every end: for a child that did not start.
func (t *ToolRelay) Close() {
	if t == nil {
		return
	}
	for _, f := range []io.Closer{t.in, t.out, t.cfg.ServerIn, t.cfg.ServerOut.(io.Closer)} {
		f.Close()
	}
}
