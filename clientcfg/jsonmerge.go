package clientcfg

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
// whitespace (two spaces when there is none), and CRLF when it has any.
func layoutOf(src []byte) layout {
	l := layout{unit: "  ", newline: "\n"}
	if bytes.Contains(src, []byte("\r\n")) {
		l.newline = "\r\n"
	}
	if m := firstIndent.FindSubmatch(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))); m != nil {
		l.unit = string(m[1])
	}
	return l
}

// render lays out v as strict JSON at the given depth (its first line is
// placed by the caller; the rest is indented depth units).
func (l layout) render(v any, depth int) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(strings.Repeat(l.unit, depth), l.unit)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	return bytes.ReplaceAll(out, []byte("\n"), []byte(l.newline)), nil
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
		parsed.AfterExtra = obj.Members[i].Value.AfterExtra // keep a trailing comma, or not
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
			// (or its absence) of the member before it.
			last := &obj.Members[n-1].Value
			m.Value.AfterExtra, last.AfterExtra = last.AfterExtra, nil
		} else {
			obj.AfterExtra = hujson.Extra(l.newline + strings.Repeat(l.unit, depth-1))
		}
		obj.Members = append(obj.Members, m)
	}
	return v.Pack(), nil
}

func memberIndex(obj *hujson.Object, name string) int {
	for i := range obj.Members {
		var n string
		if lit, ok := obj.Members[i].Name.Value.(hujson.Literal); ok && json.Unmarshal(lit, &n) == nil && n == name {
			return i
		}
	}
	return -1
}

func findObject(obj *hujson.Object, name string) *hujson.Object {
	if i := memberIndex(obj, name); i >= 0 {
		o, _ := obj.Members[i].Value.Value.(*hujson.Object)
		return o
	}
	return nil
}
