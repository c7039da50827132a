// Package mcpcall starts a stdio MCP server as a subprocess, talks to it
// with the official Go SDK client, and always stops it again. It is the
// smallest client that can put one tool call to a server — confined or not —
// and report what came back together with what the process wrote on stderr.
package mcpcall

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/syncbuf"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result is what one tool call returned.
type Result struct {
	Text    string // the text content items, concatenated (newline-separated)
	IsError bool   // the tool reported an error (a tool result, not a protocol error)
	Stderr  string // the last StderrKept bytes the process wrote on stderr
}

// StderrKept is how much of a server's stderr is kept: its end, which is
// all a caller quotes. A server writes as much as it likes; the caller's
// memory must not be what it fills.
const StderrKept = 64 << 10

// MaxTools bounds tools/list: a server that pages without end (a new
// cursor each time) is refused after this many tools.
const MaxTools = 10000

// Tool is one entry of tools/list.
type Tool struct {
	Name        string
	Description string
}

// terminate is how long the server gets to exit after its stdin is closed
// before it is sent SIGTERM (and then SIGKILL).
const terminate = 2 * time.Second

// Call starts argv, initializes an MCP session over its stdin/stdout, calls
// tool once with args, and stops the process. env is the process's whole
// environment (nil: inherit this process's). ctx bounds everything: when it
// is done the process is killed.
//
// On error the returned Result still carries the process's stderr.
func Call(ctx context.Context, argv []string, env []string, tool string, args map[string]any) (Result, error) {
	var res Result
	stderr, err := session(ctx, argv, env, func(cs *mcp.ClientSession) error {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return fmt.Errorf("tools/call %s: %w", tool, err)
		}
		res.IsError = r.IsError
		var texts []string
		for _, c := range r.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, t.Text)
			}
		}
		res.Text = strings.Join(texts, "\n")
		return nil
	})
	res.Stderr = stderr
	return res, err
}

// ListTools starts argv as Call does and returns its tools, sorted by
// name, and its stderr; at most MaxTools.
func ListTools(ctx context.Context, argv []string, env []string) ([]Tool, string, error) {
	var tools []Tool
	stderr, err := session(ctx, argv, env, func(cs *mcp.ClientSession) error {
		return eachTool(ctx, cs, func(t *mcp.Tool) bool {
			tools = append(tools, Tool{Name: t.Name, Description: t.Description})
			return true
		})
	})
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, stderr, err
}

// FindTool starts argv as Call does and returns the tool named name as
// tools/list gives it, nil when the server lists no such tool. It reads
// no further than that tool (and no more than MaxTools).
func FindTool(ctx context.Context, argv []string, env []string, name string) (*mcp.Tool, string, error) {
	var found *mcp.Tool
	stderr, err := session(ctx, argv, env, func(cs *mcp.ClientSession) error {
		return eachTool(ctx, cs, func(t *mcp.Tool) bool {
			if t.Name == name {
				found = t
				return false
			}
			return true
		})
	})
	return found, stderr, err
}

// eachTool calls f with each tool tools/list returns, page after page,
// until f returns false; more than MaxTools is an error.
func eachTool(ctx context.Context, cs *mcp.ClientSession, f func(*mcp.Tool) bool) error {
	n := 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if n++; n > MaxTools {
			return fmt.Errorf("tools/list: more than %d tools: refusing to read further", MaxTools)
		}
		if !f(t) {
			return nil
		}
	}
	return nil
}

// session runs argv, connects, runs f, and stops the process. The error
// names the command and quotes the tail of its stderr.
func session(ctx context.Context, argv []string, env []string, f func(*mcp.ClientSession) error) (string, error) {
	return sessionWith(ctx, argv, env, nil, f)
}

// sessionWith is session, with lists keeping tools/list's results raw.
func sessionWith(ctx context.Context, argv []string, env []string, lists *rawLists, f func(*mcp.ClientSession) error) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("mcpcall: empty command")
	}
	// The command's context is cancelled on return: whatever the session
	// did, the process does not outlive the call.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Env = env
	stderr := &syncbuf.Tail{Max: StderrKept}
	cmd.Stderr = stderr
	cmd.WaitDelay = terminate // a grandchild holding stderr open cannot block Wait
	dieWithCaller(cmd)

	// The client has no handler of any kind: boundedTransport drops the
	// server's notifications, and ends a session whose server sends more
	// requests of its own than MaxRequestsInFlight or MaxRequests allow.
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpcall", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, boundedTransport{Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: terminate}, lists: lists}, nil)
	if err != nil {
		cancel()
		if cmd.Process != nil && cmd.ProcessState == nil {
			_ = cmd.Wait() // a transport the SDK did not close; Wait after kill returns promptly
		}
		return stderr.String(), wrap(argv, "initialize", err, stderr.String())
	}
	ferr := f(cs)
	cerr := cs.Close() // closes stdin, waits, then SIGTERM, SIGKILL
	out := stderr.String()
	if ferr != nil {
		return out, wrap(argv, "", ferr, out)
	}
	if ctx.Err() != nil {
		return out, wrap(argv, "", ctx.Err(), out)
	}
	_ = cerr // the call succeeded; how the server exited afterwards does not change its answer
	return out, nil
}

func wrap(argv []string, what string, err error, stderr string) error {
	msg := fmt.Sprintf("mcpcall: %s", argv[0])
	if what != "" {
		msg += ": " + what
	}
	if s := strings.TrimSpace(stderr); s != "" {
		if len(s) > 2000 {
			s = "…" + s[len(s)-2000:]
		}
		return fmt.Errorf("%s: %w\nstderr:\n%s", msg, err, s)
	}
	return fmt.Errorf("%s: %w", msg, err)
}
