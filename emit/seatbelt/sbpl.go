package seatbelt

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is the kind of an SBPL syntax node. SBPL is a Scheme dialect: lists,
// symbols, strings, #"regex" literals, numbers and #t/#f.
type Kind int

const (
	List Kind = iota
	Symbol
	String
	Regex
	Number
	Bool
)

// Node is one SBPL expression. Text holds a symbol's name, a string's
// unescaped value, a regex's source, a number's digits or "#t"/"#f".
type Node struct {
	Kind  Kind
	Text  string
	Items []*Node
	Line  int
	Col   int
}

// L, S, Q and R build nodes: a list, a symbol, a quoted string, a regex.
func L(items ...*Node) *Node { return &Node{Kind: List, Items: items} }
func S(name string) *Node    { return &Node{Kind: Symbol, Text: name} }
func Q(s string) *Node       { return &Node{Kind: String, Text: s} }
func R(re string) *Node      { return &Node{Kind: Regex, Text: re} }

// Head is the first symbol of a list ("" otherwise).
func (n *Node) Head() string {
	if n.Kind == List && len(n.Items) > 0 && n.Items[0].Kind == Symbol {
		return n.Items[0].Text
	}
	return ""
}

// String writes the node as SBPL on one line.
func (n *Node) String() string {
	var b strings.Builder
	n.write(&b)
	return b.String()
}

func (n *Node) write(b *strings.Builder) {
	switch n.Kind {
	case List:
		b.WriteByte('(')
		for i, it := range n.Items {
			if i > 0 {
				b.WriteByte(' ')
			}
			it.write(b)
		}
		b.WriteByte(')')
	case String:
		b.WriteString(quote(n.Text))
	case Regex:
		b.WriteString(`#"` + strings.ReplaceAll(n.Text, `"`, `\"`) + `"`)
	default:
		b.WriteString(n.Text)
	}
}

// quote writes a Scheme string literal. Control characters never reach
// here (the emitter refuses them), but are escaped all the same.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x;`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Format writes a profile: one form per line; a rule with several filters
// puts each filter on its own indented line. Comments are ";;" lines.
func Format(forms []*Node, comments map[*Node]string) string {
	var b strings.Builder
	for _, f := range forms {
		if c, ok := comments[f]; ok {
			for _, line := range strings.Split(c, "\n") {
				b.WriteString(";; " + line + "\n")
			}
		}
		h := f.Head()
		if (h == "allow" || h == "deny") && countFilters(f) > 1 {
			b.WriteString("(" + h)
			for _, it := range f.Items[1:] {
				if it.Kind == Symbol {
					b.WriteString(" " + it.Text)
					continue
				}
				b.WriteString("\n    " + it.String())
			}
			b.WriteString(")\n")
			continue
		}
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

func countFilters(f *Node) int {
	n := 0
	for _, it := range f.Items[1:] {
		if it.Kind == List {
			n++
		}
	}
	return n
}

// ParseError is a syntax error at a line and column.
type ParseError struct {
	Line, Col int
	Msg       string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

// Parse reads SBPL text: s-expressions, strings with escapes, #"regex"
// literals, ; line comments and #| block |# comments.
func Parse(src string) ([]*Node, error) {
	p := &parser{src: src, line: 1, col: 1}
	var forms []*Node
	for {
		p.skip()
		if p.eof() {
			return forms, p.err
		}
		n := p.expr()
		if p.err != nil {
			return nil, p.err
		}
		forms = append(forms, n)
	}
}

type parser struct {
	src       string
	i         int
	line, col int
	err       error
}

func (p *parser) eof() bool { return p.i >= len(p.src) || p.err != nil }

func (p *parser) next() byte {
	c := p.src[p.i]
	p.i++
	if c == '\n' {
		p.line, p.col = p.line+1, 1
	} else {
		p.col++
	}
	return c
}

func (p *parser) fail(line, col int, format string, args ...any) {
	if p.err == nil {
		p.err = &ParseError{line, col, fmt.Sprintf(format, args...)}
	}
}

// skip passes over white space and comments.
func (p *parser) skip() {
	for p.i < len(p.src) {
		switch c := p.src[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.next()
		case c == ';':
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				p.next()
			}
		case strings.HasPrefix(p.src[p.i:], "#|"):
			line, col := p.line, p.col
			end := strings.Index(p.src[p.i+2:], "|#")
			if end < 0 {
				p.fail(line, col, "unterminated #| comment")
				p.i = len(p.src)
				return
			}
			for range end + 4 {
				p.next()
			}
		default:
			return
		}
	}
}

func (p *parser) expr() *Node {
	p.skip()
	if p.eof() {
		p.fail(p.line, p.col, "unexpected end of profile")
		return nil
	}
	line, col := p.line, p.col
	switch c := p.src[p.i]; {
	case c == '(':
		p.next()
		n := &Node{Kind: List, Line: line, Col: col}
		for {
			p.skip()
			if p.eof() {
				p.fail(line, col, "unbalanced: this ( is never closed")
				return n
			}
			if p.src[p.i] == ')' {
				p.next()
				return n
			}
			n.Items = append(n.Items, p.expr())
		}
	case c == ')':
		p.fail(line, col, "unbalanced: ) without (")
		p.next()
		return nil
	case c == '"':
		p.next()
		return &Node{Kind: String, Text: p.str(line, col, false), Line: line, Col: col}
	case strings.HasPrefix(p.src[p.i:], `#"`):
		p.next()
		p.next()
		return &Node{Kind: Regex, Text: p.str(line, col, true), Line: line, Col: col}
	default:
		start := p.i
		for p.i < len(p.src) && !strings.ContainsRune(" \t\r\n()\";", rune(p.src[p.i])) {
			p.next()
		}
		atom := p.src[start:p.i]
		switch {
		case atom == "#t" || atom == "#f":
			return &Node{Kind: Bool, Text: atom, Line: line, Col: col}
		case isNumber(atom):
			return &Node{Kind: Number, Text: atom, Line: line, Col: col}
		}
		return &Node{Kind: Symbol, Text: atom, Line: line, Col: col}
	}
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// str reads a string body up to the closing quote. In a regex literal only
// \" is an escape (the rest belongs to the regex).
func (p *parser) str(line, col int, regex bool) string {
	var b strings.Builder
	for {
		if p.i >= len(p.src) {
			p.fail(line, col, "unterminated string")
			return b.String()
		}
		c := p.next()
		switch {
		case c == '"':
			return b.String()
		case c == '\\' && p.i < len(p.src):
			e := p.next()
			switch {
			case regex && e == '"':
				b.WriteByte('"')
			case regex:
				b.WriteByte('\\')
				b.WriteByte(e)
			case e == 'n':
				b.WriteByte('\n')
			case e == 't':
				b.WriteByte('\t')
			case e == '"' || e == '\\':
				b.WriteByte(e)
			case e == 'x': // R7RS: \xHH;
				end := strings.IndexByte(p.src[p.i:], ';')
				v, err := strconv.ParseUint(p.src[p.i:p.i+max(end, 0)], 16, 8)
				if end < 0 || err != nil {
					p.fail(p.line, p.col-2, "bad \\x escape in a string")
					return b.String()
				}
				for range end + 1 {
					p.next()
				}
				b.WriteByte(byte(v))
			default:
				p.fail(p.line, p.col-2, "unknown escape \\%c in a string", e)
			}
		default:
			b.WriteByte(c)
		}
	}
}
