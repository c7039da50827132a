package clientcfg

import (
	"bytes"
	"fmt"

	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// parseTOML reads a TOML document into a tree, with the offset of every
// key and value (go-toml's unstable parser), and checks what the parser
// leaves to a decoder: a key or table defined twice, a table extending a
// value, an inline table or a static array, a [table] reopening one that
// dotted keys made, a number or date that is not one. The checks look
// members up by index: the time is linear in the file (go-toml's own
// decoder scans siblings, quadratic in the tables of one level).
// A byte-order mark is read past (as toml_edit, Codex's parser, does):
// blanked, so offsets stay the file's and lines.pos leaves it out of
// columns.
func parseTOML(file string, src []byte) (*node, error) {
	if err := depthError(file, src, true); err != nil {
		return nil, err
	}
	text := src
	if bytes.HasPrefix(src, bom) {
		text = append([]byte("   "), src[len(bom):]...)
	}
	return buildTOML(file, src, text)
}

// tomlBuilder builds the tree and remembers how each table was made.
type tomlBuilder struct {
	offset func(*unstable.Node) position.Pos
	made   map[*node]tomlMade
}

// tomlMade is how a table or array came to be: TOML lets an implicit
// table be defined once by a header, and nothing else be reopened.
type tomlMade int

const (
	madeImplicit tomlMade = iota // a prefix of a header
	madeHeader                   // [table]
	madeDotted                   // a.b = 1 made a
	madeClosed                   // an inline table, a static array, or a value
	madeArray                    // [[array]]
)

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
	b := &tomlBuilder{offset: offset, made: map[*node]tomlMade{}}
	root := &node{kind: kObject, pos: position.Pos{File: file, Line: 1, Col: 1}}
	cur := root
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			var keys []*unstable.Node
			for it := e.Key(); it.Next(); {
				keys = append(keys, it.Node())
			}
			t, err := b.table(root, keys, e.Kind == unstable.ArrayTable)
			if err != nil {
				return nil, err
			}
			cur = t
		case unstable.KeyValue:
			if err := b.keyValue(cur, e); err != nil {
				return nil, err
			}
		}
	}
	if err := p.Error(); err != nil {
		pos := position.Pos{File: file}
		if pe, ok := err.(*unstable.ParserError); ok && len(pe.Highlight) > 0 {
			if off := cap(text) - cap(pe.Highlight); off >= 0 && off <= len(text) {
				pos = l.pos(off)
			}
		}
		return nil, &schema.Error{Pos: pos, Msg: "not valid TOML: toml: " + err.Error()}
	}
	return root, nil
}

// table opens [a.b.c] or [[a.b.c]] below root.
func (b *tomlBuilder) table(root *node, keys []*unstable.Node, array bool) (*node, error) {
	cur := root
	for i, k := range keys {
		name, pos := string(k.Data), b.offset(k)
		last := i == len(keys)-1
		c, _ := cur.get(name)
		m := b.made[c]
		switch {
		case c == nil && last && array:
			arr := &node{kind: kArray, pos: pos}
			b.add(cur, name, pos, arr, madeArray)
			c = arr
		case c == nil:
			c = &node{kind: kObject, pos: pos}
			b.add(cur, name, pos, c, madeImplicit)
		case m == madeArray && (!last || array): // [[a]] again, or [a.b] into the last table of [[a]]
		case !last && (m == madeImplicit || m == madeHeader || m == madeDotted): // a sub-table
		case last && !array && m == madeImplicit: // defined once
		default:
			return nil, &schema.Error{Pos: pos, Msg: fmt.Sprintf("not valid TOML: %s %s is already defined", what(b.made[c], c), name)}
		}
		if b.made[c] == madeArray {
			if last {
				t := &node{kind: kObject, pos: pos}
				c.elems = append(c.elems, t)
				return t, nil
			}
			c = c.elems[len(c.elems)-1]
		}
		if last {
			b.made[c] = madeHeader
		}
		cur = c
	}
	return cur, nil
}

// what names how a node was made, for an error.
func what(m tomlMade, n *node) string {
	switch {
	case m == madeHeader:
		return "table"
	case m == madeArray:
		return "array of tables"
	case n.kind == kObject && m == madeDotted:
		return "table (by a dotted key)"
	}
	return "key"
}

// add appends a member.
func (b *tomlBuilder) add(obj *node, name string, pos position.Pos, v *node, m tomlMade) {
	obj.keys = append(obj.keys, name)
	obj.keyPos = append(obj.keyPos, pos)
	obj.vals = append(obj.vals, v)
	b.made[v] = m
}

// keyValue stores a (possibly dotted) key = value in obj.
func (b *tomlBuilder) keyValue(obj *node, kv *unstable.Node) error {
	var keys []*unstable.Node
	for it := kv.Key(); it.Next(); {
		keys = append(keys, it.Node())
	}
	for _, k := range keys[:len(keys)-1] {
		name, pos := string(k.Data), b.offset(k)
		c, _ := obj.get(name)
		switch {
		case c == nil:
			c = &node{kind: kObject, pos: pos}
			b.add(obj, name, pos, c, madeDotted)
		case b.made[c] != madeDotted:
			return &schema.Error{Pos: pos, Msg: fmt.Sprintf("not valid TOML: %s %s is already defined", what(b.made[c], c), name)}
		}
		obj = c
	}
	last := keys[len(keys)-1]
	if prev, _ := obj.get(string(last.Data)); prev != nil {
		return &schema.Error{Pos: b.offset(last), Msg: fmt.Sprintf("not valid TOML: key %s is already defined", last.Data)}
	}
	v, err := b.value(kv.Value())
	if err != nil {
		return err
	}
	b.add(obj, string(last.Data), b.offset(last), v, madeClosed)
	return nil
}

// scalar checks a number or a date the parser only delimits, as the
// decoder reads it: alone, so the cost stays per value.
func (b *tomlBuilder) scalar(n *unstable.Node) error {
	switch n.Kind {
	case unstable.Integer, unstable.Float, unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
	default:
		return nil
	}
	var v map[string]any
	if err := toml.Unmarshal(append([]byte("v = "), n.Data...), &v); err != nil {
		msg := err.Error()
		return &schema.Error{Pos: b.offset(n), Msg: "not valid TOML: " + msg}
	}
	return nil
}
