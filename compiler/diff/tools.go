package diff

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// toolChanges compares the tool surfaces: the section itself, the tools
// allowed and denied, each argument's constraints, what a pin change does,
// and the pin (its own kinds: a reviewed tools/list that changed).
func toolChanges(o, n *compiler.Plan, add addFunc) {
	ot, nt := o.Tools, n.Tools
	switch {
	case ot == nil && nt == nil:
		return
	case nt == nil:
		add("TOOLS_UNFILTERED", Widened, n.Pos, orPos(o.ToolsPos.Section, o.Pos),
			"tools section removed: every tool the server lists is shown and callable, with no relay")
		return
	case ot == nil:
		add("TOOLS_FILTERED", Narrowed, orPos(n.ToolsPos.Section, n.Pos), position.Pos{},
			"tools section added: only %s shown and callable, through the relay", ruleList(nt.Allow))
		return
	}
	// Rules are the same rule when their patterns are, wherever they sit
	// (posOfRule finds each side's position).
	pattern := func(r toolpolicy.Rule) (string, position.Pos) { return r.Pattern, position.Pos{} }
	diffNamed(ot.Allow, nt.Allow, pattern, func(p string, pos position.Pos) {
		add("TOOL_ALLOWED", Widened, orPos(posOfRule(n, nt.Allow, p), n.Pos), position.Pos{}, "%s shown and callable", toolWords(p))
	}, func(p string, _ position.Pos) {
		add("TOOL_DISALLOWED", Narrowed, orPos(n.ToolsPos.Section, n.Pos), orPos(posOfRule(o, ot.Allow, p), o.Pos), "%s no longer allowed", toolWords(p))
	})
	diffNamed(ot.Deny, nt.Deny, pattern, func(p string, _ position.Pos) {
		add("TOOL_DENIED", Narrowed, orPos(posOfRule(n, nt.Deny, p), n.Pos), position.Pos{}, "%s denied: never shown nor called", toolWords(p))
	}, func(p string, _ position.Pos) {
		add("TOOL_UNDENIED", Widened, orPos(n.ToolsPos.Section, n.Pos), orPos(posOfRule(o, ot.Deny, p), o.Pos),
			"%s no longer denied: shown and callable where allow admits it", toolWords(p))
	})
	argChanges(o, n, add)
	if ot.OnPinChange != nt.OnPinChange && ot.Pin != nil && nt.Pin != nil {
		if nt.OnPinChange == "hide" {
			add("PIN_CHANGE_HIDES", Widened, orPos(n.ToolsPos.OnPinChange, n.Pos), orPos(o.ToolsPos.OnPinChange, o.Pos),
				"a tools/list that differs from the pin no longer stops the relay: the changed tools are hidden, the others served")
		} else {
			add("PIN_CHANGE_REFUSES", Narrowed, orPos(n.ToolsPos.OnPinChange, n.Pos), orPos(o.ToolsPos.OnPinChange, o.Pos),
				"a tools/list that differs from the pin now stops the relay")
		}
	}
	pinChanges(o, n, add)
}

// posOfRule is the position of the rule with pattern p on a plan's side.
func posOfRule(p *compiler.Plan, rules []toolpolicy.Rule, pattern string) position.Pos {
	for _, r := range rules {
		if r.Pattern == pattern {
			return p.ToolsPos.At(r.Field)
		}
	}
	return position.Pos{}
}

// toolWords is "tool read_file", "tools matching search_*", "every tool".
func toolWords(pattern string) string {
	switch {
	case pattern == "*":
		return "every tool"
	case strings.ContainsAny(pattern, "*?["):
		return "tools matching " + pattern
	}
	return "tool " + pattern
}

func ruleList(rs []toolpolicy.Rule) string {
	ps := make([]string, len(rs))
	for i, r := range rs {
		ps[i] = r.Pattern
	}
	return strings.Join(ps, ", ")
}

// argChanges pairs the argument constraints by tool and argument.
func argChanges(o, n *compiler.Plan, add addFunc) {
	key := func(a toolpolicy.ArgRule) string { return a.Tool + "\x00" + a.Arg }
	old := map[string]toolpolicy.ArgRule{}
	for _, a := range o.Tools.Args {
		old[key(a)] = a
	}
	seen := map[string]bool{}
	for _, na := range n.Tools.Args {
		k := key(na)
		seen[k] = true
		npos := orPos(n.ToolsPos.At(na.Field), n.Pos)
		oa, ok := old[k]
		if !ok {
			add("TOOL_ARG_ADDED", Narrowed, npos, position.Pos{}, "%s constrained: %s", argWords(na), summary(na))
			continue
		}
		wider, narrower := compareArg(oa, na)
		opos := orPos(o.ToolsPos.At(oa.Field), o.Pos)
		switch {
		case len(wider) > 0:
			add("TOOL_ARG_WIDENED", Widened, npos, opos, "%s: %s", argWords(na), strings.Join(append(wider, narrower...), "; "))
		case len(narrower) > 0:
			add("TOOL_ARG_NARROWED", Narrowed, npos, opos, "%s: %s", argWords(na), strings.Join(narrower, "; "))
		}
	}
	for _, oa := range o.Tools.Args {
		if !seen[key(oa)] {
			add("TOOL_ARG_REMOVED", Widened, orPos(n.ToolsPos.Section, n.Pos), orPos(o.ToolsPos.At(oa.Field), o.Pos),
				"%s no longer constrained (was: %s)", argWords(oa), summary(oa))
		}
	}
}

func argWords(a toolpolicy.ArgRule) string {
	return fmt.Sprintf("argument %s of %s", a.Arg, strings.TrimPrefix(toolWords(a.Tool), "tool "))
}

// summary is the constraints of a rule, without its tool and argument.
func summary(a toolpolicy.ArgRule) string {
	_, s, _ := strings.Cut(compiler.ArgRuleSummary(a), ": ")
	return s
}

// compareArg says how each constraint of a pair changed, wider or
// narrower. A changed pattern is wider: that one expression accepts
// less than another is not decided here.
func compareArg(o, n toolpolicy.ArgRule) (wider, narrower []string) {
	switch {
	case len(o.Under) > 0 && len(n.Under) == 0:
		wider = append(wider, "any path (was under "+strings.Join(o.Under, ", ")+")")
	case len(o.Under) == 0 && len(n.Under) > 0:
		narrower = append(narrower, "a path under "+strings.Join(n.Under, ", "))
	case len(n.Under) > 0:
		var out []string
		for _, u := range n.Under {
			if !slices.ContainsFunc(o.Under, func(ou string) bool { return pathWithin(u, ou) }) {
				out = append(out, u)
			}
		}
		gone := slices.ContainsFunc(o.Under, func(ou string) bool {
			return !slices.ContainsFunc(n.Under, func(u string) bool { return pathWithin(ou, u) })
		})
		if len(out) > 0 {
			wider = append(wider, "paths under "+strings.Join(out, ", ")+" accepted too")
		} else if gone {
			narrower = append(narrower, "paths under "+strings.Join(n.Under, ", ")+" only (was "+strings.Join(o.Under, ", ")+")")
		}
		if o.Workdir != n.Workdir {
			wider = append(wider, fmt.Sprintf("a relative path resolves against %q (was %q)", n.Workdir, o.Workdir))
		}
	}
	switch {
	case o.Pattern == n.Pattern:
	case n.Pattern == "":
		wider = append(wider, "any value (was matching "+strconv.Quote(o.Pattern)+")")
	case o.Pattern == "":
		narrower = append(narrower, "matching "+strconv.Quote(n.Pattern))
	default:
		wider = append(wider, fmt.Sprintf("matching %q (was %q)", n.Pattern, o.Pattern))
	}
	switch {
	case len(o.Enum) > 0 && len(n.Enum) == 0:
		wider = append(wider, "any value (was one of "+strings.Join(o.Enum, ", ")+")")
	case len(o.Enum) == 0 && len(n.Enum) > 0:
		narrower = append(narrower, "one of "+strings.Join(n.Enum, ", "))
	case len(n.Enum) > 0:
		var added []string
		setDiff(n.Enum, o.Enum, func(v string) { added = append(added, strconv.Quote(v)) })
		var removed []string
		setDiff(o.Enum, n.Enum, func(v string) { removed = append(removed, strconv.Quote(v)) })
		if len(added) > 0 {
			wider = append(wider, "also "+strings.Join(added, ", "))
		}
		if len(removed) > 0 {
			narrower = append(narrower, "no longer "+strings.Join(removed, ", "))
		}
	}
	switch {
	case o.MaxBytes == n.MaxBytes:
	case n.MaxBytes == 0:
		wider = append(wider, fmt.Sprintf("any size (was at most %d bytes)", o.MaxBytes))
	case o.MaxBytes == 0 || n.MaxBytes < o.MaxBytes:
		narrower = append(narrower, fmt.Sprintf("at most %d bytes%s", n.MaxBytes, was(o.MaxBytes)))
	default:
		wider = append(wider, fmt.Sprintf("at most %d bytes%s", n.MaxBytes, was(o.MaxBytes)))
	}
	return wider, narrower
}

func was(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (was %d)", n)
}

// pathWithin reports whether sandbox path a is b or below it.
func pathWithin(a, b string) bool {
	return a == b || b == "/" || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/")
}

// pinChanges compares the pins tool by tool: each tool the reviewed
// tools/list gained, lost or changed.
func pinChanges(o, n *compiler.Plan, add addFunc) {
	op, np := o.Tools.Pin, n.Tools.Pin
	npos, opos := orPos(n.ToolsPos.Pin, orPos(n.ToolsPos.Section, n.Pos)), orPos(o.ToolsPos.Pin, orPos(o.ToolsPos.Section, o.Pos))
	switch {
	case op == nil && np == nil:
		return
	case np == nil:
		add("TOOL_PIN_REMOVED", Widened, npos, opos, "tools/list no longer pinned: a server that changes a tool's description or schema is not caught")
		return
	case op == nil:
		add("TOOL_PIN_ADDED", Narrowed, npos, position.Pos{}, "tools/list pinned (%s, %s)", compiler.PinFile(n.Server), compiler.Plural(len(np.Tools), "tool"))
		return
	}
	if op.Digest == np.Digest {
		return
	}
	old := map[string]toolpolicy.PinnedTool{}
	for _, t := range op.Tools {
		old[t.Name] = t
	}
	seen := map[string]bool{}
	for _, t := range np.Tools {
		seen[t.Name] = true
		ot, ok := old[t.Name]
		if !ok {
			add("TOOL_PIN_TOOL_ADDED", Widened, npos, position.Pos{}, "pinned tools/list gained tool %s", t.Name)
			continue
		}
		if parts := pinnedParts(ot, t); len(parts) > 0 {
			add("TOOL_PIN_TOOL_CHANGED", Widened, npos, opos, "pinned tool %s changed: its %s", t.Name, strings.Join(parts, ", "))
		}
	}
	for _, t := range op.Tools {
		if !seen[t.Name] {
			add("TOOL_PIN_TOOL_REMOVED", Narrowed, npos, opos, "pinned tools/list lost tool %s", t.Name)
		}
	}
}

// pinnedParts names the parts of a pinned tool that differ.
func pinnedParts(o, n toolpolicy.PinnedTool) []string {
	var parts []string
	if o.Title != n.Title {
		parts = append(parts, "title")
	}
	if o.Description != n.Description {
		parts = append(parts, "description")
	}
	for _, f := range []struct {
		name string
		o, n []byte
	}{{"input schema", o.InputSchema, n.InputSchema}, {"output schema", o.OutputSchema, n.OutputSchema}, {"annotations", o.Annotations, n.Annotations}} {
		if !bytes.Equal(f.o, f.n) {
			parts = append(parts, f.name)
		}
	}
	return parts
}
