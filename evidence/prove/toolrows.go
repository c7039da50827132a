package prove

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpolicy/mcpolicy/evidence/mcpcall"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// The tool layer's rows: calls the tool relay on the server's stdio pipe
// must refuse — a denied tool, an argument out of its bounds — put to the
// real server, started as its launch starts it (through the relay), on
// each backend. They are the policy's refusals, not the kernel's: kept
// apart from the kernel's rows, in their own section.

// ToolRow is one call the relay is to refuse, and what came back.
type ToolRow struct {
	What string         `json:"what"`
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
	// Rule is the field of the policy that refuses the call.
	Rule   string `json:"rule"`
	Expect string `json:"expect"` // always "refused by the relay"
	// Result is "refused by the relay" (a JSON-RPC error -32001, the
	// relay's), or what reached the server instead.
	Result  string `json:"result"`
	Message string `json:"message,omitempty"` // the relay's, or the server's answer, short
	Agrees  bool   `json:"agrees"`
	Note    string `json:"note,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// refusalCode is the relay's JSON-RPC error code (issue 40's contract).
const refusalCode = -32001

// RelayRefused is a ToolRow's Result when the relay refused the call.
const RelayRefused = "refused by the relay"

// toolCall is one call the relay must refuse.
type toolCall struct {
	what, tool, rule string
	args             map[string]any
	skip             string
}

// toolCalls are the calls that prove the tool layer of pol: a denied tool
// and an argument out of bounds; each skipped, saying why, when the
// policy has none to refuse.
func toolCalls(pol *toolpolicy.Policy) []toolCall {
	return []toolCall{deniedCall(pol), outOfBoundsCall(pol)}
}

// deniedCall calls a tool a deny rule names, else one no allow rule
// admits, with no arguments: were the relay not there, the server would
// be asked as little as possible.
func deniedCall(pol *toolpolicy.Policy) toolCall {
	c := toolCall{what: "a denied tool", args: map[string]any{}}
	for _, d := range pol.Deny {
		if name, ok := pinnedMatching(pol, d.Pattern); ok {
			c.tool, c.rule = name, d.Field
			return c
		}
		if name, ok := nameMatching(d.Pattern); ok {
			c.tool, c.rule = name, d.Field
			return c
		}
	}
	name := "mcpolicy-prove-not-allowed"
	if _, allowed := matching(pol.Allow, name); !allowed {
		c.tool, c.rule = name, allowField(pol)
		return c
	}
	c.skip = "every tool is allowed and none denied: no call for the relay to refuse"
	return c
}

// outOfBoundsCall calls a visible tool with one argument outside its
// constraint, the first constraint that can be broken with a value that
// names nothing on the host.
func outOfBoundsCall(pol *toolpolicy.Policy) toolCall {
	c := toolCall{what: "an argument out of bounds"}
	for _, r := range pol.Args {
		tool, ok := pinnedMatching(pol, r.Tool)
		if !ok || !shownTool(pol, tool) {
			tool, ok = nameMatching(r.Tool)
		}
		if !ok || !shownTool(pol, tool) {
			continue
		}
		v, ok := outside(r)
		if !ok {
			continue
		}
		c.tool, c.rule, c.args = tool, r.Field, map[string]any{r.Arg: v}
		return c
	}
	c.skip = "no argument constraint on a tool the policy shows: no argument for the relay to refuse"
	return c
}

// outside is a value r refuses.
func outside(r toolpolicy.ArgRule) (string, bool) {
	switch {
	case len(r.Under) > 0:
		v := "/mcpolicy-prove-outside/x"
		for _, u := range r.Under {
			u = path.Clean(u)
			if u == "/" || strings.HasPrefix(v, u+"/") {
				return "", false
			}
		}
		return v, true
	case len(r.Enum) > 0:
		v := "mcpolicy-prove-not-in-enum"
		return v, !slices.Contains(r.Enum, v)
	case r.MaxBytes > 0 && r.MaxBytes < 1<<20:
		return strings.Repeat("x", int(r.MaxBytes)+1), true
	case r.Pattern != "":
		re, err := regexp.Compile(`^(?:` + r.Pattern + `)$`)
		if err != nil {
			return "", false
		}
		for _, v := range []string{"", " ", "mcpolicy-prove: not matching\x01", "0", "A"} {
			if !re.MatchString(v) {
				return v, true
			}
		}
	}
	return "", false
}

// pinnedMatching is the first pinned tool the glob pattern matches: a
// tool the server has, so the row shows the relay stopping a real one.
func pinnedMatching(pol *toolpolicy.Policy, pattern string) (string, bool) {
	if pol.Pin == nil {
		return "", false
	}
	for _, t := range pol.Pin.Tools {
		if ok, _ := path.Match(pattern, t.Name); ok {
			return t.Name, true
		}
	}
	return "", false
}

// nameMatching is a tool name the glob pattern matches: its literal
// name, or the glob with each wildcard spelled as one character.
func nameMatching(pattern string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*', '?':
			b.WriteByte('x')
		case '[':
			j := strings.IndexByte(pattern[i:], ']')
			if j < 2 {
				return "", false
			}
			class := pattern[i+1 : i+j]
			if class[0] == '^' || class[0] == '!' {
				return "", false
			}
			b.WriteByte(class[0])
			i += j
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteByte(pattern[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	name := b.String()
	ok, err := path.Match(pattern, name)
	return name, ok && err == nil && name != ""
}

func matching(rules []toolpolicy.Rule, name string) (toolpolicy.Rule, bool) {
	for _, r := range rules {
		if ok, _ := path.Match(r.Pattern, name); ok || r.Pattern == "*" {
			return r, true
		}
	}
	return toolpolicy.Rule{}, false
}

// shownTool: an allow rule admits the tool, no deny rule removes it, and a
// pin, when there is one, holds it.
func shownTool(pol *toolpolicy.Policy, name string) bool {
	if _, denied := matching(pol.Deny, name); denied {
		return false
	}
	if _, allowed := matching(pol.Allow, name); !allowed {
		return false
	}
	return pol.Pin == nil || slices.ContainsFunc(pol.Pin.Tools, func(t toolpolicy.PinnedTool) bool { return t.Name == name })
}

// allowField is the policy path of the allow list as a whole.
func allowField(pol *toolpolicy.Policy) string {
	for _, a := range pol.Allow {
		if i := strings.LastIndex(a.Field, "["); i > 0 {
			return a.Field[:i]
		}
	}
	return "servers." + pol.Server + ".tools.allow"
}

// toolRows puts each call to the server confined under backend, started
// as its launch starts it (through the relay), and records what came
// back. No rows for a plan without a tools section.
func toolRows(ctx context.Context, s *session, backend string, v planView, o Options) []ToolRow {
	pol := v.p.Tools
	if pol == nil {
		return nil
	}
	var rows []ToolRow
	for _, c := range toolCalls(pol) {
		row := ToolRow{What: c.what, Tool: c.tool, Args: c.args, Rule: c.rule, Expect: RelayRefused, Agrees: true}
		if c.skip != "" {
			row.Skipped = c.skip
			rows = append(rows, row)
			continue
		}
		argv, env, err := serverArgv(s, backend, v.p, v.m, o)
		if err != nil {
			row.Skipped = clip(err.Error(), maxSkipped)
			rows = append(rows, row)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		res, err := mcpcall.Call(cctx, argv, env, c.tool, c.args)
		cancel()
		judgeToolRow(&row, res, err)
		rows = append(rows, row)
	}
	return rows
}

// judgeToolRow reads the call's outcome: the relay's refusal (its error
// code) agrees; a tool result, or another error the server sent, means
// the call reached the server: it disagrees.
func judgeToolRow(row *ToolRow, res mcpcall.Result, err error) {
	var wire *jsonrpc.Error
	switch {
	case errors.As(err, &wire) && wire.Code == refusalCode:
		row.Result, row.Message = RelayRefused, clip(wire.Message, maxLine)
		if !strings.Contains(wire.Message, row.Rule) {
			row.Note = "refused by another rule than " + row.Rule
		}
	case errors.As(err, &wire):
		row.Result, row.Message, row.Agrees = fmt.Sprintf("reached the server: error %d", wire.Code), short(wire.Message), false
	case err != nil:
		row.Skipped = clip(err.Error(), maxSkipped)
	default:
		row.Result, row.Message, row.Agrees = "reached the server: it answered", short(res.Text), false
		if res.IsError {
			row.Result += " with a tool error"
		}
	}
}
