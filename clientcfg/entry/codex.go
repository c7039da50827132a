package entry

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
)

// Codex keeps each MCP server as the table mcp_servers.NAME of its
// config.toml. TOML spells one table many ways (a [mcp_servers.NAME]
// section and its sub-tables, dotted keys, a member of an inline
// mcp_servers = { ... }), so the entry is found in the parsed file
// (codexparts.go), every part of it is replaced, and every other byte is
// copied as it was.

// mergeTOML writes the entry for server into a Codex config. A file that
// does not parse is refused before anything is changed, and so is a result
// that does not read back as the file with only this entry changed: the
// caller then writes nothing.
func mergeTOML(file string, src []byte, server string, l *Launch, force bool) ([]byte, error) {
	var lead []byte // a byte order mark stays, and is no part of the first key
	if bytes.HasPrefix(src, bom) {
		lead = bom
	}
	body := src[len(lead):]
	if bad := notUTF8(server, l); bad != "" {
		return nil, &schema.Error{Pos: position.Pos{File: file},
			Msg:  fmt.Sprintf("server %q: the entry's %s is not UTF-8 text, which a TOML file cannot hold; nothing written", server, bad),
			Hint: "spell the paths and values of the server's launch in UTF-8 (move a folder whose name is not)"}
	}
	before, err := decodeTOML(file, body)
	if err != nil {
		return nil, err
	}
	parts, err := findEntry(body, server)
	if err != nil {
		return nil, &schema.Error{Pos: position.Pos{File: file}, Msg: "not valid TOML, left untouched: " + err.Error()}
	}
	servers, isTable := before["mcp_servers"].(map[string]any)
	if _, named := before["mcp_servers"]; named && !isTable {
		return nil, &schema.Error{Pos: offsetPos(file, body, parts.mention),
			Msg:  "mcp_servers is not a table of servers, left untouched",
			Hint: "Codex reads each server from a table [mcp_servers.NAME]: make mcp_servers a table (or remove it) and run again"}
	}
	old, had := servers[server]
	if had && !force && !codexManaged(old) {
		return nil, &ErrForeign{file, server}
	}
	fields, want := entryFields(l), tomlEntryValue(l)
	var out []byte
	switch {
	case had && codexManaged(old):
		// mcpolicy's own entry: only how the server starts is rewritten;
		// what the user added to it (enabled = false, a timeout,
		// enabled_tools, comments, sub-tables) keeps its bytes.
		if out, err = rewriteLaunch(body, server, fields, newlineOf(body)); err != nil {
			return nil, &schema.Error{Pos: position.Pos{File: file},
				Msg:  fmt.Sprintf("the entry %q: %v, left untouched", server, err),
				Hint: "a fault in mcpolicy: please report it with the file; to add the entry by hand, `mcpolicy client codex --file new.toml` shows it alone"}
		}
	case parts.inline != nil: // a closed table: the entry can only be one of its members
		out = parts.inline.put(body, tomlKey(server)+" = { "+strings.Join(fields, ", ")+" }")
	default:
		nl := newlineOf(body)
		block := "[mcp_servers." + tomlKey(server) + "]" + nl + strings.Join(fields, nl) + nl
		out = parts.replace(body, block, nl)
	}
	if err := readsBack(out, before, server, want); err != nil {
		return nil, &schema.Error{Pos: position.Pos{File: file},
			Msg:  fmt.Sprintf("the entry %q merged into this file does not read back as written (%v), left untouched", server, err),
			Hint: "a fault in mcpolicy: please report it with the file; to add the entry by hand, `mcpolicy client codex --file new.toml` shows it alone"}
	}
	return append(append([]byte{}, lead...), out...), nil
}

// decodeTOML parses the whole file as strictly as go-toml reads it. Its
// decoder reports a key or table defined twice without a position, so that
// one is found again as the first expression whose prefix stops parsing.
func decodeTOML(file string, body []byte) (map[string]any, error) {
	doc := map[string]any{}
	err := toml.Unmarshal(body, &doc)
	if err == nil {
		return doc, nil
	}
	pos, msg := position.Pos{File: file}, printable(strings.TrimPrefix(err.Error(), "toml: "))
	var de *toml.DecodeError
	if errors.As(err, &de) {
		pos.Line, pos.Col = de.Position()
	} else {
		off, key := firstRefused(body)
		pos = offsetPos(file, body, off)
		if key != "" {
			msg += " (" + key + ")"
		}
	}
	hint := "Codex cannot read this file either: correct it there (or move the file away) and run again"
	if loneCR(body, pos) {
		msg = "a line ends in a lone CR (as on old Macs), and TOML ends lines only in LF or CRLF"
		hint = "Codex cannot read this file either: convert its line ends to LF (or CRLF) and run again"
	}
	return nil, &schema.Error{Pos: pos, Msg: "not valid TOML, left untouched: " + msg, Hint: hint}
}

// loneCR reports whether pos (1-based line and byte column) is a CR that
// ends a line without an LF.
func loneCR(body []byte, pos position.Pos) bool {
	if pos.Line < 1 || pos.Col < 1 {
		return false
	}
	off := 0
	for line := 1; line < pos.Line; line++ {
		i := bytes.IndexByte(body[off:], '\n')
		if i < 0 {
			return false
		}
		off += i + 1
	}
	off += pos.Col - 1
	return off < len(body) && body[off] == '\r' && (off+1 == len(body) || body[off+1] != '\n')
}

// printable spells the control characters of a parser's message.
func printable(msg string) string {
	var b strings.Builder
	for _, r := range msg {
		if r < 0x20 || r == 0x7f {
			b.WriteString(strconv.QuoteRune(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// offsetPos is the line and column of a byte of the file (its name alone
// when off is negative).
func offsetPos(file string, body []byte, off int) position.Pos {
	if off < 0 {
		return position.Pos{File: file}
	}
	start := bytes.LastIndexByte(body[:off], '\n') + 1
	return position.Pos{File: file, Line: bytes.Count(body[:off], []byte{'\n'}) + 1, Col: off - start + 1}
}

// codexManaged: the entry's launch is mcpolicy's (Managed), or runs an
// mcpolicy exec/run with a policy (as earlier versions wrote it).
func codexManaged(v any) bool {
	entry, ok := v.(map[string]any)
	if !ok {
		return false
	}
	command, _ := entry["command"].(string)
	raw, _ := entry["args"].([]any)
	args := make([]string, len(raw))
	for i, a := range raw {
		args[i] = fmt.Sprint(a)
	}
	for i := 0; i+1 < len(args); i++ {
		if (args[i] == "exec" || args[i] == "run") && args[i+1] == "--policy" {
			return true
		}
	}
	return clientcfg.Managed(command, args)
}

// entryFields are the entry's keys, one `key = value` each, in the order
// written.
func entryFields(l *Launch) []string {
	fields := []string{"command = " + tomlString(l.Command), "args = " + tomlArray(l.Args)}
	if len(l.Env) > 0 {
		var kv []string
		for _, k := range sortedKeys(l.Env) {
			kv = append(kv, tomlKey(k)+" = "+tomlString(l.Env[k]))
		}
		fields = append(fields, "env = { "+strings.Join(kv, ", ")+" }")
	}
	if len(l.EnvVars) > 0 {
		fields = append(fields, "env_vars = "+tomlArray(l.EnvVars))
	}
	return fields
}

// tomlEntryValue is what the entry reads back as.
func tomlEntryValue(l *Launch) map[string]any {
	strs := func(ss []string) []any {
		out := make([]any, len(ss))
		for i, s := range ss {
			out[i] = s
		}
		return out
	}
	v := map[string]any{"command": l.Command, "args": strs(l.Args)}
	if len(l.Env) > 0 {
		env := map[string]any{}
		for k, s := range l.Env {
			env[k] = s
		}
		v["env"] = env
	}
	if len(l.EnvVars) > 0 {
		v["env_vars"] = strs(l.EnvVars)
	}
	return v
}

// readsBack parses the result and compares it with the file before: the
// entry is exactly the one written (with, when it was mcpolicy's entry, the
// keys the user added to it as they were), everything else is as it was.
func readsBack(out []byte, before map[string]any, server string, want map[string]any) error {
	after := map[string]any{}
	if err := toml.Unmarshal(out, &after); err != nil {
		return err
	}
	expect := map[string]any{}
	for k, v := range want {
		expect[k] = v
	}
	was, _ := before["mcp_servers"].(map[string]any)
	if old, _ := was[server].(map[string]any); codexManaged(old) {
		for k, v := range old {
			if !codexLaunchKeys[k] {
				expect[k] = v
			}
		}
	}
	servers, _ := after["mcp_servers"].(map[string]any)
	if !sameValue(servers[server], expect) {
		return errors.New("the entry reads back otherwise")
	}
	if !sameValue(withoutServer(before, server), withoutServer(after, server)) {
		return errors.New("other keys of the file changed")
	}
	return nil
}

// withoutServer is doc without mcp_servers.server, and without an
// mcp_servers left empty.
func withoutServer(doc map[string]any, server string) map[string]any {
	out := map[string]any{}
	for k, v := range doc {
		out[k] = v
	}
	servers, ok := doc["mcp_servers"].(map[string]any)
	if !ok {
		return out
	}
	rest := map[string]any{}
	for k, v := range servers {
		if k != server {
			rest[k] = v
		}
	}
	out["mcp_servers"] = rest
	if len(rest) == 0 {
		delete(out, "mcp_servers")
	}
	return out
}

// sameValue compares decoded TOML values (a nan equals a nan).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (x != x && y != y))
	case time.Time:
		y, ok := b.(time.Time)
		_, xOffset := x.Zone()
		_, yOffset := y.Zone()
		return ok && x.Equal(y) && xOffset == yOffset
	}
	return reflect.DeepEqual(a, b)
}

// newlineOf is the file's line ending: that of its first line.
func newlineOf(body []byte) string {
	if i := bytes.IndexByte(body, '\n'); i > 0 && body[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func tomlArray(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = tomlString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// notUTF8 names the first string of the entry that is not UTF-8 ("" when
// all are): tomlString would spell its bytes as U+FFFD.
func notUTF8(server string, l *Launch) string {
	if !utf8.ValidString(server) {
		return "name " + strconv.Quote(server)
	}
	if !utf8.ValidString(l.Command) {
		return "command " + strconv.Quote(l.Command)
	}
	for i, a := range l.Args {
		if !utf8.ValidString(a) {
			return fmt.Sprintf("args[%d] %q", i, a)
		}
	}
	for _, k := range sortedKeys(l.Env) {
		if !utf8.ValidString(k) || !utf8.ValidString(l.Env[k]) {
			return fmt.Sprintf("env %q", k)
		}
	}
	for i, n := range l.EnvVars {
		if !utf8.ValidString(n) {
			return fmt.Sprintf("env_vars[%d] %q", i, n)
		}
	}
	return ""
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlKey is k as a bare key when TOML allows one, else quoted.
func tomlKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, c := range []byte(k) {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return tomlString(k)
		}
	}
	return k
}
