package prove

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpolicy/mcpolicy/evidence/mcpcall"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

var memoryTools = &toolpolicy.Policy{
	Server: "memory", PolicyFile: "mcpolicy.cue",
	Allow: []toolpolicy.Rule{{Pattern: "read_graph", Field: "servers.memory.tools.allow[0]"}, {Pattern: "search_*", Field: "servers.memory.tools.allow[1]"}},
	Deny:  []toolpolicy.Rule{{Pattern: "delete_*", Field: "servers.memory.tools.deny[0]"}},
	Args: []toolpolicy.ArgRule{
		{Tool: "delete_entities", Arg: "names", Field: "servers.memory.tools.args.delete_entities.names", MaxBytes: 10},
		{Tool: "search_*", Arg: "query", Field: "servers.memory.tools.args.search_*.query", Pattern: "^[a-z ]+$", MaxBytes: 256},
	},
}

// TestToolCalls: the denied call names a tool the deny glob matches; the
// out-of-bounds call goes to a tool the policy shows (not a denied one),
// with a value its constraint refuses; a policy with nothing to refuse
// skips each, saying why.
func TestToolCalls(t *testing.T) {
	cs := toolCalls(memoryTools)
	if c := cs[0]; c.tool != "delete_x" || c.rule != "servers.memory.tools.deny[0]" || len(c.args) != 0 || c.skip != "" {
		t.Errorf("denied call: %+v", c)
	}
	if c := cs[1]; c.tool != "search_x" || c.rule != "servers.memory.tools.args.search_*.query" || len(c.args["query"].(string)) != 257 {
		t.Errorf("out-of-bounds call: %+v", c)
	}
	open := &toolpolicy.Policy{Server: "s", Allow: []toolpolicy.Rule{{Pattern: "*", Field: "servers.s.tools.allow[0]"}}}
	for _, c := range toolCalls(open) {
		if c.skip == "" {
			t.Errorf("allow *, no deny, no args: %+v not skipped", c)
		}
	}
	narrow := &toolpolicy.Policy{Server: "s", Allow: []toolpolicy.Rule{{Pattern: "read_*", Field: "servers.s.tools.allow[0]"}},
		Args: []toolpolicy.ArgRule{{Tool: "read_file", Arg: "path", Field: "servers.s.tools.args.read_file.path", Under: []string{"/workspace"}}}}
	cs = toolCalls(narrow)
	if c := cs[0]; c.tool != "mcpolicy-prove-not-allowed" || c.rule != "servers.s.tools.allow" {
		t.Errorf("no deny: %+v", c)
	}
	if c := cs[1]; c.tool != "read_file" || c.args["path"] != "/mcpolicy-prove-outside/x" {
		t.Errorf("under: %+v", c)
	}
	for _, c := range []struct{ pattern, want string }{{"delete_*", "delete_x"}, {"[abc]x?", "axx"}, {"read_file", "read_file"}} {
		if got, ok := nameMatching(c.pattern); !ok || got != c.want {
			t.Errorf("nameMatching(%q) = %q, %v", c.pattern, got, ok)
		}
	}
	if _, ok := nameMatching("[!a]"); ok {
		t.Error("a negated class was spelled")
	}
}

// TestJudgeToolRow: the relay's error code agrees; a tool result or the
// server's own error means the call reached the server.
func TestJudgeToolRow(t *testing.T) {
	relay := fmt.Errorf("mcpcall: x: tools/call delete_x: %w", &jsonrpc.Error{Code: -32001, Message: `mcpolicy: tool "delete_x" is denied by mcpolicy.cue servers.memory.tools.deny[0] ("delete_*")`})
	server := fmt.Errorf("tools/call: %w", &jsonrpc.Error{Code: -32602, Message: "unknown tool"})
	for _, c := range []struct {
		err    error
		res    mcpcall.Result
		result string
		agrees bool
	}{
		{relay, mcpcall.Result{}, RelayRefused, true},
		{server, mcpcall.Result{}, "reached the server: error -32602", false},
		{nil, mcpcall.Result{Text: "deleted", IsError: false}, "reached the server: it answered", false},
	} {
		row := ToolRow{Rule: "servers.memory.tools.deny[0]", Agrees: true}
		judgeToolRow(&row, c.res, c.err)
		if row.Result != c.result || row.Agrees != c.agrees || row.Note != "" {
			t.Errorf("%v: %+v", c.err, row)
		}
	}
	row := ToolRow{Agrees: true}
	judgeToolRow(&row, mcpcall.Result{}, errors.New("initialize: EOF"))
	if row.Skipped == "" || !row.Agrees {
		t.Errorf("a server that did not start: %+v", row)
	}
}

// TestToolSectionApart: the tool layer's rows have their own section,
// after the kernel's, and count as disagreements when a call got
// through; a report without them has no such section.
func TestToolSectionApart(t *testing.T) {
	rep := &Report{Server: "memory", Backends: []BackendReport{{Backend: "bwrap", Version: "bubblewrap 0.8.0", Probe: "p",
		Rows: []Row{{What: "credentials", Op: "read", Target: "/h/.aws/credentials", Expect: "denied", Result: "ENOENT", Agrees: true, WhyAgrees: true}},
		Tools: []ToolRow{
			{What: "a denied tool", Tool: "delete_x", Rule: "servers.memory.tools.deny[0]", Expect: RelayRefused, Result: RelayRefused, Agrees: true},
			{What: "an argument out of bounds", Tool: "search_x", Rule: "r", Expect: RelayRefused, Result: "reached the server: it answered", Agrees: false},
		}}}}
	md := string(rep.Markdown())
	i, j := strings.Index(md, "## The tool layer: refused by the relay (policy), not the kernel"), strings.Index(md, "ENOENT")
	if i < 0 || j < 0 || i < j {
		t.Errorf("the tool layer's section is missing or before the kernel's rows:\n%s", md)
	}
	if !strings.Contains(md[i:], "delete_x") || strings.Contains(md[:i], "delete_x") {
		t.Errorf("a tool row outside its section:\n%s", md)
	}
	if rep.Disagreements() != 1 {
		t.Errorf("disagreements %d, want the call that reached the server", rep.Disagreements())
	}
	rep.Backends[0].Tools = nil
	if strings.Contains(string(rep.Markdown()), "tool layer") {
		t.Error("a tool layer section without rows")
	}
}
