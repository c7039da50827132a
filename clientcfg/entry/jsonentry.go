package entry

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/tailscale/hujson"
)

// Rewriting mcpolicy's own entry in a JSON(C) file changes how the server
// starts and nothing else: the keys the user added to the entry (a disabled
// flag, a timeout, auto-approved tools) and every comment in it keep their
// bytes, since a value decoded and encoded again is not the same value (an
// integer past 2^53, a lone surrogate) nor in the same place.

// rewriteEntry edits obj, mcpolicy's entry, in place: each launch member
// (launch names them) takes its value from entry, where the old value
// stood (entry holds only launch keys); a member entry has and obj lacks is added after the last of them;
// one entry does not have is removed, its comments kept for what follows.
func (l layout) rewriteEntry(obj *hujson.Object, entry map[string]any, launch func(string) bool) error {
	last := map[string]int{}
	for i := range obj.Members {
		last[memberName(&obj.Members[i])] = i
	}
	trailing := len(obj.Members) > 0 && obj.Members[len(obj.Members)-1].Value.AfterExtra != nil
	var members []hujson.ObjectMember
	var carry hujson.Extra // comments of a removed member, for the next
	anchor := -1           // the last launch member kept, in members
	have := map[string]bool{}
	for i, m := range obj.Members {
		name := memberName(&m)
		if launch(name) {
			v, ok := entry[name]
			if !ok || last[name] != i { // no longer written, or read over
				carry = joinExtra(carry, commentsOf(&m))
				continue
			}
			text, err := l.valueLike(v, m.Name.BeforeExtra, m.Value.Value)
			if err != nil {
				return err
			}
			m.Value.Value = text
			have[name], anchor = true, len(members)
		}
		m.Name.BeforeExtra = joinExtra(carry, m.Name.BeforeExtra)
		carry = nil
		members = append(members, m)
	}
	if carry != nil {
		obj.AfterExtra = joinExtra(carry, obj.AfterExtra)
	}
	var added []hujson.ObjectMember
	for _, name := range sortedNames(entry) {
		if have[name] {
			continue
		}
		m, err := l.newMember(name, entry[name], members, anchor)
		if err != nil {
			return err
		}
		added = append(added, m)
	}
	at := anchor + 1
	members = append(members[:at], append(added, members[at:]...)...)
	// The object keeps its trailing comma, or its absence.
	if n := len(members); n > 0 {
		lastValue := &members[n-1].Value
		switch {
		case trailing && lastValue.AfterExtra == nil:
			lastValue.AfterExtra = hujson.Extra{}
		case !trailing && lastValue.AfterExtra != nil:
			obj.AfterExtra = append(append(hujson.Extra{}, lastValue.AfterExtra...), obj.AfterExtra...)
			lastValue.AfterExtra = nil
		}
	}
	obj.Members = members
	return nil
}

// newMember is name: v laid out like the member at anchor (on its own line
// at its indentation, or on the same line).
func (l layout) newMember(name string, v any, members []hujson.ObjectMember, anchor int) (hujson.ObjectMember, error) {
	var like hujson.Extra
	if anchor >= 0 {
		like = members[anchor].Name.BeforeExtra
	}
	before := hujson.Extra(" ")
	if indent, ok := indentAfterLine(like); ok {
		before = hujson.Extra(l.newline + indent)
	}
	text, err := l.valueLike(v, before, nil)
	if err != nil {
		return hujson.ObjectMember{}, err
	}
	nameJSON, _ := json.Marshal(name)
	m := hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: before, Value: hujson.Literal(nameJSON)},
		Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: text},
	}
	return m, nil
}

// valueLike lays out v for a member whose name follows before, like the
// value it replaces (nil: a new member): over lines when the member starts
// a line and the old value was over lines (indented as it was), else on
// one line.
func (l layout) valueLike(v any, before hujson.Extra, old hujson.ValueTrimmed) (hujson.ValueTrimmed, error) {
	var raw []byte
	var err error
	indent, ok := indentAfterLine(before)
	multiLine := old == nil || bytes.ContainsAny(hujson.Value{Value: old}.Pack(), "\r\n")
	if ok && multiLine {
		if unit, ok := innerUnit(old, indent); ok {
			l.unit = unit
		}
		raw, err = l.renderAt(v, indent)
	} else {
		raw, err = oneLine(v)
	}
	if err != nil {
		return nil, err
	}
	parsed, err := hujson.Parse(raw)
	if err != nil {
		return nil, err
	}
	return parsed.Value, nil
}

// innerUnit is how much deeper than indent the first line inside old, an
// object or array over lines, is indented.
func innerUnit(old hujson.ValueTrimmed, indent string) (string, bool) {
	var first hujson.Extra
	switch o := old.(type) {
	case *hujson.Object:
		if len(o.Members) > 0 {
			first = o.Members[0].Name.BeforeExtra
		}
	case *hujson.Array:
		if len(o.Elements) > 0 {
			first = o.Elements[0].BeforeExtra
		}
	}
	inner, ok := indentAfterLine(first)
	if !ok || len(inner) <= len(indent) || inner[:len(indent)] != indent {
		return "", false
	}
	return inner[len(indent):], true
}

// indentAfterLine is the blanks that start the last line of x, when x
// holds a newline.
func indentAfterLine(x []byte) (string, bool) {
	i := bytes.LastIndexAny(x, "\r\n")
	if i < 0 {
		return "", false
	}
	rest := x[i+1:]
	n := 0
	for n < len(rest) && (rest[n] == ' ' || rest[n] == '\t') {
		n++
	}
	return string(rest[:n]), true
}

// commentsOf is what stood around a member, when it holds a comment (nil
// when it is only whitespace): the line and indentation before its name,
// then each comment.
func commentsOf(m *hujson.ObjectMember) hujson.Extra {
	all := append(hujson.Extra{}, m.Name.BeforeExtra...)
	for _, x := range []hujson.Extra{m.Name.AfterExtra, m.Value.BeforeExtra, m.Value.AfterExtra} {
		if commentsEnd(x) > 0 {
			if len(all) > 0 && bytes.ContainsAny(all[len(all)-1:], " \t\r\n") {
				x = bytes.TrimLeft(x, " \t")
			}
			all = append(all, x...)
		}
	}
	if commentsEnd(all) == 0 {
		return nil
	}
	return all
}

// joinExtra is a (comments kept from a removed member) followed by b: a
// line of a stays a line, and b's first line, when a ends one, starts at
// the indentation of a's last.
func joinExtra(a, b hujson.Extra) hujson.Extra {
	if a == nil {
		return b
	}
	a = bytes.TrimRight(a, " \t")
	if endsLine(a) {
		switch {
		case bytes.HasPrefix(b, []byte("\r\n")):
			b = b[2:]
		case bytes.HasPrefix(b, []byte("\n")), bytes.HasPrefix(b, []byte("\r")):
			b = b[1:]
		default:
			indent, _ := indentAfterLine(bytes.TrimRight(a, "\r\n"))
			b = append([]byte(indent), bytes.TrimLeft(b, " \t")...)
		}
	}
	return append(append(hujson.Extra{}, a...), b...)
}

func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
