package entry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// layout is a file's own JSON style: its indentation unit and newline. The
// entry mcpolicy writes is laid out in it, so that only the entry's bytes
// change and the result is the strict JSON the file was (or, for a JSONC
// file, keeps its comments and trailing commas where they were).
type layout struct {
	unit, newline string
}

var firstIndent = lazyre.New(`\n([ \t]+)\S`)

// layoutOf reads the style of src: the first indented line's leading
// whitespace (two spaces when there is none), and CRLF when it has any, CR
// when its lines end in a lone CR (as on old Macs), else LF.
func layoutOf(src []byte) layout {
	l := layout{unit: "  ", newline: "\n"}
	switch {
	case bytes.Contains(src, []byte("\r\n")):
		l.newline = "\r\n"
	case bytes.IndexByte(src, '\r') >= 0 && bytes.IndexByte(src, '\n') < 0:
		l.newline = "\r"
	}
	lf := bytes.ReplaceAll(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
	if m := firstIndent.FindSubmatch(lf); m != nil {
		l.unit = string(m[1])
	}
	return l
}

// endsLine reports whether b ends in a newline of any style.
func endsLine(b []byte) bool {
	return bytes.HasSuffix(b, []byte("\n")) || bytes.HasSuffix(b, []byte("\r"))
}

// render lays out v as strict JSON at the given depth (its first line is
// placed by the caller; the rest is indented depth units).
func (l layout) render(v any, depth int) ([]byte, error) {
	return l.renderAt(v, strings.Repeat(l.unit, depth))
}

// renderAt lays out v as strict JSON whose first line is placed by the
// caller and whose other lines start with indent.
func (l layout) renderAt(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(indent, l.unit)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	return bytes.ReplaceAll(out, []byte("\n"), []byte(l.newline)), nil
}

// oneLine lays out v as strict JSON on one line, a blank after each comma
// and colon (as in `"args": ["a", "b"]`).
func oneLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	var out []byte
	inString, escaped := false, false
	for _, c := range bytes.TrimRight(b.Bytes(), "\n") {
		out = append(out, c)
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == ':'):
			out = append(out, ' ')
		}
	}
	return out, nil
}

// insert puts entry at key/server in v (adding the key's object when it is
// missing, replacing the server's value when it is there), laid out in the
// file's style, and returns the file's bytes. Nothing else changes: other
// members, comments, and whether the object ends in a trailing comma.
func (l layout) insert(v *hujson.Value, key string, haveKey bool, server string, entry map[string]any) ([]byte, error) {
	root, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	var value any = entry
	depth, obj, name := 2, (*hujson.Object)(nil), server
	if haveKey {
		obj = findObject(root, key)
		if obj == nil {
			return nil, fmt.Errorf("%q is not an object", key)
		}
	} else {
		value, depth, obj, name = map[string]any{server: entry}, 1, root, key
	}
	raw, err := l.render(value, depth)
	if err != nil {
		return nil, err
	}
	parsed, err := hujson.Parse(raw)
	if err != nil {
		return nil, err
	}
	parsed.BeforeExtra, parsed.AfterExtra = hujson.Extra(" "), nil
	if i := memberIndex(obj, name); i >= 0 {
		// Replaced whole (an entry that is not mcpolicy's, with --force):
		// what stood around the old value stays.
		old := obj.Members[i].Value
		parsed.BeforeExtra, parsed.AfterExtra = old.BeforeExtra, old.AfterExtra
		obj.Members[i].Value = parsed
	} else {
		nameJSON, _ := json.Marshal(name)
		m := hujson.ObjectMember{
			Name:  hujson.Value{Value: hujson.Literal(nameJSON)},
			Value: parsed,
		}
		m.Name.BeforeExtra = hujson.Extra(l.newline + strings.Repeat(l.unit, depth))
		if n := len(obj.Members); n > 0 {
			// The new member goes last: it takes over the trailing comma
			// (or its absence); what stood before the old last comma stays.
			if obj.Members[n-1].Value.AfterExtra != nil {
				m.Value.AfterExtra = hujson.Extra{}
			}
		} else {
			// An object with no members may hold comments (a server the
			// user switched off, with its token): they stay, before the
			// new member.
			kept := obj.AfterExtra[:commentsEnd(obj.AfterExtra)]
			m.Name.BeforeExtra = append(append(hujson.Extra{}, kept...), m.Name.BeforeExtra...)
			obj.AfterExtra = hujson.Extra(l.newline + strings.Repeat(l.unit, depth-1))
		}
		obj.Members = append(obj.Members, m)
	}
	return v.Pack(), nil
}

// commentsEnd is the offset in x, whitespace and comments, just past its
// last comment (a line comment without its newline); 0 when it holds none.
func commentsEnd(x []byte) int {
	end := 0
	for i := 0; i < len(x); {
		switch {
		case bytes.HasPrefix(x[i:], []byte("//")):
			j := bytes.IndexByte(x[i:], '\n')
			if j < 0 {
				j = len(x) - i
			}
			i += j
			end = i
			if end > 0 && x[end-1] == '\r' {
				end--
			}
		case bytes.HasPrefix(x[i:], []byte("/*")):
			j := bytes.Index(x[i+2:], []byte("*/"))
			if j < 0 {
				return len(x)
			}
			i += 2 + j + 2
			end = i
		default:
			i++
		}
	}
	return end
}

func memberIndex(obj *hujson.Object, name string) int {
	for i := range obj.Members {
		if memberName(&obj.Members[i]) == name {
			return i
		}
	}
	return -1
}

// memberName is a member's name decoded ("" when it is not a string).
func memberName(m *hujson.ObjectMember) string {
	var n string
	if lit, ok := m.Name.Value.(hujson.Literal); ok && json.Unmarshal(lit, &n) == nil {
		return n
	}
	return ""
}

// findObject is the object value of obj's member name (nil when obj is
// nil or the value is not an object).
func findObject(obj *hujson.Object, name string) *hujson.Object {
	if obj == nil {
		return nil
	}
	if i := memberIndex(obj, name); i >= 0 {
		o, _ := obj.Members[i].Value.Value.(*hujson.Object)
		return o
	}
	return nil
}
