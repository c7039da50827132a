package entry

import (
	"bytes"
	"errors"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Rewriting mcpolicy's own Codex entry replaces how the server starts and
// nothing else: the lines that say it (command, args, env, env_vars, and an
// env sub-table) go, the new ones stand where the first of them stood, and
// every other line of the entry (the header and its comment, the keys the
// user added, comments, sub-tables) keeps its bytes. A value decoded and
// encoded again would not (-nan, 0x1F, a literal or multi-line string, a
// sub-table made inline, key order).

// codexLaunchKeys are the keys of a Codex entry that say how the server
// starts.
var codexLaunchKeys = map[string]bool{"command": true, "args": true, "env": true, "env_vars": true}

// launchPlaces are where a Codex entry says how its server starts.
type launchPlaces struct {
	// drop: launch key-value lines, and launch sub-tables from their header
	// through their last key-value line (whole lines, in file order).
	drop []span
	// sections: the starts of the spans in drop that are sub-tables.
	sections map[int]bool
	// first: the start of the first launch key-value line, where the new
	// lines go (-1: none).
	first int
	// prefix: the key path before "command" where it stands (none in the
	// entry's own section; mcp_servers.NAME at the root).
	prefix []string
	// inline: the inline table the launch keys are members of (then drop
	// is empty).
	inline  *inlineServers
	command bool // the command was found
}

// findLaunch scans the (valid) file for the launch parts of the entry
// server.
func findLaunch(body []byte, server string) (*launchPlaces, error) {
	lp := &launchPlaces{first: -1, sections: map[int]bool{}}
	var p unstable.Parser
	p.Reset(body)
	var table []string
	section := -1 // in lp.drop: the launch sub-table being read
	for p.NextExpression() {
		x := p.Expression()
		path, start, end := keyOf(x)
		switch x.Kind {
		case unstable.Table, unstable.ArrayTable:
			table, section = path, -1
			if launchPath(path, server) {
				lp.drop = append(lp.drop, span{lineBegin(body, start), pastLine(body, end)})
				section = len(lp.drop) - 1
				lp.sections[lp.drop[section].start] = true
			}
		case unstable.KeyValue:
			end = int(x.Raw.Offset + x.Raw.Length)
			if section >= 0 {
				lp.drop[section].end = pastLine(body, end)
				continue
			}
			full := append(append([]string{}, table...), path...)
			switch {
			case launchPath(full, server):
				s := span{lineBegin(body, start), pastLine(body, end)}
				lp.drop = append(lp.drop, s)
				if lp.first < 0 {
					lp.first = s.start
				}
				lp.sawKey(path, full)
			case holdsEntry(full, server) && x.Value().Kind == unstable.InlineTable:
				if err := lp.inInline(body, x, full, server); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	switch {
	case !lp.command:
		return nil, errors.New("its command is not where the file was read to hold it")
	case lp.inline != nil && len(lp.drop) > 0:
		return nil, errors.New("its launch is both inside an inline table and outside it")
	}
	return lp, nil
}

// sawKey notes a launch key written as rel in its table (full from the
// root): the command's tells where the new keys go, and how they are
// spelt.
func (lp *launchPlaces) sawKey(rel, full []string) {
	if len(full) == 3 && full[2] == "command" {
		lp.prefix, lp.command = rel[:len(rel)-1], true
	}
}

// inInline reads the inline table kv holds (at base from the root) for the
// entry's launch members, and the inline tables inside it that hold the
// entry.
func (lp *launchPlaces) inInline(body []byte, kv *unstable.Node, base []string, server string) error {
	v := kv.Value()
	t := &inlineServers{open: int(v.Raw.Offset), close: int(kv.Raw.Offset+kv.Raw.Length) - 1}
	if body[t.open] != '{' || body[t.close] != '}' {
		return errors.New("an inline table's braces are not where the parser put them")
	}
	ours := false
	for it := v.Children(); it.Next(); {
		m := it.Node()
		if m.Kind != unstable.KeyValue {
			continue
		}
		rel, _, _ := keyOf(m)
		full := append(append([]string{}, base...), rel...)
		launch := launchPath(full, server)
		t.members = append(t.members, member{span{int(m.Raw.Offset), int(m.Raw.Offset + m.Raw.Length)}, launch})
		switch {
		case launch:
			ours = true
			lp.sawKey(rel, full)
		case holdsEntry(full, server) && m.Value().Kind == unstable.InlineTable:
			if err := lp.inInline(body, m, full, server); err != nil {
				return err
			}
		}
	}
	if ours {
		lp.inline = t
	}
	return nil
}

// launchPath reports whether path (from the root) lies in the launch of
// mcp_servers.server.
func launchPath(path []string, server string) bool {
	return len(path) >= 3 && path[0] == "mcp_servers" && path[1] == server && codexLaunchKeys[path[2]]
}

// holdsEntry reports whether path (from the root) is mcp_servers or
// mcp_servers.server.
func holdsEntry(path []string, server string) bool {
	return len(path) >= 1 && len(path) <= 2 && path[0] == "mcp_servers" && (len(path) == 1 || path[1] == server)
}

// blankLine is the length of b's first line, newline included, when it
// holds only blanks (0 otherwise, and when b is empty).
func blankLine(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 || len(bytes.Trim(b[:i], " \t\r")) > 0 {
		return 0
	}
	return i + 1
}

// rewriteLaunch replaces the launch of mcpolicy's entry server with fields
// (`key = value` each), leaving every other byte of the file as it was.
func rewriteLaunch(body []byte, server string, fields []string, nl string) ([]byte, error) {
	lp, err := findLaunch(body, server)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f
		if len(lp.prefix) > 0 {
			keys[i] = dotted(lp.prefix) + "." + f
		}
	}
	if lp.inline != nil {
		return lp.inline.put(body, strings.Join(keys, ", ")), nil
	}
	if lp.first < 0 {
		return nil, errors.New("its command is not on a line of its own")
	}
	sort.Slice(lp.drop, func(i, j int) bool { return lp.drop[i].start < lp.drop[j].start })
	var b bytes.Buffer
	at := 0
	for _, s := range lp.drop {
		b.Write(body[at:s.start])
		if s.start == lp.first {
			b.WriteString(strings.Join(keys, nl) + nl)
		}
		at = s.end
		// A sub-table that stood between blank lines leaves one.
		if lp.sections[s.start] && (b.Len() == 0 || endsBlank(b.Bytes())) {
			at += blankLine(body[at:])
		}
	}
	b.Write(body[at:])
	return b.Bytes(), nil
}
