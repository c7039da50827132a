package clientcfg

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/internal/secretshape"
	"github.com/mcpolicy/mcpolicy/schema"
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
	// index finds a member of a large object in constant time (get): the
	// last position of each of keys[:indexed]. Members are only appended.
	index   map[string]int
	indexed int
}

// indexFrom is the size from which an object's members are looked up by
// index rather than by a scan: a Codex file of 60,000 tables, or a JSON
// file of as many servers, stays linear.
const indexFrom = 32

// get returns the value of key and the position of the key. When a key is
// written twice the last one wins, as in JSON.parse and Go's encoding/json.
func (n *node) get(key string) (*node, position.Pos) {
	if n == nil || n.kind != kObject {
		return nil, position.Pos{}
	}
	if len(n.keys) >= indexFrom {
		if n.index == nil {
			n.index = make(map[string]int, len(n.keys))
		}
		for ; n.indexed < len(n.keys); n.indexed++ {
			n.index[n.keys[n.indexed]] = n.indexed
		}
		if i, ok := n.index[key]; ok {
			return n.vals[i], n.keyPos[i]
		}
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
	if err := depthError(file, src, false); err != nil {
		return nil, err
	}
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
		e.Msg = printable.String(redactLiteral(e.Msg))
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
		if err := b.scalar(n); err != nil {
			return nil, err
		}
		out.kind, out.str = kOther, string(n.Data)
	}
	return out, nil
}

// typeError says a value is not of the kind the entry needs.
func typeError(n *node, what string, want kind) error {
	return &schema.Error{Pos: n.pos, Msg: fmt.Sprintf("%s must be %s, not %s", what, want, n.kind)}
}

// maxDepth bounds how deep a JSON config's arrays and objects nest: a
// parser recurses once a level, so a file of a million '[' would exhaust
// its stack. No client config nests past a dozen levels.
const maxDepth = 1000

// depthError scans src (linear, strings and comments skipped: JSON's //
// and /* */, TOML's # and '...') for a bracket that opens a level past
// maxDepth, and says so at it.
func depthError(file string, src []byte, toml bool) error {
	depth := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '"' || toml && c == '\'':
			for i++; i < len(src) && src[i] != c && src[i] != '\n'; i++ {
				if src[i] == '\\' && c == '"' {
					i++
				}
			}
		case toml && c == '#', !toml && c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case !toml && c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				return nil
			}
			i += end + 3
		case c == '[' || c == '{':
			if depth++; depth > maxDepth {
				return &schema.Error{Pos: newLines(file, src).pos(i), Msg: fmt.Sprintf("arrays and objects nest deeper than %d levels: not read"+
					"; hint: a client config nests a few levels (servers, an entry, its args)", maxDepth)}
			}
		case c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// maxExcerpt is the longest literal a PARSE message quotes.
const maxExcerpt = 16

// redactLiteral is a parser's message with the literal it quotes
// ("invalid literal: sk-proj-...", an unquoted value) kept only when it is
// short and does not look like a secret (internal/secretshape): a PARSE
// error prints into a CI log, where an inline secret must not.
func redactLiteral(msg string) string {
	const lead = "invalid literal: "
	i := strings.Index(msg, lead)
	if i < 0 {
		return msg
	}
	lit := msg[i+len(lead):]
	if len(lit) <= maxExcerpt && !secretshape.Looks("", lit) && secretshape.Credential(lit) == "" {
		return msg
	}
	return msg[:i] + fmt.Sprintf("an invalid literal of %d bytes (not quoted: it may be a secret)", len(lit))
}
