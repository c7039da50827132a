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
	Stderr  string // everything the process wrote on stderr
}

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
// name, and its stderr.
func ListTools(ctx context.Context, argv []string, env []string) ([]Tool, string, error) {
	var tools []Tool
	stderr, err := session(ctx, argv, env, func(cs *mcp.ClientSession) error {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return fmt.Errorf("tools/list: %w", err)
			}
			tools = append(tools, Tool{Name: t.Name, Description: t.Description})
		}
		return nil
	})
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, stderr, err
}

// session runs argv, connects, runs f, and stops the process. The error
// names the command and quotes the tail of its stderr.
func session(ctx context.Context, argv []string, env []string, f func(*mcp.ClientSession) error) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("mcpcall: empty command")
	}
	// The command's context is cancelled on return: whatever the session
	// did, the process does not outlive the call.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Env = env
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = terminate // a grandchild holding stderr open cannot block Wait

	client := mcp.NewClient(&mcp.Implementation{Name: "mcpcall", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminate}, nil)
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
