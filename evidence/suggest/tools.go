package suggest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// The tool relay's decisions (runtime/toolrelay), as the launch log keeps
// them: a call the relay refused is the one thing suggest proposes a
// change for, and the smallest one: the one tool allowed by its exact name
// (never a glob), or the one constraint that refused an argument named,
// with the widening it needs. A deny rule is never removed: suggest says
// which rule refused and where, and a person decides.

// Kinds of the relay's decisions (runtime/toolrelay.Decision.Kind).
const (
	kindCallRefused = "call-refused"
	kindPinChanged  = "pin-changed"
	kindPinRefused  = "pin-refused"
)

// ToolAllow is a tool to add, by its exact name, to the server's
// tools.allow.
type ToolAllow struct {
	Tool  string
	Count int // calls refused that it would have let through
}

// ToolNote is a refusal suggest makes no patch for, and what would change
// it: a deny rule, an argument constraint, the pin, or nothing of the
// policy's.
type ToolNote struct {
	Tool, Arg string
	Field     string // the rule that refused, as the policy path says it
	Count     int
	Say       string
}

// ToolResult is what a launch log's tool decisions ask for.
type ToolResult struct {
	Allow []ToolAllow // sorted by name
	Notes []ToolNote  // sorted by field, tool, argument
	// Decisions are the relay's decision lines of the server read,
	// Refused those refusing a call.
	Decisions, Refused int
	// Launch counts every line of the launch log (its records and its
	// decisions, of any server): lines that are no egress decision.
	Launch int
}

// Names are the tools to allow, in order.
func (r *ToolResult) Names() []string {
	out := make([]string, len(r.Allow))
	for i, a := range r.Allow {
		out[i] = a.Tool
	}
	return out
}

// toolName is what suggest allows by exact name: MCP's tool name alphabet
// (letters, digits, _ - .), 1 to 128 of them. Nothing of a glob (* ? [)
// and nothing a policy file would need escaped: a name in a log is the
// client's, and the patch must allow that one tool and no other.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// ReadTools reads a launch log (runtime/launchlog: JSON lines, launch
// records and the relay's decisions) for the decisions about server, and
// proposes for each refused call the smallest change of pol, the server's
// tools section as the policy says it now (nil: none).
func ReadTools(r io.Reader, server string, pol *toolpolicy.Policy) (*ToolResult, error) {
	res := &ToolResult{}
	allow := map[string]*ToolAllow{}
	notes := map[string]*ToolNote{}
	note := func(n ToolNote) {
		key := n.Field + "\x00" + n.Tool + "\x00" + n.Arg + "\x00" + n.Say
		if have := notes[key]; have != nil {
			have.Count++
			return
		}
		n.Count = 1
		notes[key] = &n
	}
	err := eachLine(r, func(line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			return
		}
		var d launchlog.Decision
		if json.Unmarshal(line, &d) != nil || d.Server == "" || d.Entry == "" {
			return
		}
		res.Launch++
		if d.Decision == "" || d.Server != server {
			return
		}
		res.Decisions++
		// Every string is the client's or the server's, and printed.
		d.Tool, d.Arg, d.Field, d.Reason = printable.String(d.Tool), printable.String(d.Arg), printable.String(d.Field), printable.String(d.Reason)
		switch d.Decision {
		case kindCallRefused:
			res.Refused++
			if a, n := classifyCall(d, server, pol); a != "" {
				if allow[a] == nil {
					allow[a] = &ToolAllow{Tool: a}
				}
				allow[a].Count++
			} else {
				note(n)
			}
		case kindPinChanged, kindPinRefused:
			note(ToolNote{Tool: d.Tool, Field: d.Field, Say: fmt.Sprintf("changed since its pin (%s): review what the server shows now, then run `mcpolicy pin %s` and commit the new pin", d.Reason, server)})
		}
	})
	if err != nil {
		return nil, err
	}
	for _, a := range allow {
		res.Allow = append(res.Allow, *a)
	}
	sort.Slice(res.Allow, func(i, j int) bool { return res.Allow[i].Tool < res.Allow[j].Tool })
	for _, n := range notes {
		res.Notes = append(res.Notes, *n)
	}
	sort.Slice(res.Notes, func(i, j int) bool {
		a, b := res.Notes[i], res.Notes[j]
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		if a.Tool != b.Tool {
			return a.Tool < b.Tool
		}
		return a.Arg+a.Say < b.Arg+b.Say
	})
	return res, nil
}

// classifyCall returns the tool to allow by name for a refused call, or
// the note that says what refused it and what would change that. It
// decides from the rule the line names, read in the policy as it is now
// (the line is data, not an instruction).
func classifyCall(d launchlog.Decision, server string, pol *toolpolicy.Policy) (string, ToolNote) {
	n := ToolNote{Tool: d.Tool, Arg: d.Arg, Field: d.Field}
	switch {
	case d.Tool == "":
		n.Say = "not a call of a tool the policy can name (" + d.Reason + "): the client's message, not a policy matter"
	case pol == nil:
		n.Say = "the policy has no tools section now: nothing refuses this call (the log is older than the policy)"
	case d.Arg != "":
		n.Say = argNote(d, pol)
	case strings.HasSuffix(d.Field, ".pin"):
		n.Say = fmt.Sprintf("the pinned tools/list does not hold it (%s): if the server has it now, review its tools and run `mcpolicy pin %s`", d.Reason, server)
	default:
		if r, ok := denyOf(pol, d.Tool); ok {
			n.Field = r.Field
			n.Say = fmt.Sprintf("denied by %s (%q): suggest never removes a deny; if the tool must be callable, narrow or remove that rule by hand, knowing every tool it denies", r.Field, r.Pattern)
			return "", n
		}
		if r, ok := allowOf(pol, d.Tool); ok {
			n.Field = r.Field
			n.Say = fmt.Sprintf("allowed now by %s (%q): the log is older than the policy", r.Field, r.Pattern)
			return "", n
		}
		if !toolName.MatchString(d.Tool) {
			n.Say = "not a tool name suggest allows exactly (1 to 128 of A-Z a-z 0-9 _ - .): allow it by hand if the server has such a tool"
			return "", n
		}
		// With a pin, a name the server does not list is the client's (or
		// the model's) invention: allowing it would show nothing.
		if pol.Pin != nil && !slices.ContainsFunc(pol.Pin.Tools, func(t toolpolicy.PinnedTool) bool { return t.Name == d.Tool }) {
			n.Say = fmt.Sprintf("the server does not list it (its pin holds no such tool): nothing to allow; if the server has it now, review its tools and run `mcpolicy pin %s`", server)
			return "", n
		}
		return d.Tool, ToolNote{}
	}
	return "", n
}

// argNote says which constraint refused an argument and the one widening
// that would admit it. The log keeps no argument's value (it may be a
// secret): the value itself is the client's request's.
func argNote(d launchlog.Decision, pol *toolpolicy.Policy) string {
	var rule *toolpolicy.ArgRule
	for i := range pol.Args {
		if pol.Args[i].Field == d.Field {
			rule = &pol.Args[i]
		}
	}
	if rule == nil {
		return fmt.Sprintf("refused by %s (%s), which the policy no longer has (the log is older than the policy)", d.Field, d.Reason)
	}
	at := d.Field
	switch r := d.Reason; {
	case strings.HasPrefix(r, "not under"):
		return fmt.Sprintf("the path is not under %s.under %q: if the tool must reach it, add that one folder to under (the call's path is in the client's request; the log keeps no values), not a parent of it", at, rule.Under)
	case strings.HasPrefix(r, "longer than maxBytes"):
		return fmt.Sprintf("longer than %s.maxBytes (%d): raise it only as far as the call needs", at, rule.MaxBytes)
	case strings.HasPrefix(r, "does not match pattern"):
		return fmt.Sprintf("does not match %s.pattern %q: widen it to admit the value the call needed, and nothing more", at, rule.Pattern)
	case strings.HasPrefix(r, "not one of enum"):
		return fmt.Sprintf("not one of %s.enum %q: add the one value the call needed", at, rule.Enum)
	}
	return fmt.Sprintf("refused by %s: %s: the call's argument does not fit the constraint's form, not a widening to make", at, d.Reason)
}

// denyOf is the first deny rule matching tool; allowOf the first allow.
func denyOf(pol *toolpolicy.Policy, tool string) (toolpolicy.Rule, bool) {
	return firstMatch(pol.Deny, tool)
}

func allowOf(pol *toolpolicy.Policy, tool string) (toolpolicy.Rule, bool) {
	return firstMatch(pol.Allow, tool)
}

func firstMatch(rules []toolpolicy.Rule, tool string) (toolpolicy.Rule, bool) {
	for _, r := range rules {
		if ok, _ := path.Match(r.Pattern, tool); ok || r.Pattern == "*" {
			return r, true
		}
	}
	return toolpolicy.Rule{}, false
}
