package entry

import (
	"bytes"
	"errors"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// entryParts are the places of a Codex config that define mcp_servers.NAME.
// Each is whole lines of the file: TOML puts one expression on a line, and
// a header on one line.
type entryParts struct {
	// sections: a [mcp_servers.NAME] or [mcp_servers.NAME.x] / [[...]]
	// header through its last key-value line (comments and blank lines
	// after that belong to whatever follows).
	sections []span
	// keys: key-values outside those sections whose dotted key resolves
	// under mcp_servers.NAME (at the root, or in [mcp_servers]).
	keys []span
	// inline: mcp_servers = { ... } at the root, a table closed to headers
	// and dotted keys elsewhere.
	inline *inlineServers
	// mention: the offset where mcp_servers is first named (-1: nowhere).
	mention int
}

type span struct{ start, end int }

// findEntry scans the (valid) file for the parts of the entry server.
func findEntry(body []byte, server string) (*entryParts, error) {
	e := &entryParts{mention: -1}
	var p unstable.Parser
	p.Reset(body)
	var table []string
	section := -1 // in e.sections: the section being read, when it is the entry's
	for p.NextExpression() {
		x := p.Expression()
		path, start, end := keyOf(x)
		switch x.Kind {
		case unstable.Table, unstable.ArrayTable:
			table, section = path, -1
			e.mentioned(path, start)
			if inEntry(path, server) {
				e.sections = append(e.sections, span{lineBegin(body, start), pastLine(body, end)})
				section = len(e.sections) - 1
			}
		case unstable.KeyValue:
			end = int(x.Raw.Offset + x.Raw.Length)
			if section >= 0 {
				e.sections[section].end = pastLine(body, end)
				continue
			}
			full := append(append([]string{}, table...), path...)
			e.mentioned(full, start)
			switch {
			case inEntry(full, server):
				e.keys = append(e.keys, span{lineBegin(body, start), pastLine(body, end)})
			case len(full) == 1 && full[0] == "mcp_servers" && x.Value().Kind == unstable.InlineTable:
				t, err := inlineOf(body, x, server)
				if err != nil {
					return nil, err
				}
				e.inline = t
			}
		}
	}
	return e, p.Error()
}

func (e *entryParts) mentioned(path []string, off int) {
	if e.mention < 0 && len(path) > 0 && path[0] == "mcp_servers" {
		e.mention = off
	}
}

func inEntry(path []string, server string) bool {
	return len(path) >= 2 && path[0] == "mcp_servers" && path[1] == server
}

// keyOf is the key of a header or key-value: its names, the offset of its
// first byte and the end of its last name.
func keyOf(x *unstable.Node) (path []string, start, end int) {
	start = int(x.Raw.Offset)
	for it := x.Key(); it.Next(); {
		k := it.Node()
		if path == nil {
			start = int(k.Raw.Offset)
		}
		path = append(path, string(k.Data))
		end = int(k.Raw.Offset + k.Raw.Length)
	}
	return path, start, end
}

// lineBegin is the offset of the start of off's line.
func lineBegin(b []byte, off int) int { return bytes.LastIndexByte(b[:off], '\n') + 1 }

// pastLine is the offset after the end of off's line and its newline.
func pastLine(b []byte, off int) int {
	if i := bytes.IndexByte(b[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(b)
}

// replace writes block where the entry's first section was (else at the
// end, after a blank line) and drops every other part.
func (e *entryParts) replace(body []byte, block, nl string) []byte {
	type part struct {
		span
		section bool
	}
	var parts []part
	for _, s := range e.sections {
		parts = append(parts, part{s, true})
	}
	for _, s := range e.keys {
		parts = append(parts, part{s, false})
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].start < parts[j].start })
	var b bytes.Buffer
	at, placed := 0, false
	for _, p := range parts {
		b.Write(body[at:p.start])
		if p.section && !placed {
			b.WriteString(block)
			placed = true
		}
		at = p.end
	}
	b.Write(body[at:])
	if !placed {
		if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
			b.WriteString(nl)
		}
		if len(bytes.TrimSpace(b.Bytes())) > 0 && !endsBlank(b.Bytes()) {
			b.WriteString(nl)
		}
		b.WriteString(block)
	}
	return b.Bytes()
}

// endsBlank reports whether the last line of b (which ends in a newline)
// holds only blanks.
func endsBlank(b []byte) bool {
	last := b[lineBegin(b, len(b)-1) : len(b)-1]
	return len(bytes.Trim(last, " \t\r")) == 0
}

// inlineServers is mcp_servers = { ... }: where its braces are, and its
// members (TOML 1.0 keeps an inline table on one line, without comments).
type inlineServers struct {
	open, close int
	members     []member
}

type member struct {
	span
	ours bool // a key of the entry (NAME = {...}, NAME.command = ...)
}

func inlineOf(body []byte, x *unstable.Node, server string) (*inlineServers, error) {
	v := x.Value()
	t := &inlineServers{open: int(v.Raw.Offset), close: int(x.Raw.Offset+x.Raw.Length) - 1}
	if body[t.open] != '{' || body[t.close] != '}' {
		return nil, errors.New("mcp_servers: the inline table's braces are not where the parser put them")
	}
	for it := v.Children(); it.Next(); {
		m := it.Node()
		path, _, _ := keyOf(m)
		t.members = append(t.members, member{span{int(m.Raw.Offset), int(m.Raw.Offset + m.Raw.Length)}, len(path) > 0 && path[0] == server})
	}
	return t, nil
}

// put writes text in place of the entry's first member, drops its others
// with one separator each, or appends text when the entry has none.
func (t *inlineServers) put(body []byte, text string) []byte {
	var b bytes.Buffer
	b.Write(body[:t.open+1])
	ms := t.members
	if len(ms) == 0 {
		inner := body[t.open+1 : t.close]
		b.Write(inner)
		if len(inner) == 0 {
			b.WriteByte(' ')
		}
		b.WriteString(text + " ")
		b.Write(body[t.close:])
		return b.Bytes()
	}
	b.Write(body[t.open+1 : ms[0].start])
	var sep []byte // what followed the last member written
	wrote, replaced := false, false
	for i, m := range ms {
		piece := body[m.start:m.end]
		if m.ours {
			if replaced {
				continue
			}
			piece, replaced = []byte(text), true
		}
		if wrote {
			b.Write(sep)
		}
		b.Write(piece)
		wrote = true
		if i+1 < len(ms) {
			sep = body[m.end:ms[i+1].start]
		}
	}
	if !replaced {
		b.WriteString(", " + text)
	}
	b.Write(body[ms[len(ms)-1].end:])
	return b.Bytes()
}

// firstRefused is the offset and the full key of the first expression at
// which the file stops parsing (-1 when none does): the prefixes that end
// before it parse.
func firstRefused(body []byte) (int, string) {
	var p unstable.Parser
	p.Reset(body)
	var starts, ends []int
	var keys []string
	var table []string
	for p.NextExpression() {
		x := p.Expression()
		path, start, end := keyOf(x)
		if x.Kind == unstable.KeyValue {
			end = int(x.Raw.Offset + x.Raw.Length)
			path = append(append([]string{}, table...), path...)
		} else {
			table = path
		}
		starts, ends, keys = append(starts, start), append(ends, pastLine(body, end)), append(keys, dotted(path))
	}
	i := sort.Search(len(ends), func(i int) bool {
		var doc map[string]any
		return toml.Unmarshal(body[:ends[i]], &doc) != nil
	})
	if i == len(ends) {
		return -1, ""
	}
	return starts[i], keys[i]
}

func dotted(path []string) string {
	keys := make([]string, len(path))
	for i, k := range path {
		keys[i] = tomlKey(k)
	}
	return strings.Join(keys, ".")
}
