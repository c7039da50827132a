package suggest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"
	cueyaml "cuelang.org/go/encoding/yaml"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// format is a policy file's syntax, by extension.
type format int

const (
	fmtCUE format = iota
	fmtJSON
	fmtYAML
)

// Edit returns src (the policy file named file) with entries added to
// server's network.allow: appended to the list where it is written, in the
// list's own layout; the list made (`network: allow: [...]`) where the
// server has none, or replacing `network: "none"`. Every other byte of the
// file is kept: comments, order, positions above the edit. Entries the
// list already holds (after folding case, trailing dots and IDN) are not
// added again. CUE, JSON and YAML; a Jsonnet policy is refused (edit it by
// hand: the patch would be to what it computes).
func Edit(file string, src []byte, server string, entries []string) ([]byte, error) {
	e, root, err := parse(file, src, "add "+strings.Join(entries, ", ")+" to server "+fmt.Sprintf("%q", server)+"'s network.allow")
	if err != nil {
		return nil, err
	}
	srv, err := e.server(root, server)
	if err != nil {
		return nil, err
	}
	if err := e.add(srv, entries); err != nil {
		return nil, err
	}
	return e.apply(), nil
}

// parse reads a policy file for an edit; what says the edit, for the
// error refusing a Jsonnet policy.
func parse(file string, src []byte, what string) (*editor, ast.Node, error) {
	var f format
	var root ast.Node
	var err error
	switch strings.ToLower(filepath.Ext(file)) {
	case ".cue":
		f = fmtCUE
		root, err = parser.ParseFile(file, src, parser.ParseComments)
	case ".json":
		f = fmtJSON
		root, err = cuejson.Extract(file, src)
	case ".yaml", ".yml":
		f = fmtYAML
		root, err = cueyaml.Extract(file, src)
	case ".jsonnet":
		return nil, nil, fmt.Errorf("%s: a Jsonnet policy is a program: %s by hand", file, what)
	default:
		return nil, nil, fmt.Errorf("%s: not a policy file (.cue, .json, .yaml, .yml)", file)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", file, err)
	}
	return &editor{file: file, src: src, f: f}, root, nil
}

type editor struct {
	file  string
	src   []byte
	f     format
	edits []textEdit
}

type textEdit struct {
	off, del int
	text     string
}

func (e *editor) apply() []byte {
	sort.SliceStable(e.edits, func(i, j int) bool { return e.edits[i].off > e.edits[j].off })
	out := append([]byte(nil), e.src...)
	for _, ed := range e.edits {
		out = append(out[:ed.off], append([]byte(ed.text), out[ed.off+ed.del:]...)...)
	}
	return out
}

func (e *editor) insert(off int, text string) {
	e.edits = append(e.edits, textEdit{off: off, text: text})
}

func (e *editor) errorf(n ast.Node, format string, args ...any) error {
	pos := e.file
	if n != nil && n.Pos().IsValid() {
		pos = fmt.Sprintf("%s:%d:%d", e.file, n.Pos().Line(), n.Pos().Column())
	}
	return fmt.Errorf("%s: %s", pos, fmt.Sprintf(format, args...))
}

// decls are the fields of a file or a struct.
func decls(n ast.Node) []*ast.Field {
	var ds []ast.Decl
	switch n := n.(type) {
	case *ast.File:
		ds = n.Decls
	case *ast.StructLit:
		ds = n.Elts
	}
	var fs []*ast.Field
	for _, d := range ds {
		if f, ok := d.(*ast.Field); ok {
			fs = append(fs, f)
		}
	}
	return fs
}

func fieldsNamed(n ast.Node, name string) []*ast.Field {
	var out []*ast.Field
	for _, f := range decls(n) {
		if l, _, err := ast.LabelName(f.Label); err == nil && l == name {
			out = append(out, f)
		}
	}
	return out
}

// server finds the struct of servers.NAME: the declaration that writes
// its network, else the first written as a struct.
func (e *editor) server(root ast.Node, name string) (*ast.StructLit, error) {
	var found []*ast.StructLit
	for _, s := range fieldsNamed(root, "servers") {
		for _, f := range fieldsNamed(s.Value, name) {
			if st, ok := f.Value.(*ast.StructLit); ok {
				found = append(found, st)
			}
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s: no server %q written as a struct here (servers: %q: {...})", e.file, name, name)
	}
	for _, st := range found {
		if len(fieldsNamed(st, "network")) > 0 {
			return st, nil
		}
	}
	return found[0], nil
}

// add puts entries into the server's network.allow.
func (e *editor) add(srv *ast.StructLit, entries []string) error {
	nets := fieldsNamed(srv, "network")
	if len(nets) > 1 {
		return e.errorf(nets[1], "network is written twice: edit by hand")
	}
	if len(nets) == 0 {
		return e.addField(srv, "network", e.networkValue(entries, true), entries)
	}
	switch v := nets[0].Value.(type) {
	case *ast.BasicLit:
		// network: "none": the list replaces it.
		start := v.Pos().Offset()
		end := e.scalarEnd(start)
		val := e.networkValue(entries, false)
		if e.f == fmtCUE {
			val = "allow: " + e.list(entries)
		}
		e.edits = append(e.edits, textEdit{off: start, del: end - start, text: val})
		return nil
	case *ast.StructLit:
		allows := fieldsNamed(v, "allow")
		if len(allows) == 0 {
			return e.addField(v, "allow", e.list(entries), entries)
		}
		l, ok := allows[0].Value.(*ast.ListLit)
		if !ok || len(allows) > 1 {
			return e.errorf(allows[0], "network.allow is not a plain list here: add %s by hand", strings.Join(entries, ", "))
		}
		return e.extend(l, entries)
	}
	return e.errorf(nets[0], "network is not written as \"none\" or {allow: [...]} here: add %s by hand", strings.Join(entries, ", "))
}

// quote spells one entry as a string of the file's syntax.
func (e *editor) quote(s string) string {
	if e.f == fmtJSON {
		b, _ := json.Marshal(s)
		return string(b)
	}
	return strconv.Quote(s)
}

func (e *editor) quoteAll(entries []string) []string {
	q := make([]string, len(entries))
	for i, s := range entries {
		q[i] = e.quote(s)
	}
	return q
}

// list is a one-line list of the entries.
func (e *editor) list(entries []string) string {
	return "[" + strings.Join(e.quoteAll(entries), ", ") + "]"
}

// networkValue is network's value holding entries; with label, CUE's
// shorthand includes its own "allow:" (network: allow: [...]).
func (e *editor) networkValue(entries []string, label bool) string {
	switch e.f {
	case fmtJSON:
		return `{"allow": ` + e.list(entries) + "}"
	case fmtYAML:
		return "{allow: " + e.list(entries) + "}"
	}
	return "allow: " + e.list(entries)
}

// lineStart and lineEnd bound the line holding off (lineEnd: its '\n',
// or the end of the source).
func (e *editor) lineStart(off int) int { return bytes.LastIndexByte(e.src[:off], '\n') + 1 }

func (e *editor) lineEnd(off int) int {
	if i := bytes.IndexByte(e.src[off:], '\n'); i >= 0 {
		return off + i
	}
	return len(e.src)
}

// indent is the blanks that start the line holding off.
func (e *editor) indent(off int) string {
	s := e.lineStart(off)
	i := s
	for i < len(e.src) && (e.src[i] == ' ' || e.src[i] == '\t') {
		i++
	}
	return string(e.src[s:i])
}

func (e *editor) line(off int) int { return bytes.Count(e.src[:off], []byte{'\n'}) }

// end is the offset just past a node. YAML scalars' ends are not
// reliable in the syntax tree: they are read from the source.
func (e *editor) end(n ast.Node) int {
	if e.f == fmtYAML {
		if _, ok := n.(*ast.BasicLit); ok {
			return e.scalarEnd(n.Pos().Offset())
		}
	}
	return n.End().Offset()
}

// scalarEnd reads a scalar (quoted, or plain up to a separator or a
// comment) from start.
func (e *editor) scalarEnd(start int) int {
	s := e.src
	if start < len(s) && (s[start] == '"' || s[start] == '\'') {
		q := s[start]
		for i := start + 1; i < len(s); i++ {
			switch {
			case s[i] == '\\' && q == '"':
				i++
			case s[i] == q:
				if q == '\'' && i+1 < len(s) && s[i+1] == '\'' { // '' inside single quotes
					i++
					continue
				}
				return i + 1
			}
		}
		return len(s)
	}
	i := start
	for i < len(s) && s[i] != '\n' && s[i] != ',' && s[i] != ']' && s[i] != '}' && !(s[i] == '#' && i > start && s[i-1] == ' ') {
		i++
	}
	for i > start && (s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\r') {
		i--
	}
	return i
}

// extend appends entries to a written list, in its layout: one per line
// in a list written one element per line, else on the same line.
func (e *editor) extend(l *ast.ListLit, entries []string) error {
	have := map[string]bool{}
	var elems []ast.Expr
	for _, x := range l.Elts {
		if _, ok := x.(*ast.Ellipsis); ok {
			return e.errorf(x, "network.allow is open (...): add %s by hand", strings.Join(entries, ", "))
		}
		elems = append(elems, x)
		if b, ok := x.(*ast.BasicLit); ok && b.Kind == token.STRING {
			if s, err := strconv.Unquote(b.Value); err == nil {
				if r, err := allowlist.ParseRule(s); err == nil {
					have[r.String()] = true
				}
			} else if r, err := allowlist.ParseRule(strings.Trim(b.Value, `'"`)); err == nil {
				have[r.String()] = true
			}
		}
	}
	var add []string
	for _, s := range entries {
		if r, err := allowlist.ParseRule(s); err == nil && have[r.String()] {
			continue
		}
		add = append(add, s)
	}
	if len(add) == 0 {
		return nil
	}
	q := e.quoteAll(add)
	open := l.Lbrack.Offset()
	block := e.f == fmtYAML && open < len(e.src) && e.src[open] == '-'
	if len(elems) == 0 {
		if block {
			return e.errorf(l, "an empty block list: add %s by hand", strings.Join(add, ", "))
		}
		e.insert(open+1, strings.Join(q, ", "))
		return nil
	}
	last := elems[len(elems)-1]
	end := e.end(last)
	switch {
	case block:
		// - a
		// - b   <- after this line, at the same indent
		ind := e.indent(last.Pos().Offset())
		var b strings.Builder
		for _, s := range q {
			b.WriteString("\n" + ind + "- " + s)
		}
		e.insert(e.lineEnd(end), b.String())
	case e.line(e.closing(l)) > e.line(end):
		ind := e.indent(last.Pos().Offset())
		var b strings.Builder
		for _, s := range q {
			if e.f == fmtJSON {
				b.WriteString(",\n" + ind + s)
			} else {
				b.WriteString("\n" + ind + s + ",")
			}
		}
		if e.f == fmtJSON {
			e.insert(end, b.String())
		} else {
			// After the last element's line (its comma and any comment).
			text, at := b.String(), e.lineEnd(end)
			if e.f == fmtCUE && !e.commaAfter(end) {
				if at == end {
					text = "," + text
				} else {
					e.insert(end, ",")
				}
			}
			e.insert(at, text)
		}
	default:
		var b strings.Builder
		for _, s := range q {
			b.WriteString(", " + s)
		}
		e.insert(end, b.String())
	}
	return nil
}

// closing is the offset of a list's "]".
func (e *editor) closing(l *ast.ListLit) int {
	if l.Rbrack.IsValid() {
		return l.Rbrack.Offset()
	}
	return l.End().Offset()
}

// commaAfter reports whether a comma follows off on its line (blanks
// between).
func (e *editor) commaAfter(off int) bool {
	for i := off; i < len(e.src) && e.src[i] != '\n'; i++ {
		switch e.src[i] {
		case ' ', '\t':
			continue
		case ',':
			return true
		}
		return false
	}
	return false
}

// addField adds name: value to a struct, after its last field, in its
// layout; value holds entries (a YAML block mapping gets them one per
// line instead).
func (e *editor) addField(st *ast.StructLit, name, value string, entries []string) error {
	fs := decls(st)
	key := name
	if e.f == fmtJSON {
		key = e.quote(name)
	}
	open := -1
	if st.Lbrace.IsValid() {
		open = st.Lbrace.Offset()
	}
	flow := open >= 0 && open < len(e.src) && e.src[open] == '{'
	if e.f == fmtYAML && !flow {
		return e.addYAMLField(st, fs, name, value, entries)
	}
	if !flow {
		return e.errorf(st, "not written as a struct with braces: add %s: %s by hand", name, value)
	}
	if len(fs) == 0 {
		e.insert(open+1, key+": "+value)
		return nil
	}
	last := fs[len(fs)-1]
	end := e.end(last)
	closeOff := st.Rbrace.Offset()
	if e.line(closeOff) > e.line(end) {
		ind := e.indent(last.Pos().Offset())
		switch e.f {
		case fmtJSON:
			e.insert(end, ",\n"+ind+key+": "+value)
		default:
			e.insert(e.lineEnd(end), "\n"+ind+key+": "+value)
		}
		return nil
	}
	e.insert(end, ", "+key+": "+value)
	return nil
}

// addYAMLField adds a field to a block mapping, after the last line of
// its last field's value, at the fields' indent.
func (e *editor) addYAMLField(st *ast.StructLit, fs []*ast.Field, name, value string, entries []string) error {
	if len(fs) == 0 {
		return e.errorf(st, "an empty mapping: add %s: %s by hand", name, value)
	}
	last := fs[len(fs)-1]
	keyOff := last.Pos().Offset()
	ind := e.indent(keyOff)
	col := keyOff - e.lineStart(keyOff)
	// The last field's value goes on while lines are blank, comments, or
	// deeper than its key (or a sequence item at its key's indent).
	endOff := e.lineEnd(keyOff)
	for at := endOff + 1; at < len(e.src); {
		le := e.lineEnd(at)
		line := string(e.src[at:le])
		t := strings.TrimLeft(line, " \t")
		lead := len(line) - len(t)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case lead > col || lead == col && strings.HasPrefix(t, "- "):
			endOff = le
		default:
			at = len(e.src)
			continue
		}
		at = le + 1
	}
	text := "\n" + ind + name + ": " + value
	if name == "network" {
		// network:
		//   allow:
		//     - "host:port"
		text = "\n" + ind + "network:\n" + ind + "  allow:"
		for _, s := range e.quoteAll(entries) {
			text += "\n" + ind + "    - " + s
		}
	} else if name == "allow" {
		text = "\n" + ind + "allow:"
		for _, s := range e.quoteAll(entries) {
			text += "\n" + ind + "  - " + s
		}
	}
	e.insert(endOff, text)
	return nil
}
