package compiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/editdist"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/schema"
)

// PinDir is the folder beside a policy file that holds its servers' pinned
// tools/list (mcpolicy pin): a protected name (mcpolicy.*), so no
// read-write grant lets a server rewrite its own pin.
const PinDir = "mcpolicy.pins"

// PinFile is where the pin of server lives, relative to the policy's folder.
func PinFile(server string) string { return PinDir + "/" + server + ".json" }

// maxPinBytes bounds a pin file: a tools/list of a few hundred tools with
// their schemas is well under it.
const maxPinBytes = 16 << 20

// maxToolPattern bounds an argument pattern: RE2 runs in linear time, but
// its program grows with the expression.
const maxToolPattern = 4096

// ToolsPos are the positions of a plan's tools section, for messages,
// explain and diff; not serialized.
type ToolsPos struct {
	Section     position.Pos
	OnPinChange position.Pos
	Pin         position.Pos
	// Fields holds each rule's position by its Field (servers.s.tools.allow[0]).
	Fields map[string]position.Pos
}

// At is the position of the rule whose Field is field, the section's when unknown.
func (t ToolsPos) At(field string) position.Pos {
	if p, ok := t.Fields[field]; ok {
		return p
	}
	return t.Section
}

// AcceptToolsNotRelayed is the degradation a policy accepts for a backend
// that cannot run the tool relay (seatbelt, kubernetes): there the tools
// section is not enforced, the kernel's grants still are.
const AcceptToolsNotRelayed = "tools-not-relayed"

// tools lowers the tools section into what the relay enforces; nil when
// the server has none (no relay, no cost). Each rule carries its Field so
// a refusal says where the policy says it.
func (c *compiler) tools(pol *schema.Policy, s *schema.Server, p *Plan, at string) (*toolpolicy.Policy, ToolsPos) {
	t := s.Tools
	if t == nil {
		return nil, ToolsPos{}
	}
	base := at + ".tools"
	pos := ToolsPos{Section: t.Pos, OnPinChange: t.OnPinChangePos, Pin: t.PinPos, Fields: map[string]position.Pos{}}
	tp := &toolpolicy.Policy{Server: s.Name, PolicyFile: p.PolicyFile, OnPinChange: t.OnPinChange, Allow: []toolpolicy.Rule{}}
	rules := func(list []schema.ToolName, name string) []toolpolicy.Rule {
		var out []toolpolicy.Rule
		seen := map[string]string{}
		for i, n := range list {
			field := fmt.Sprintf("%s.%s[%d]", base, name, i)
			pos.Fields[field] = n.Pos
			c.toolGlob(n.Pattern, n.Pos, field)
			if other, dup := seen[n.Pattern]; dup {
				c.fail(n.Pos, field, "remove one of them", "%q is listed twice (also %s)", n.Pattern, other)
			}
			seen[n.Pattern] = field
			out = append(out, toolpolicy.Rule{Pattern: n.Pattern, Field: field})
		}
		return out
	}
	tp.Allow = append(tp.Allow, rules(t.Allow, "allow")...)
	tp.Deny = rules(t.Deny, "deny")
	// An allowed name that a deny removes whole is a contradiction: say
	// which wins rather than count a grant that gives nothing.
	for _, a := range tp.Allow {
		if d, ok := coveredBy(a.Pattern, tp.Deny); ok {
			c.fail(pos.At(a.Field), a.Field, "remove it from allow, or narrow the deny pattern",
				"%q is allowed and denied (%s %q): deny wins, so the allow entry gives nothing", a.Pattern, d.Field, d.Pattern)
		}
	}
	for _, a := range t.Args {
		tp.Args = append(tp.Args, c.toolArg(a, base, p, tp, &pos))
	}
	if t.OnPinChangePos != t.Pos && !t.Pin {
		c.fail(t.OnPinChangePos, base+".onPinChange", "add pin: true (and run `mcpolicy pin "+s.Name+"`), or remove onPinChange",
			"onPinChange says what to do when the tools change from their pin, but nothing is pinned")
	}
	if t.Pin {
		tp.Pin = c.readPin(pol, s, t.PinPos, base+".pin")
		c.namesInPin(tp, pos)
	}
	return tp, pos
}

// namesInPin holds the names a pinned section writes to its pin: an
// allow pattern no pinned tool matches shows nothing, and a constraint on
// an argument no matching tool's inputSchema has never applies (an
// absent argument passes) — a misspelling that silently drops a check.
func (c *compiler) namesInPin(tp *toolpolicy.Policy, pos ToolsPos) {
	if tp.Pin == nil {
		return
	}
	names := make([]string, len(tp.Pin.Tools))
	for i, t := range tp.Pin.Tools {
		names[i] = t.Name
	}
	for _, a := range tp.Allow {
		if !slices.ContainsFunc(names, func(n string) bool { return toolpolicy.Matches(a.Pattern, n) }) {
			c.fail(pos.At(a.Field), a.Field, nearest("the pinned tools are "+listed(names), a.Pattern, names),
				"%q matches no tool the pin holds: it shows nothing", a.Pattern)
		}
	}
	for _, r := range tp.Args {
		var props []string
		matched := false
		for _, t := range tp.Pin.Tools {
			if !toolpolicy.Matches(r.Tool, t.Name) {
				continue
			}
			matched = true
			props = append(props, schemaProperties(t.InputSchema)...)
		}
		slices.Sort(props)
		props = slices.Compact(props)
		switch {
		case !matched:
			c.fail(pos.At(r.Field), r.Field, nearest("the pinned tools are "+listed(names), r.Tool, names),
				"tool %q matches no tool the pin holds: the constraint never applies", r.Tool)
		case !slices.Contains(props, r.Arg):
			c.fail(pos.At(r.Field), r.Field, nearest("its pinned inputSchema's properties are "+listed(props), r.Arg, props),
				"tool %q has no argument %q in its pinned inputSchema: the constraint never applies (an absent argument passes)", r.Tool, r.Arg)
		}
	}
}

// schemaProperties are the names under an input schema's "properties".
func schemaProperties(raw json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// listed spells names for a hint, the first 12.
func listed(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > 12 {
		return strings.Join(names[:12], ", ") + fmt.Sprintf(" and %d more", len(names)-12)
	}
	return strings.Join(names, ", ")
}

// nearest is a hint naming the closest of names to got, when one is close.
func nearest(hint, got string, names []string) string {
	best, bd := "", 4
	for _, n := range names {
		if d := editdist.Distance(got, n); d < bd {
			best, bd = n, d
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q? %s", best, hint)
	}
	return hint + "; or run `mcpolicy pin` again if the server changed"
}

// toolGlob checks a name or glob of allow, deny or args: path.Match
// syntax that can match a tool name.
func (c *compiler) toolGlob(pattern string, pos position.Pos, field string) {
	const hint = `a glob is path.Match's: * any run of characters, ? one, [abc] or [a-z] one of a set ([^a-z] none of it); close every "["`
	if _, err := path.Match(pattern, ""); err != nil {
		c.fail(pos, field, hint, "%q is not a valid glob: it can match no tool", pattern)
		return
	}
	if r, ok := outsideName(pattern); !ok {
		c.fail(pos, field, "tool names are letters, digits, '_', '-' and '.'; "+hint,
			"%q can match no tool: %q is in no tool name", pattern, r)
	}
}

// outsideName finds a character outside a bracket class that no tool
// name holds (the schema lets "^" and "]" through for classes). pattern
// is a valid glob: in it a "]" in a class closes it.
func outsideName(pattern string) (rune, bool) {
	in := false
	for _, r := range pattern {
		switch {
		case in:
			in = r != ']'
		case r == '[':
			in = true
		case r == '*' || r == '?' || r == '_' || r == '-' || r == '.' ||
			r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
		default:
			return r, false
		}
	}
	return 0, true
}

// coveredBy returns the deny rule that removes every tool pattern names:
// a literal name a deny glob matches, or a glob a deny glob matches as
// written (deny "delete_*" covers allow "delete_*" and "delete_all").
func coveredBy(pattern string, deny []toolpolicy.Rule) (toolpolicy.Rule, bool) {
	for _, d := range deny {
		if ok, _ := path.Match(d.Pattern, pattern); ok {
			return d, true
		}
	}
	return toolpolicy.Rule{}, false
}

// admits reports whether some allow rule can admit a tool that pattern
// (a name, or a glob) names: a literal name must match; a glob must
// match an allow entry or be matched by one (an approximation of
// "the two sets meet" that never refuses a real overlap of the usual
// shapes: prefix and suffix globs, "*").
func admits(pattern string, allow []toolpolicy.Rule) bool {
	for _, a := range allow {
		if a.Pattern == pattern {
			return true
		}
		if ok, _ := path.Match(a.Pattern, pattern); ok {
			return true
		}
		if isGlob(pattern) {
			if ok, _ := path.Match(pattern, a.Pattern); ok {
				return true
			}
			if isGlob(a.Pattern) {
				return true // two globs: the overlap is not decided here (lint's)
			}
		}
	}
	return false
}

func isGlob(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// toolArg lowers one argument's constraints.
func (c *compiler) toolArg(a schema.ToolArg, base string, p *Plan, tp *toolpolicy.Policy, pos *ToolsPos) toolpolicy.ArgRule {
	field := base + ".args." + schema.FieldPath(a.Tool, a.Arg)
	pos.Fields[field] = a.Pos
	r := toolpolicy.ArgRule{Tool: a.Tool, Arg: a.Arg, Field: field, Pattern: a.Pattern, MaxBytes: a.MaxBytes}
	c.toolGlob(a.Tool, a.Pos, field)
	switch d, denied := coveredBy(a.Tool, tp.Deny); {
	case denied:
		c.fail(a.Pos, field, "remove the constraint, or the deny entry",
			"constraint on tool %q, which %s (%q) denies: it is never called", a.Tool, d.Field, d.Pattern)
	case !admits(a.Tool, tp.Allow):
		c.fail(a.Pos, field, fmt.Sprintf("add %q to allow, or correct the tool's name", a.Tool),
			"constraint on tool %q, which no allow entry admits: it is never called", a.Tool)
	}
	if len(a.Under) == 0 && a.Pattern == "" && len(a.Enum) == 0 && a.MaxBytes == 0 {
		c.fail(a.Pos, field, `give under, pattern, enum or maxBytes, e.g. {under: ["/workspace"]}`,
			"argument %q of %q has no constraint", a.Arg, a.Tool)
	}
	if len(a.Under) > 0 {
		r.Under = make([]string, 0, len(a.Under))
		for i, u := range a.Under {
			uf := fmt.Sprintf("%s.under[%d]", field, i)
			up := a.Pos
			if i < len(a.UnderPos) {
				up = a.UnderPos[i]
			}
			if clean := path.Clean(u); clean != u || !path.IsAbs(u) {
				c.fail(up, uf, fmt.Sprintf("write %q", path.Clean("/"+u)), "%q is not an absolute, clean sandbox path", u)
			}
			r.Under = append(r.Under, u)
		}
		slices.Sort(r.Under)
		r.Under = slices.Compact(r.Under)
		r.Workdir = p.Workdir // a relative path argument resolves against it
	}
	if a.Pattern != "" {
		at := orPos(a.PatternAt, a.Pos)
		if len(a.Pattern) > maxToolPattern {
			c.fail(at, field+".pattern", "shorten it, or constrain with enum", "the pattern is %d bytes, over %d", len(a.Pattern), maxToolPattern)
		} else if _, err := regexp.Compile(a.Pattern); err != nil {
			// Compiled alone, so that it is balanced: the relay matches
			// ^(?:PATTERN)$, which "a)|(b" would turn into two halves.
			c.fail(at, field+".pattern", "the pattern is RE2 (Go's regexp: no backreferences or lookaround), matched against the whole value",
				"invalid pattern %q: %s", a.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
	if len(a.Enum) > 0 {
		r.Enum = slices.Clone(a.Enum)
		slices.Sort(r.Enum)
		for i := 1; i < len(r.Enum); i++ {
			if r.Enum[i] == r.Enum[i-1] {
				c.fail(a.Pos, field+".enum", "remove the duplicate", "%q is listed twice", r.Enum[i])
			}
		}
	}
	return r
}

// readPin reads and checks the server's pin file beside the policy: its
// server, and its digest against its tools (the file is reviewed: a hand
// edit that does not update the digest is refused). The pin is embedded
// in canonical form.
func (c *compiler) readPin(pol *schema.Policy, s *schema.Server, at position.Pos, field string) *toolpolicy.Pin {
	rel := PinFile(s.Name)
	file := filepath.Join(pol.Dir, filepath.FromSlash(rel))
	shown := filepath.Join(filepath.Dir(pol.File), filepath.FromSlash(rel))
	hint := fmt.Sprintf("run `mcpolicy pin %s` to record the server's tools/list, review it and commit it", s.Name)
	b, err := hostfile.ReadRegular(file, maxPinBytes)
	if errors.Is(err, fs.ErrNotExist) {
		c.fail(at, field, hint, "pin: true, but %s does not exist", shown)
		return nil
	}
	if err != nil {
		c.fail(position.Pos{File: shown}, field, hint, "reading the pin: %v", err)
		return nil
	}
	var pin toolpolicy.Pin
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&pin); err != nil {
		c.fail(jsonErrPos(shown, b, err), field, hint, "the pin is not a tools/list pin: %v", err)
		return nil
	}
	if d.More() {
		c.fail(position.Pos{File: shown}, field, hint, "the pin holds more than one JSON value")
		return nil
	}
	pinAt := position.Pos{File: shown, Line: 1, Col: 1}
	if pin.Server != s.Name {
		c.fail(pinAt, field, hint, "the pin is of server %q, not %q", pin.Server, s.Name)
		return nil
	}
	digest, err := toolpolicy.PinDigest(pin.Tools)
	if err != nil {
		c.fail(pinAt, field, hint, "the pin's tools: %v", err)
		return nil
	}
	if pin.Digest != digest {
		c.fail(pinAt, field, "a pin is changed by `mcpolicy pin "+s.Name+"` alone, which records the digest of what it writes: run it again and review the diff",
			"the pin's digest %s does not match its tools (%s): edited by hand, or damaged", pin.Digest, digest)
		return nil
	}
	tools, _ := toolpolicy.Canonical(pin.Tools)
	if tools == nil {
		tools = []toolpolicy.PinnedTool{}
	}
	return &toolpolicy.Pin{Server: pin.Server, Digest: pin.Digest, Tools: tools}
}

// jsonErrPos is the line and column of a JSON decoding error, the file's
// start when the error has no offset.
func jsonErrPos(file string, b []byte, err error) position.Pos {
	var off int64
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	default:
		return position.Pos{File: file, Line: 1, Col: 1}
	}
	off = min(off, int64(len(b)))
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(b[:off], '\n')
	return position.Pos{File: file, Line: line, Col: col}
}
