package clientcfg

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/schema"
	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/tailscale/hujson"
)

// kind is the kind of a config value.
type kind int

const (
	kObject kind = iota
	kArray
	kString
	kOther // number, bool, null, date: str holds its text
)

func (k kind) String() string {
	return [...]string{"an object", "an array", "a string", "a number, boolean or null"}[k]
}

// node is a config value with the position of its first byte in the
// original file. JSON(C) and TOML are both read into it, so entries are
// read the same way whatever the format.
type node struct {
	kind   kind
	str    string
	pos    position.Pos
	keys   []string // object members, in file order
	keyPos []position.Pos
	vals   []*node
	elems  []*node // array elements
}

// get returns the value of key and the position of the key. When a key is
// written twice the last one wins, as in JSON.parse and Go's encoding/json.
func (n *node) get(key string) (*node, position.Pos) {
	if n == nil || n.kind != kObject {
		return nil, position.Pos{}
	}
	for i := len(n.keys) - 1; i >= 0; i-- {
		if n.keys[i] == key {
			return n.vals[i], n.keyPos[i]
		}
	}
	return nil, position.Pos{}
}

// members lists an object's members, a repeated key once (the last).
func (n *node) members() []int {
	var idx []int
	seen := map[string]bool{}
	for i := len(n.keys) - 1; i >= 0; i-- {
		if !seen[n.keys[i]] {
			seen[n.keys[i]] = true
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	return idx
}

// lines maps byte offsets to 1-based line and byte column.
type lines struct {
	file   string
	starts []int
	bom    bool // a UTF-8 byte order mark starts line 1: columns leave it out
	// orig maps an offset in the text parsed to the file's, when the text
	// parsed is a repair of the file (tolerant.go); nil: the same text.
	orig func(int) int
}

func newLines(file string, src []byte) *lines {
	l := &lines{file: file, starts: []int{0}, bom: bytes.HasPrefix(src, bom)}
	for i, c := range src {
		if c == '\n' {
			l.starts = append(l.starts, i+1)
		}
	}
	return l
}

func (l *lines) pos(off int) position.Pos {
	if l.orig != nil {
		off = l.orig(off)
	}
	i := sort.Search(len(l.starts), func(i int) bool { return l.starts[i] > off }) - 1
	col := off - l.starts[i] + 1
	if i == 0 && l.bom && col > len(bom) {
		col -= len(bom)
	}
	return position.Pos{File: l.file, Line: i + 1, Col: col}
}

var bom = []byte("\xef\xbb\xbf")

var huErr = lazyre.New(`(?s)^hujson: line (\d+), column (\d+): (.*)$`)

// parseJSON reads JSON with comments and trailing commas. hujson parses the
// original bytes and keeps each value's offset, so positions are those of
// the file as written.
func parseJSON(file string, src []byte) (*node, error) {
	b := src
	if bytes.HasPrefix(b, bom) { // same length, so offsets stay those of src
		b = append([]byte("   "), b[len(bom):]...)
	}
	v, err := hujson.Parse(b)
	if err != nil {
		e := &schema.Error{Pos: position.Pos{File: file, Line: 1, Col: 1}, Msg: "not valid JSON: " + err.Error()}
		if m := huErr.FindStringSubmatch(err.Error()); m != nil {
			e.Pos.Line, _ = strconv.Atoi(m[1])
			e.Pos.Col, _ = strconv.Atoi(m[2])
			if e.Pos.Line == 1 && bytes.HasPrefix(src, bom) && e.Pos.Col > len(bom) {
				e.Pos.Col -= len(bom)
			}
			e.Msg = "not valid JSON (with comments): " + m[3]
		}
		// A control character written raw in a string: said, at it, as the
		// tolerant read says it (the parser's message quotes it raw).
		if f := (&fixer{src: src, comments: true, commas: true}); f.scanRaw() {
			e.Pos, e.Msg = newLines(file, src).pos(f.errOff), f.err.Msg
		}
		e.Msg = printable.String(e.Msg)
		return nil, e
	}
	return fromHuJSON(&v, newLines(file, src)), nil
}

func fromHuJSON(v *hujson.Value, l *lines) *node {
	n := &node{pos: l.pos(v.StartOffset)}
	switch t := v.Value.(type) {
	case *hujson.Object:
		n.kind = kObject
		for i := range t.Members {
			m := &t.Members[i]
			n.keys = append(n.keys, m.Name.Value.(hujson.Literal).String())
			n.keyPos = append(n.keyPos, l.pos(m.Name.StartOffset))
			n.vals = append(n.vals, fromHuJSON(&m.Value, l))
		}
	case *hujson.Array:
		n.kind = kArray
		for i := range t.Elements {
			n.elems = append(n.elems, fromHuJSON(&t.Elements[i], l))
		}
	case hujson.Literal:
		n.kind, n.str = kOther, string(t)
		if t.Kind() == '"' {
			n.kind, n.str = kString, t.String()
		}
	}
	return n
}

// parseTOML reads a TOML document. go-toml's decoder validates it (and
// reports errors at a line and column); its unstable parser then gives the
// offset of every key and value.
// A byte-order mark is read past (as toml_edit, Codex's parser, does):
// blanked, so offsets stay the file's and lines.pos leaves it out of
// columns.
func parseTOML(file string, src []byte) (*node, error) {
	text := src
	if bytes.HasPrefix(src, bom) {
		text = append([]byte("   "), src[len(bom):]...)
	}
	var check map[string]any
	decodeErr := toml.Unmarshal(text, &check)
	if decodeErr != nil {
		var de *toml.DecodeError
		if errors.As(decodeErr, &de) {
			if line, col := de.Position(); line > 0 {
				if line == 1 && bytes.HasPrefix(src, bom) && col > len(bom) {
					col -= len(bom)
				}
				return nil, &schema.Error{Pos: position.Pos{File: file, Line: line, Col: col}, Msg: "not valid TOML: " + de.Error()}
			}
		}
	}
	// The decoder reports a key defined twice without a position: the tree
	// below finds it again, at the key.
	root, err := buildTOML(file, src, text)
	if err != nil {
		return nil, err
	}
	if decodeErr != nil {
		return nil, &schema.Error{Pos: position.Pos{File: file}, Msg: "not valid TOML: " + decodeErr.Error()}
	}
	return root, nil
}

func buildTOML(file string, src, text []byte) (*node, error) {
	l := newLines(file, src)
	var p unstable.Parser
	p.Reset(text)
	offset := func(n *unstable.Node) position.Pos {
		if n.Raw.Length > 0 {
			return l.pos(int(n.Raw.Offset))
		}
		if n.Kind == unstable.Bool && len(n.Data) > 0 {
			return l.pos(int(p.Range(n.Data).Offset))
		}
		return position.Pos{File: file}
	}
	b := &tomlBuilder{offset: offset, headers: map[*node]bool{}}
	root := &node{kind: kObject, pos: position.Pos{File: file, Line: 1, Col: 1}}
	cur := root
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			cur = root
			var keys []*unstable.Node
			for it := e.Key(); it.Next(); {
				keys = append(keys, it.Node())
			}
			for i, k := range keys {
				name, pos := string(k.Data), offset(k)
				if i < len(keys)-1 {
					cur = child(cur, name, pos, kObject)
					continue
				}
				if e.Kind == unstable.ArrayTable {
					arr := child(cur, name, pos, kArray)
					t := &node{kind: kObject, pos: pos}
					arr.elems = append(arr.elems, t)
					cur = t
					continue
				}
				cur = child(cur, name, pos, kObject)
				if b.headers[cur] {
					return nil, &schema.Error{Pos: pos, Msg: fmt.Sprintf("not valid TOML: table %s is defined twice", name)}
				}
				b.headers[cur] = true
			}
		case unstable.KeyValue:
			if err := b.keyValue(cur, e); err != nil {
				return nil, err
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, &schema.Error{Pos: position.Pos{File: file}, Msg: "not valid TOML: " + err.Error()}
	}
	return root, nil
}

// child returns the member name of obj, made with kind k if missing. In an
// array of tables it is the last table.
func child(obj *node, name string, pos position.Pos, k kind) *node {
	if c, _ := obj.get(name); c != nil {
		if c.kind == kArray && k == kObject && len(c.elems) > 0 {
			return c.elems[len(c.elems)-1]
		}
		return c
	}
	c := &node{kind: k, pos: pos}
	obj.keys = append(obj.keys, name)
	obj.keyPos = append(obj.keyPos, pos)
	obj.vals = append(obj.vals, c)
	return c
}

type tomlBuilder struct {
	offset  func(*unstable.Node) position.Pos
	headers map[*node]bool // tables opened by a [header]
}

// keyValue stores a (possibly dotted) key = value in obj.
func (b *tomlBuilder) keyValue(obj *node, kv *unstable.Node) error {
	var keys []*unstable.Node
	for it := kv.Key(); it.Next(); {
		keys = append(keys, it.Node())
	}
	for _, k := range keys[:len(keys)-1] {
		obj = child(obj, string(k.Data), b.offset(k), kObject)
	}
	last := keys[len(keys)-1]
	if prev, _ := obj.get(string(last.Data)); prev != nil {
		return &schema.Error{Pos: b.offset(last), Msg: fmt.Sprintf("not valid TOML: key %s is already defined", last.Data)}
	}
	v, err := b.value(kv.Value())
	if err != nil {
		return err
	}
	obj.keys = append(obj.keys, string(last.Data))
	obj.keyPos = append(obj.keyPos, b.offset(last))
	obj.vals = append(obj.vals, v)
	return nil
}

func (b *tomlBuilder) value(n *unstable.Node) (*node, error) {
	out := &node{pos: b.offset(n)}
	switch n.Kind {
	case unstable.String:
		out.kind, out.str = kString, string(n.Data)
	case unstable.Array:
		out.kind = kArray
		for it := n.Children(); it.Next(); {
			if c := it.Node(); c.Kind != unstable.Comment {
				v, err := b.value(c)
				if err != nil {
					return nil, err
				}
				out.elems = append(out.elems, v)
			}
		}
	case unstable.InlineTable:
		out.kind = kObject
		for it := n.Children(); it.Next(); {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				if err := b.keyValue(out, c); err != nil {
					return nil, err
				}
			}
		}
	default:
		out.kind, out.str = kOther, string(n.Data)
	}
	return out, nil
}

// typeError says a value is not of the kind the entry needs.
func typeError(n *node, what string, want kind) error {
	return &schema.Error{Pos: n.pos, Msg: fmt.Sprintf("%s must be %s, not %s", what, want, n.kind)}
}
