package toolrelay

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// memoryPolicy is the example policy of issue 40 for the memory server.
func memoryPolicy() *toolpolicy.Policy {
	return &toolpolicy.Policy{
		Server:     "memory",
		PolicyFile: "mcpolicy.cue",
		Allow: []toolpolicy.Rule{
			{Pattern: "read_graph", Field: "servers.memory.tools.allow[0]"},
			{Pattern: "search_*", Field: "servers.memory.tools.allow[1]"},
			{Pattern: "read_file", Field: "servers.memory.tools.allow[2]"},
			{Pattern: "echo", Field: "servers.memory.tools.allow[3]"},
		},
		Deny: []toolpolicy.Rule{{Pattern: "delete_*", Field: "servers.memory.tools.deny[0]"}},
		Args: []toolpolicy.ArgRule{
			{Tool: "read_file", Arg: "path", Field: "servers.memory.tools.args.read_file.path", Under: []string{"/workspace"}},
			{Tool: "search_nodes", Arg: "query", Field: "servers.memory.tools.args.search_nodes.query", Pattern: "^[a-z ]+$", MaxBytes: 256},
		},
		OnPinChange: "hide",
	}
}

// harness runs Run between a test client and a test server, each on real
// pipes (os.Pipe, as the launcher's are).
type harness struct {
	t *testing.T

	client    *os.File      // the client writes here (Run's ClientIn)
	clientOut *bufio.Reader // and reads Run's ClientOut here
	server    *bufio.Reader // the server reads Run's ServerIn here
	serverOut *os.File      // and writes Run's ServerOut here

	mu        sync.Mutex
	decisions []Decision
	done      chan error
	cancel    context.CancelFunc
	closers   []io.Closer
}

func newHarness(t *testing.T, p *toolpolicy.Policy) *harness {
	t.Helper()
	h := &harness{t: t, done: make(chan error, 1)}
	pipe := func() (*os.File, *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		h.closers = append(h.closers, r, w)
		return r, w
	}
	cin, cw := pipe()
	cr, cout := pipe()
	sr, sin := pipe()
	sout, sw := pipe()
	h.client, h.clientOut = cw, bufio.NewReaderSize(cr, 1<<20)
	h.server, h.serverOut = bufio.NewReaderSize(sr, 1<<20), sw
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		h.done <- Run(ctx, Config{Policy: p, ClientIn: cin, ClientOut: cout, ServerIn: sin, ServerOut: sout,
			Log: func(d Decision) {
				h.mu.Lock()
				h.decisions = append(h.decisions, d)
				h.mu.Unlock()
			}})
	}()
	t.Cleanup(func() {
		cancel()
		h.serverOut.Close()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
		for _, c := range h.closers {
			c.Close()
		}
	})
	return h
}

func (h *harness) send(s string) {
	h.t.Helper()
	if _, err := io.WriteString(h.client, s); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) serve(s string) {
	h.t.Helper()
	if _, err := io.WriteString(h.serverOut, s); err != nil {
		h.t.Fatal(err)
	}
}

// line reads one line, failing after a while: these tests wait for an
// answer that must come, never time one.
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	c := make(chan res, 1)
	go func() {
		s, err := r.ReadString('\n')
		c <- res{s, err}
	}()
	select {
	case x := <-c:
		if x.err != nil {
			t.Fatalf("read: %v (got %q)", x.err, x.s)
		}
		return x.s
	case <-time.After(20 * time.Second):
		t.Fatal("no line came")
	}
	return ""
}

func (h *harness) fromRelay() string { h.t.Helper(); return readLine(h.t, h.clientOut) }
func (h *harness) toServer() string  { h.t.Helper(); return readLine(h.t, h.server) }

func (h *harness) logged() []Decision {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Decision(nil), h.decisions...)
}

// errorOf decodes a JSON-RPC error response.
func errorOf(t *testing.T, line string) (id string, code int, msg string, data map[string]string) {
	t.Helper()
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int               `json:"code"`
			Message string            `json:"message"`
			Data    map[string]string `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.Error.Code == 0 {
		t.Fatalf("not an error response: %q (%v)", line, err)
	}
	return string(r.ID), r.Error.Code, r.Error.Message, r.Error.Data
}

// toolNames are the names of a tools/list answer's tools.
func toolNames(t *testing.T, line string) string {
	t.Helper()
	var r struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("not a tools/list answer: %q: %v", line, err)
	}
	var names []string
	for _, x := range r.Result.Tools {
		names = append(names, x.Name)
	}
	return strings.Join(names, ",")
}

const listAnswer = `{"jsonrpc":"2.0","id":%s,"result":{"tools":[` +
	`{"name":"read_graph","description":"Read the graph","inputSchema":{"type":"object"}},` +
	`{"name":"delete_entities","description":"Delete","inputSchema":{"type":"object"}},` +
	`{"name":"search_nodes","description":"Search","inputSchema":{"type":"object","properties":{"query":{"type":"string"}}}},` +
	`{"name":"create_entities","description":"Create","inputSchema":{"type":"object"}}]}}` + "\n"
