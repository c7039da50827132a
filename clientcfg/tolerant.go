package clientcfg

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/hostfile"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
	"github.com/tailscale/hujson"
)

// The tolerant reader. Configs people publish are often not JSON as
// written: a fragment ("mcpServers": {...} without the braces around it),
// # comment lines, // comments and trailing commas where the client reads
// plain JSON, a missing closing brace, Windows paths with unescaped
// backslashes ("C:\Users\me"), VS Code's settings key written flat
// ("mcp.servers"). Lint reads them anyway, through ReadLint: the text is
// repaired by inserting or blanking bytes, every offset of the repaired
// text maps back to the file's (so every position, of an entry, a flag or
// an error, is one in the file as written), and each repair is a note at
// the position where it was made. What cannot be repaired is an error at
// its position; an entry of the wrong shape is skipped with a note, and the
// others are read. `mcpolicy check` and `mcpolicy client` read strictly
// (Read): client refuses to edit a file it cannot parse as it is.

// ReadLint reads a client config for lint, as ReadFor does, tolerantly: it
// returns the targets it could read, the notes about how the file was read
// (a repair, an entry skipped), and an error when nothing could be read (a
// *schema.Error at the file's position, or the error opening it), with the
// notes made before it. A file that yields no server is an error too (a
// bare entry is read as one, with an error), unless its servers section
// is there and empty, or it is a client's settings file with none: a note.
func ReadLint(file string, o Options) ([]*readback.Target, []lint.Note, error) {
	src, err := hostfile.ReadRegular(file, hostfile.MaxConfig)
	if err != nil {
		return nil, nil, err
	}
	local := OnThisMachine(file, o)
	tol := &tolerance{}
	ts, err := parseWith(file, src, o.Home, local, tol)
	for _, t := range ts {
		t.OnThisMachine = local && !inCluster(t.Launcher)
	}
	if err != nil {
		return nil, tol.notes, err
	}
	return ts, tol.notes, nil
}

// tolerance collects what a tolerant read says about the file; a nil one
// reads strictly.
type tolerance struct {
	notes []lint.Note
}

func (t *tolerance) note(pos position.Pos, format string, args ...any) {
	t.notes = append(t.notes, lint.Note{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// skip records an entry (or a servers section) that cannot be read; the
// others are. It reports
// whether the reader goes on (a strict read stops at the error).
func (t *tolerance) skip(err error) bool {
	if t == nil {
		return false
	}
	n := lint.Note{Msg: err.Error(), Unread: true}
	if se, ok := err.(*schema.Error); ok {
		n.Pos = se.Pos
		n.Msg = se.Msg
		if se.Path != "" {
			n.Msg = se.Path + ": " + se.Msg
		}
	}
	n.Msg += "; not linted"
	t.notes = append(t.notes, n)
	return true
}

// parseJSON reads a JSON client config: strictly (JSON with comments and
// trailing commas) when t is nil, else repaired (see fixer), with a note
// for each repair.
func (t *tolerance) parseJSON(file string, src []byte) (*node, error) {
	if t == nil {
		return parseJSON(file, src)
	}
	if err := depthError(file, src, false); err != nil {
		return nil, err
	}
	comments, commas := jsoncFile(file)
	f := &fixer{src: src, comments: comments, commas: commas}
	f.scan()
	at := newLines(file, src) // positions of the file as written
	if f.err != nil {
		f.err.Pos = at.pos(f.errOff)
		return nil, f.err
	}
	l := newLines(file, src)
	l.orig = f.orig
	v, err := hujson.Parse(f.out)
	if err != nil {
		e := &schema.Error{Pos: position.Pos{File: file, Line: 1, Col: 1}, Msg: "not valid JSON, even after repairs: " + err.Error()}
		if m := huErr.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			if out := newLines("", f.out); line >= 1 && line <= len(out.starts) {
				e.Pos = l.pos(out.starts[line-1] + col - 1)
			}
			e.Msg = "not valid JSON, even after repairs: " + m[3]
		}
		e.Msg = redactLiteral(e.Msg)
		return nil, e
	}
	sort.SliceStable(f.notes, func(i, j int) bool { return f.notes[i].off < f.notes[j].off })
	for _, n := range f.notes {
		msg := n.msg
		if n.count > 1 {
			msg = fmt.Sprintf(n.plural, n.count)
		}
		t.note(at.pos(n.off), "%s", msg)
	}
	if bytes.HasPrefix(src, bom) {
		if comments {
			t.note(at.pos(0), "a byte-order mark, skipped: JSON has none (this client's JSONC reader is not known to refuse it; Node's JSON.parse does)")
		} else {
			t.note(at.pos(0), "a byte-order mark, skipped: Node's JSON.parse refuses it, so a client that reads plain JSON (Claude Desktop, Claude Code, Cursor...) refuses the file")
		}
	}
	root := fromHuJSON(&v, l)
	t.fixRoot(root)
	return root, nil
}

// sectionKeys are the top-level keys parse reads servers from.
var sectionKeys = []string{"mcpServers", "servers", "mcp", "mcp.servers", "context_servers", "projects"}

// fixRoot reads two more shapes: VS Code's settings key written flat
// ("mcp.servers": {...}, read as "mcp": {"servers": {...}}), and server
// entries with no key around them ({"github": {"command": ...}}, often a
// fragment), read as "mcpServers".
func (t *tolerance) fixRoot(root *node) {
	if root == nil || root.kind != kObject {
		return
	}
	if flat, pos := root.get("mcp.servers"); flat != nil {
		mcp, _ := root.get("mcp")
		if servers, _ := mcp.get("servers"); servers == nil {
			t.note(pos, "the flat key \"mcp.servers\" is read as \"mcp\": {\"servers\": ...}, as VS Code's settings read it")
			if mcp == nil || mcp.kind != kObject {
				mcp = &node{kind: kObject, pos: pos}
				root.keys, root.keyPos, root.vals = append(root.keys, "mcp"), append(root.keyPos, pos), append(root.vals, mcp)
			}
			mcp.keys, mcp.keyPos, mcp.vals = append(mcp.keys, "servers"), append(mcp.keyPos, pos), append(mcp.vals, flat)
		}
	}
	for _, k := range sectionKeys {
		if n, _ := root.get(k); n != nil {
			return
		}
	}
	if len(root.keys) == 0 {
		return
	}
	if entryLike(root) { // {"command": ..., "args": [...]}: one entry, unnamed
		t.unread(root.pos, "a bare server entry, with no name and no \"mcpServers\" around it: no client reads it (linted as one server, \"(unnamed)\"); write it as \"mcpServers\": {\"NAME\": {...}}")
		wrapped := *root
		inner := &node{kind: kObject, pos: root.pos, keys: []string{"(unnamed)"}, keyPos: []position.Pos{root.pos}, vals: []*node{&wrapped}}
		*root = node{kind: kObject, pos: root.pos, keys: []string{"mcpServers"}, keyPos: []position.Pos{root.pos}, vals: []*node{inner}}
		return
	}
	for _, v := range root.vals {
		if !entryLike(v) {
			return
		}
	}
	t.note(root.keyPos[0], "server entries with no \"mcpServers\" key around them: read as its value")
	wrapped := *root
	*root = node{kind: kObject, pos: root.pos, keys: []string{"mcpServers"}, keyPos: []position.Pos{root.keyPos[0]}, vals: []*node{&wrapped}}
}

// entryLike reports whether n looks like a server entry.
func entryLike(n *node) bool {
	if n == nil || n.kind != kObject {
		return false
	}
	for _, k := range []string{"command", "url", "httpUrl", "serverUrl"} {
		if v, _ := n.get(k); v != nil {
			return true
		}
	}
	return false
}

// jsoncFile reports whether the client that reads file accepts comments,
// and trailing commas: VS Code (.vscode/*.json, its user mcp.json and
// settings.json) and Zed read JSONC, *.jsonc is JSONC by name; the others
// (Claude Desktop and Code, Cursor, Windsurf, Cline, Gemini CLI...) read
// plain JSON, and a comment or a trailing comma is a repair.
func jsoncFile(file string) (comments, commas bool) {
	s := filepath.ToSlash(file)
	dir, base := path.Base(path.Dir(s)), path.Base(s)
	switch {
	case strings.EqualFold(path.Ext(s), ".jsonc"),
		base == "opencode.json", // opencode reads JSON and JSONC alike
		dir == ".vscode",
		dir == "User" && (base == "mcp.json" || base == "settings.json"),
		(dir == "zed" || dir == ".zed") && base == "settings.json":
		return true, true
	}
	return false, false
}

// fixer repairs a config's text for the JSON(C) parser. It only inserts
// bytes (a brace, a backslash) or blanks them (a # comment, an extra
// brace), so every offset of the text parsed maps back to one in the file.
type fixer struct {
	src, out         []byte
	ins              []insertion
	notes            []fixNote
	comments, commas bool  // the client reads comments, trailing commas (JSONC)
	wrapped          bool  // a fragment: a { was inserted before it
	fragNote         int   // its note
	open             []int // offsets of the brackets not closed yet (scan)
	err              *schema.Error
	errOff           int
	rawErr           bool // err is a raw control character in a string
}

// insertion: n bytes inserted before src[at], at out[outAt].
type insertion struct{ at, outAt, n int }

// fixNote is a repair at an offset of the file; repeats of the same kind
// with no value between (comment lines) make one note, plural (with %d).
type fixNote struct {
	off         int
	kind        string
	msg, plural string
	count       int
	open        bool // a repeat counts into it
}

// orig maps an offset of the repaired text to the file's: inserted bytes
// map to where they were inserted.
func (f *fixer) orig(off int) int {
	shift := 0
	for _, in := range f.ins {
		if off < in.outAt {
			break
		}
		if off < in.outAt+in.n {
			return in.at
		}
		shift += in.n
	}
	return off - shift
}

func (f *fixer) copy(i, j int) { f.out = append(f.out, f.src[i:j]...) }

// insert adds s to the repaired text before src[at]; the text is copied up
// to at.
func (f *fixer) insert(at int, s string) {
	f.ins = append(f.ins, insertion{at: at, outAt: len(f.out), n: len(s)})
	f.out = append(f.out, s...)
}

// blank copies src[i:j] as spaces (line ends kept).
func (f *fixer) blank(i, j int) {
	for _, c := range f.src[i:j] {
		if c == '\n' || c == '\r' {
			f.out = append(f.out, c)
		} else {
			f.out = append(f.out, ' ')
		}
	}
}

// note records a repair; a note of the same kind right after another (no
// value between) counts into it.
func (f *fixer) note(off int, kind, msg, plural string) {
	if n := len(f.notes); n > 0 && kind != "" && f.notes[n-1].kind == kind && f.notes[n-1].open {
		f.notes[n-1].count++
		return
	}
	f.notes = append(f.notes, fixNote{off: off, kind: kind, msg: msg, plural: plural, count: 1, open: kind != ""})
}

// value ends a run of notes (comment lines are counted until a value).
func (f *fixer) value() {
	if n := len(f.notes); n > 0 {
		f.notes[n-1].open = false
	}
}

func lineEnd(src []byte, i int) int {
	if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(src)
}

// lineStart reports whether only blanks precede src[i] on its line.
func lineStart(src []byte, i int) bool {
	for j := i - 1; j >= 0 && src[j] != '\n'; j-- {
		if src[j] != ' ' && src[j] != '\t' && src[j] != '\r' {
			return false
		}
	}
	return true
}

// skip returns the offset of the next byte at or after i that is not a
// blank or in a comment.
func (f *fixer) skip(i int) int {
	src := f.src
	for i < len(src) {
		switch c := src[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '#', c == '/' && i+1 < len(src) && src[i+1] == '/', c == '`' && bytes.HasPrefix(src[i:], fence) && lineStart(src, i):
			i = lineEnd(src, i)
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				return len(src)
			}
			i += 2 + end + 2
		default:
			return i
		}
	}
	return i
}

var fence = []byte("```")

const strictClient = "a client that reads plain JSON refuses the file"

// scan copies src to out, repairing as it goes.
func (f *fixer) scan() {
	src := f.src
	i := 0
	if bytes.HasPrefix(src, bom) {
		f.out = append(f.out, "   "...)
		i = len(bom)
	}
	frag := f.fragmentAt(i)
	for i < len(src) {
		c := src[i]
		switch {
		case i == frag:
			f.openFragment(i)
			frag = -1
			continue
		case f.commentAt(i):
			i = f.comment(i)
			continue
		case c == '"':
			i = f.str(i)
			f.value()
			if f.err != nil {
				return
			}
			continue
		case c == '{' || c == '[':
			f.open = append(f.open, i)
			f.value()
		case c == '}' || c == ']':
			if f.extraCloser(i) {
				i++
				continue
			}
		case c == ',':
			if k := f.skip(i + 1); k < len(src) && (src[k] == '}' || src[k] == ']') && !f.commas {
				f.note(i, "", "a trailing comma, skipped: "+strictClient, "")
			}
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			f.value()
		}
		f.out = append(f.out, c)
		i++
	}
	f.closeAtEnd()
}

// fragmentAt returns the offset of the file's first value, from i, when
// the file is a fragment ("mcpServers": {...} without the braces around
// it: a string followed by ':'), else -1.
func (f *fixer) fragmentAt(i int) int {
	src := f.src
	if k := f.skip(i); k < len(src) && src[k] == '"' {
		if e := f.stringEnd(k); e < len(src) {
			if m := f.skip(e + 1); m < len(src) && src[m] == ':' {
				return k
			}
		}
	}
	return -1
}

// openFragment inserts the { a fragment lacks before src[i]; its } is
// added at the end (closeAtEnd), unless the file closes it itself
// (extraCloser).
func (f *fixer) openFragment(i int) {
	f.insert(i, "{")
	f.note(i, "", "a fragment, without the braces around it: read as an object ({ and } added)", "")
	f.value()
	f.wrapped, f.fragNote = true, len(f.notes)-1
}

// commentAt reports whether a comment starts at src[i]: a # line, a
// Markdown code fence, a // line or a /* */ comment.
func (f *fixer) commentAt(i int) bool {
	src := f.src
	switch c := src[i]; {
	case c == '#':
		return true
	case c == '`':
		return bytes.HasPrefix(src[i:], fence) && lineStart(src, i)
	case c == '/':
		return i+1 < len(src) && (src[i+1] == '/' || src[i+1] == '*')
	}
	return false
}

// comment copies the comment at src[i] (commentAt), as spaces where no
// client reads it (# lines, code fences) and as written where the JSONC
// parser skips it (// and /* */), notes it where the client would refuse
// it, and returns the offset after it.
func (f *fixer) comment(i int) int {
	src := f.src
	switch {
	case src[i] == '#':
		j := lineEnd(src, i)
		f.blank(i, j)
		f.note(i, "#", "a # comment, skipped: neither JSON nor JSONC has them, and a client refuses the file",
			"%d # comment lines, skipped: neither JSON nor JSONC has them, and a client refuses the file")
		return j
	case src[i] == '`':
		j := lineEnd(src, i)
		f.blank(i, j)
		f.note(i, "", "a Markdown code fence (```), skipped", "")
		return j
	case src[i+1] == '/':
		j := lineEnd(src, i)
		f.copy(i, j)
		if !f.comments {
			f.note(i, "//", "a // comment, skipped: JSON has no comments, and "+strictClient,
				"%d // comment lines, skipped: JSON has no comments, and "+strictClient)
		}
		return j
	}
	end := bytes.Index(src[i+2:], []byte("*/"))
	j := len(src)
	if end >= 0 {
		j = i + 2 + end + 2
	}
	f.copy(i, j)
	if !f.comments && end >= 0 { // unclosed, it is the parser's error
		f.note(i, "", "a /* */ comment, skipped: JSON has no comments, and "+strictClient, "")
	}
	return j
}

// extraCloser reads the } or ] at src[i]: it closes the innermost open
// bracket when it matches it. With none open and nothing after it, it is
// a fragment's own closing brace (only the { was missing), or one bracket
// too many, blanked: then it reports true, and scan skips it.
func (f *fixer) extraCloser(i int) bool {
	src, c := f.src, f.src[i]
	if len(f.open) == 0 && f.skip(i+1) == len(src) {
		if f.wrapped && c == '}' {
			f.wrapped = false
			f.notes[f.fragNote].msg = "the { that opens the file is missing: read with it added"
			return false
		}
		f.blank(i, i+1)
		f.note(i, "", fmt.Sprintf("an extra %c at the end of the file, skipped", c), "")
		return true
	}
	if len(f.open) > 0 && closer(src[f.open[len(f.open)-1]]) == c {
		f.open = f.open[:len(f.open)-1]
	}
	f.value()
	return false
}

// closeAtEnd closes, at the end of the file, the one bracket never closed
// (more is an error: which one is missing cannot be told) and a fragment's
// inserted {.
func (f *fixer) closeAtEnd() {
	src := f.src
	switch {
	case len(f.open) == 1:
		o := f.open[0]
		f.insert(len(src), string(closer(src[o])))
		f.note(o, "", fmt.Sprintf("this %c is never closed: read with a %c added at the end of the file", src[o], closer(src[o])), "")
	case len(f.open) > 1:
		o := f.open[len(f.open)-1]
		f.err = &schema.Error{Msg: fmt.Sprintf("not valid JSON: %d brackets are never closed, this %c the innermost (lint repairs one missing)", len(f.open), src[o])}
		f.errOff = o
	}
	if f.wrapped {
		f.insert(len(src), "}")
	}
}

func closer(c byte) byte {
	if c == '[' {
		return ']'
	}
	return '}'
}

// stringEnd returns the offset of the quote that ends the string starting
// at src[i], read as JSON would (len(src) when none on the line).
func (f *fixer) stringEnd(i int) int {
	src := f.src
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j
		case '\n':
			return len(src)
		}
	}
	return len(src)
}

// str copies the string at src[i] and returns the offset after it. A
// string with an escape JSON does not have (\U, \s, \u not followed by four
// hex digits), or a Windows path written with single backslashes (C:\new,
// .\bin, which would read as C:, a newline, ew) is read as written: each
// single backslash doubled. A quote after a backslash ends such a string
// when what follows ends a value ("C:\dir\", ...).
func (f *fixer) str(i int) int {
	src := f.src
	bad := false
	end := -1 // the closing quote
	for j := i + 1; j < len(src) && end < 0; j++ {
		switch src[j] {
		case '"':
			end = j
		case '\n', '\r':
			if k := bytes.IndexByte(src[j:], '"'); k >= 0 && !bytes.Contains(src[j:j+k], []byte("\n\n")) {
				// the string goes on past the line end: JSON.parse refuses it there
				f.rawControl(j)
				return len(src)
			}
			j = len(src)
		case '\t', '\x00', '\x01', '\x02', '\x03', '\x04', '\x05', '\x06', '\x07', '\x08', '\x0b', '\x0c',
			'\x0e', '\x0f', '\x10', '\x11', '\x12', '\x13', '\x14', '\x15', '\x16', '\x17', '\x18', '\x19', '\x1a', '\x1b',
			'\x1c', '\x1d', '\x1e', '\x1f':
			f.rawControl(j)
			return len(src)
		case '\\':
			if j+1 >= len(src) {
				continue
			}
			switch d := src[j+1]; {
			case d == '"':
				if (bad || winPath(src[i+1:j])) && endsValue(src, j+2) {
					bad, end = true, j+1
				}
			case d == 'u':
				if j+6 > len(src) || !isHex(src[j+2:j+6]) {
					bad = true
				}
			case strings.IndexByte(`\/bfnrt`, d) < 0:
				bad = true
			}
			j++
		}
	}
	if end < 0 { // not closed on its line: the parser says so
		j := lineEnd(src, i)
		f.copy(i, j)
		return j
	}
	raw := src[i+1 : end]
	if !bad && !winPath(raw) {
		f.copy(i, end+1)
		return end + 1
	}
	f.out = append(f.out, '"')
	for k := 0; k < len(raw); k++ {
		at := i + 1 + k
		if raw[k] != '\\' {
			f.out = append(f.out, raw[k])
			continue
		}
		if k+1 < len(raw) && (raw[k+1] == '\\' || raw[k+1] == '"') {
			f.copy(at, at+2)
			k++
			continue
		}
		f.insert(at, `\`)
		f.out = append(f.out, '\\')
	}
	f.out = append(f.out, '"')
	shown := string(src[i : end+1])
	if len(shown) > 60 {
		shown = shown[:57] + "...\""
	}
	f.note(i, "", fmt.Sprintf("unescaped backslashes in %s, read as written (JSON writes each \\ as \\\\; a client refuses the file, or reads \\n as a newline)", shown), "")
	return end + 1
}

// rawControl makes the error for a control character written raw inside
// a string at src[j]: JSON (and JSON.parse) needs it escaped.
func (f *fixer) rawControl(j int) {
	if f.err != nil {
		return
	}
	what := fmt.Sprintf("a raw control character (U+%04X) inside a string (write \\u%04x)", f.src[j], f.src[j])
	switch f.src[j] {
	case '\n', '\r':
		what = "a raw newline inside a string (write \\n), or the string's closing quote is missing"
	case '\t':
		what = "a raw tab inside a string (write \\t)"
	}
	f.err, f.errOff, f.rawErr = &schema.Error{Msg: "not valid JSON: " + what}, j, true
}

// scanRaw scans the file for a control character written raw in a string
// (rawControl), and reports whether it found one.
func (f *fixer) scanRaw() bool {
	f.scan()
	return f.err != nil && f.rawErr
}

// winPath reports whether a string as written is a Windows path with a
// single backslash after its drive (C:\x) or leading dot (.\x, ..\x).
func winPath(raw []byte) bool {
	s := string(raw)
	var rest string
	switch {
	case len(s) >= 3 && (s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z') && s[1] == ':' && s[2] == '\\':
		rest = s[3:]
	case strings.HasPrefix(s, `.\`):
		rest = s[2:]
	case strings.HasPrefix(s, `..\`):
		rest = s[3:]
	default:
		return false
	}
	return rest == "" || rest[0] != '\\'
}

// endsValue reports whether, after blanks, src[i:] starts what follows a
// value: a comma, a closing bracket, a colon, a line end, or nothing.
func endsValue(src []byte, i int) bool {
	for ; i < len(src); i++ {
		switch src[i] {
		case ' ', '\t', '\r':
		case ',', ']', '}', ':', '\n':
			return true
		default:
			return false
		}
	}
	return true
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// noteIf is note on a tolerant read, nothing on a strict one.
func (t *tolerance) noteIf(pos position.Pos, format string, args ...any) {
	if t != nil {
		t.note(pos, format, args...)
	}
}

// unread adds a note about what is not read as it is written: an error
// (lint exits 1), whatever else the file holds.
func (t *tolerance) unread(pos position.Pos, msg string) {
	if t != nil {
		t.notes = append(t.notes, lint.Note{Pos: pos, Msg: msg, Unread: true})
	}
}

// hasUnread reports whether some part of the file is already an error.
func (t *tolerance) hasUnread() bool {
	for _, n := range t.notes {
		if n.Unread {
			return true
		}
	}
	return false
}

// shapesHint names the shapes lint reads servers from.
const shapesHint = "hint: lint reads \"mcpServers\" (Claude, Cursor, Windsurf, Cline, Gemini CLI), \"servers\" (VS Code's mcp.json), " +
	"\"mcp\" (opencode; VS Code settings' \"mcp\": {\"servers\"}), \"context_servers\" (Zed), [mcp_servers] (Codex's TOML), " +
	"extensions: (Goose's YAML), each a map of server name to entry"

// section is a servers section of a file as written: its key, where, and
// its value.
type section struct {
	key string
	pos position.Pos
	n   *node
}

// noServer says why a file read tolerantly gave no server (nil on a
// strict read, or when an entry of it is already an error): a section
// that is there and empty ({"mcpServers": {}}) is a valid config with no
// server, a note; a client's settings file with no servers section
// (settings.json, opencode.json, ~/.claude.json) too; anything else is
// not a config lint can use, an error at its first key (or 1:1).
func (t *tolerance) noServer(root *node, seen []section) error {
	if t == nil || t.hasUnread() {
		return nil
	}
	for _, s := range seen {
		switch {
		case s.n == nil:
		case s.key == "projects":
			t.note(s.pos, "no server in \"mcpServers\" nor in any project's: nothing to lint")
			return nil
		case s.n.kind == kObject && len(s.n.keys) == 0:
			t.note(s.pos, "%q is empty: a valid config with no server, nothing to lint", s.key)
			return nil
		case s.n.kind == kArray && len(s.n.elems) == 0:
			return &schema.Error{Pos: s.pos, Msg: fmt.Sprintf("%q is an empty list: no server to lint; %s", s.key, shapesHint)}
		}
	}
	pos := root.pos
	if pos.Line == 0 {
		pos.Line, pos.Col = 1, 1
	}
	if len(seen) == 0 && settingsFile(pos.File) {
		t.note(pos, "a client's settings file with no servers in it: nothing to lint")
		return nil
	}
	if root.kind == kObject && len(root.keys) > 0 {
		return &schema.Error{Pos: root.keyPos[0], Msg: fmt.Sprintf("no server to lint: %q is not a key lint reads servers from; %s", root.keys[0], shapesHint)}
	}
	return &schema.Error{Pos: pos, Msg: "no server to lint: the file holds no servers section; " + shapesHint}
}

// settingsFile reports whether file is a client's settings file, which
// holds servers beside other settings, and often none: Zed's, Gemini
// CLI's and VS Code's settings.json, opencode.json(c), ~/.claude.json.
func settingsFile(file string) bool {
	switch base := strings.ToLower(path.Base(filepath.ToSlash(file))); base {
	case "settings.json", ".claude.json", "opencode.json", "opencode.jsonc":
		return true
	}
	return false
}

// markDisabled marks the targets of a section whose entries the client
// does not start, in the clients documented to honour the key:
// "disabled": true (Cline, Roo Code, Windsurf), "enabled": false
// (opencode, Goose, Codex). Any other client starts the server whatever
// the key says, so lint lints it as live, and notes the key it ignores:
// a gate that one unread key turned off would be no gate.
func markDisabled(file string, ts []*readback.Target, section *node, tol *tolerance) {
	disabledKey, enabledKey := disableKeys(file)
	for _, t := range ts {
		var e *node
		switch section.kind {
		case kObject:
			e, _ = section.get(t.Server)
		case kArray:
			for _, el := range section.elems {
				if n, _ := el.get("name"); n != nil && n.str == t.Server {
					e = el
				}
			}
		}
		d, dpos := e.get("disabled")
		en, enpos := e.get("enabled")
		off := d != nil && d.kind == kOther && d.str == "true"
		offEn := en != nil && en.kind == kOther && en.str == "false"
		t.Disabled = off && disabledKey || offEn && enabledKey
		switch {
		case off && !disabledKey:
			tol.noteIf(dpos, "\"disabled\": true is not a key %s reads: it starts %s, which is linted as live", clientName(file), t.Server)
		case offEn && !enabledKey:
			tol.noteIf(enpos, "\"enabled\": false is not a key %s reads: it starts %s, which is linted as live", clientName(file), t.Server)
		}
	}
}

// disableKeys says which key turns an entry off in the file's client:
// "disabled": true, "enabled": false, or neither (the client starts every
// entry it reads).
func disableKeys(file string) (disabled, enabled bool) {
	s := strings.ToLower(filepath.ToSlash(file))
	base := path.Base(s)
	switch {
	case base == "cline_mcp_settings.json", base == "mcp_settings.json", strings.HasSuffix(s, ".roo/mcp.json"),
		strings.HasSuffix(s, "windsurf/mcp_config.json"):
		return true, false
	case base == "opencode.json", base == "opencode.jsonc", strings.HasSuffix(s, ".yaml"), strings.HasSuffix(s, ".yml"),
		strings.HasSuffix(s, ".toml"):
		return false, true
	}
	return false, false
}

// clientName names the client a file belongs to, for a message.
func clientName(file string) string {
	if ex := expansionOf(file); ex.name != "" {
		return ex.name
	}
	return "this client"
}

// duplicates notes each key written twice where a client reads servers: a
// servers section's key at the top level, a server's name in a section, a
// field of an entry. A client keeps only the last (JSON.parse, Go's and
// Rust's decoders, VS Code's reader), and so does lint: the first is
// shadowed, not live, and its servers are not linted.
func (t *tolerance) duplicates(root *node) {
	if t == nil || root == nil || root.kind != kObject {
		return
	}
	isSection := map[string]bool{}
	for _, k := range sectionKeys {
		isSection[k] = true
	}
	for _, i := range shadowed(root) {
		k := root.keys[i]
		if !isSection[k] {
			continue
		}
		_, last := root.get(k)
		msg := fmt.Sprintf("%q is written again at %d:%d: a client uses only the last (as JSON.parse does), so this one is shadowed and not linted", k, last.Line, last.Col)
		if v := root.vals[i]; v.kind == kObject && len(v.keys) > 0 {
			msg += "; its servers are not live: " + strings.Join(v.keys, ", ")
		}
		t.note(root.keyPos[i], "%s", msg)
	}
	var sections []*node
	for _, k := range []string{"mcpServers", "servers", "context_servers"} {
		n, _ := root.get(k)
		sections = append(sections, n)
	}
	mcp, _ := root.get("mcp")
	if opencodeMCP(mcp) {
		sections = append(sections, mcp)
	} else {
		n, _ := mcp.get("servers")
		sections = append(sections, n)
	}
	if projects, _ := root.get("projects"); projects != nil && projects.kind == kObject {
		for _, i := range projects.members() {
			n, _ := projects.vals[i].get("mcpServers")
			sections = append(sections, n)
		}
	}
	for _, s := range sections {
		if s == nil || s.kind != kObject {
			continue
		}
		for _, i := range shadowed(s) {
			_, last := s.get(s.keys[i])
			t.note(s.keyPos[i], "server %q is written again at %d:%d: a client uses only the last (as JSON.parse does), so this one is shadowed, not live, and not linted", s.keys[i], last.Line, last.Col)
		}
		for _, i := range s.members() {
			e := s.vals[i]
			if e.kind != kObject {
				continue
			}
			for _, j := range shadowed(e) {
				_, last := e.get(e.keys[j])
				t.note(e.keyPos[j], "%q of server %q is written again at %d:%d: a client uses only the last (as JSON.parse does), so this value is shadowed and not linted", e.keys[j], s.keys[i], last.Line, last.Col)
			}
		}
	}
}

// shadowed lists the members of an object written again after them.
func shadowed(n *node) []int {
	last := map[string]int{}
	for i, k := range n.keys {
		last[k] = i
	}
	var out []int
	for i, k := range n.keys {
		if last[k] != i {
			out = append(out, i)
		}
	}
	return out
}
