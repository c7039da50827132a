package prove

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The red team's strings: what a server can write (a tools/list error,
// a tool result, a parameter description, stderr) or name (a file in a
// read-write grant, which firstFile may pick as a row's target). Each
// tries to end a table row (\r is a line break in CommonMark, as \n),
// forge one, open an HTML comment that hides the rows after it, open a
// code span or emphasis, or drive a terminal (ESC, OSC, BEL, bidi).
var hostileStrings = map[string]string{
	"file name": "a`\r| forged | `x` | denied | stop | **EACCES** | ok | ✅ |\r\r<!-- \x1b]0;T\a",
	"lone CR":   "x\r| read forged | `/f` | denied | | **EACCES** | visible | ✅ |",
	"CRLF":      "x\r\n\r\n<!--",
	"newline":   "x\n| forged | row |\n\n<!-- hidden",
	"comment":   "<!-- the rest of the page",
	"html":      "<details><summary>ok</summary>",
	"entity":    "&#x202e;&lt;!-- &amp;",
	"backticks": "``` ` `` ````",
	"code":      "`| ✅ |`",
	"emphasis":  "**_~~[link](javascript:x)![i](x)",
	"escape":    `\|\\|\` + "\\",
	"math":      "$\\color{green}{\\text{✅ agrees}}$",
	"osc":       "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\\x1b[2J\x1b[1;1H",
	"bidi":      "\u202ecod.exe\u2066\u2069\u200b\u200e\ufeff",
	"c1":        "\u009b2J\u0085\x7f\x00",
	"separator": "a\u2028b\u2029c",
}

// hostileReport is a report with s in every field the server or a grant
// can set, and two real disagreements after them: a row the kernel
// answered against the plan, and the server's call.
func hostileReport(s string) *Report {
	row := func(what, target string) Row {
		return Row{What: what, Op: "read", Target: target, Expect: "denied", Result: "ENOENT", Meaning: Meaning("ENOENT"), Agrees: true, WhyAgrees: true,
			Stop: []string{"no-grant: " + s}, Reproduce: "cat -- '" + target + "'"}
	}
	granted := row("the granted rw mount /workspace/data", "/workspace/data/"+s)
	granted.Expect, granted.Result, granted.Meaning, granted.Stop, granted.Grant = "allowed", "ok", "allowed", nil, []string{"rw mount " + s + " (mcpolicy.cue:9:3)"}
	tool := row("--tool "+s+"'s "+s+" (a read)", "/workspace/data/"+s)
	skipped := Row{What: "beside the project, in its parent folder", Op: "list", Target: s, Expect: "denied", Skipped: "a grant holds " + s, Agrees: true, WhyAgrees: true}
	shown := Row{What: "the root folder", Op: "list", Target: "/", Result: "ok", Meaning: "allowed", Agrees: true, Why: s, WhySays: s, WhyAgrees: true}
	whyOff := row("credentials", "/home/you/"+s)
	whyOff.WhyAgrees, whyOff.WhyNote = false, "why says readable: "+s
	real := Row{What: "shadow passwords", Op: "read", Target: "/etc/shadow", Expect: "denied", Result: "ok", Meaning: "allowed", Agrees: false, WhyAgrees: true, Stop: []string{"no-grant: not in the sandbox"}}
	return &Report{
		Server: "fs", PolicyFile: "mcpolicy.cue", Plan: "plan.json", Kernel: "6.8.0", LandlockABI: 4,
		Call: &CallPlan{
			Tool:   ToolInfo{Name: s, Params: map[string]string{s: s}},
			Listed: "tools/list: " + s,
			Args:   []CallArg{{Key: s, Value: s, Use: UseRead, Why: s, Host: "/p/" + s, Target: "/workspace/" + s, Expect: "denied", Reason: s}},
			Expect: "denied",
		},
		Backends: []BackendReport{{
			Backend: "bwrap", Version: "bubblewrap 0.9.0", Probe: "bound at /mcpolicy-probe",
			Rows: []Row{granted, tool, skipped, shown, whyOff, real},
			Server: &ServerRow{
				Tool: s, Args: map[string]any{s: s, "path": "/workspace/" + s}, Expect: "denied", IsError: true, Text: s,
				Errno: "", Refused: s, Probe: "ENOENT", Same: true, Agrees: false, Note: "the host saw " + s,
				Host: []string{"created /p/" + s}, Restored: []string{"removed /p/" + s}, NotRestored: []string{s},
				Stderr: "started\n" + s + "\n```\n~~~\n````````\n   ```\n``` sh\n" + s,
			},
		}, {Backend: "docker", Skipped: "docker: " + s}},
	}
}

// The two verdicts hostileReport's strings must not hide.
const (
	realRow     = "| read shadow passwords | `/etc/shadow` | denied | stop: no-grant | **ok** | allowed | ❌ **disagrees** |"
	realVerdict = "❌ **Disagrees with the plan** (expected denied): the host saw "
)

// mdLines splits markdown as CommonMark does: \n, \r\n and a lone \r
// each end a line.
func mdLines(md string) []string { return regexp.MustCompile(`\r\n|\r|\n`).Split(md, -1) }

var fenceLine = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")

// mdBlocks reads md's lines into what a reviewer sees: each line outside
// a fenced block, and each fenced block's content lines. It knows the
// one rule that matters here: a fence closes at a line of the same
// character, at least as long, and nothing else.
type mdBlock struct {
	fence bool
	info  string // the fence's info string
	open  int    // the line the block starts on
	lines []string
}

func mdBlocks(md string) []mdBlock {
	var out []mdBlock
	var cur *mdBlock
	var fence string
	for i, l := range mdLines(md) {
		m := fenceLine.FindStringSubmatch(l)
		switch {
		case cur != nil && m != nil && m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(m[2]) == "":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		case m != nil && !(m[1][0] == '`' && strings.Contains(m[2], "`")):
			cur, fence = &mdBlock{fence: true, info: strings.TrimSpace(m[2]), open: i}, m[1]
		default:
			out = append(out, mdBlock{lines: []string{l}, open: i})
		}
	}
	if cur != nil {
		out = append(out, *cur) // an unclosed fence runs to the end
	}
	return out
}

// backslashEscapes is CommonMark's ASCII punctuation: what a backslash
// escapes. (The test's own copy: it also runs against the old report.go.)
const backslashEscapes = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// visible is a line's text outside code spans, backslash-escaped
// characters dropped: where HTML, a comment or emphasis could open.
func visible(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		switch {
		case line[i] == '\\' && i+1 < len(line) && strings.IndexByte(backslashEscapes, line[i+1]) >= 0:
			i += 2
		case line[i] == '`':
			n := 0
			for i+n < len(line) && line[i+n] == '`' {
				n++
			}
			end := -1
			for j := i + n; j < len(line); {
				if line[j] != '`' {
					j++
					continue
				}
				m := 0
				for j+m < len(line) && line[j+m] == '`' {
					m++
				}
				if m == n {
					end = j + m
					break
				}
				j += m
			}
			if end < 0 {
				b.WriteString(line[i : i+n]) // no closer: literal backticks
				i += n
			} else {
				i = end
			}
		default:
			b.WriteByte(line[i])
			i++
		}
	}
	return b.String()
}

// cells counts a table row's cells as GFM splits them: at each | not
// escaped by a backslash.
func cells(line string) int { return strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") - 1 }

// shape is md's structure: per table, its header's cells and its rows;
// each fenced block, with its line count when it is the commands to
// reproduce (stderr's lines are the server's: TestRedteamReportStderrFence
// counts them); and the number of other lines.
func shape(t *testing.T, md string) string {
	t.Helper()
	var out []string
	table, rows, width := false, 0, 0
	end := func() {
		if table {
			out = append(out, fmt.Sprintf("table of %d cells, %d rows", width, rows))
		}
		table = false
	}
	for _, bl := range mdBlocks(md) {
		if bl.fence {
			end()
			if bl.info == "sh" {
				out = append(out, fmt.Sprintf("commands, %d lines", len(bl.lines)))
			} else {
				out = append(out, "fence")
			}
			continue
		}
		l := bl.lines[0]
		switch {
		case strings.HasPrefix(l, "|") && !table:
			table, rows, width = true, 0, cells(l)
		case strings.HasPrefix(l, "|"):
			rows++
			if c := cells(l); c != width {
				t.Errorf("a row of %d cells in a table of %d: %q", c, width, l)
			}
		default:
			end()
			out = append(out, "line")
		}
	}
	end()
	return strings.Join(out, "\n")
}

// TestRedteamReportRows: each hostile string, in every field the server
// or a grant sets, leaves the report with the same tables, the same
// number of rows each, every row with its header's cells, the same
// fenced blocks, one command per line, and the same lines as a report of
// ordinary strings.
func TestRedteamReportRows(t *testing.T) {
	want := shape(t, string(hostileReport("ordinary").Markdown()))
	for name, s := range hostileStrings {
		md := string(hostileReport(s).Markdown())
		if got := shape(t, md); got != want {
			t.Errorf("%s: the report's shape changed:\n%s\nwant:\n%s\n\n%s", name, got, want, md)
		}
	}
}

// entity is what prove writes for & and <.
var entity = regexp.MustCompile(`&(amp|lt);`)

// TestRedteamReportVerdictShows: the real disagreements stay outside any
// HTML comment or tag: nothing outside a code span or a fenced block
// holds a < (nor a character reference other than prove's own &amp; and
// &lt;, which could spell one, or a bidi override), and the kernel's ❌ row and the server's ❌ verdict are each
// a line of their own, outside every fence.
func TestRedteamReportVerdictShows(t *testing.T) {
	for name, s := range hostileStrings {
		md := string(hostileReport(s).Markdown())
		row, verdict := false, false
		for _, bl := range mdBlocks(md) {
			if bl.fence {
				continue
			}
			l := bl.lines[0]
			v := visible(l)
			if strings.Contains(v, "<") {
				t.Errorf("%s: line %d could open HTML or a comment: %q", name, bl.open+1, l)
			}
			if strings.Contains(entity.ReplaceAllString(v, ""), "&") {
				t.Errorf("%s: line %d holds a character reference the server wrote: %q", name, bl.open+1, l)
			}
			row = row || l == realRow
			verdict = verdict || strings.HasPrefix(l, "Both refused: ") && strings.Contains(l, realVerdict)
		}
		if !row || !verdict {
			t.Errorf("%s: the real disagreement is not shown (row %v, verdict %v):\n%s", name, row, verdict, md)
		}
	}
}

// TestRedteamReportNoControls: no control, bidi or other invisible
// character is written raw; newlines only between lines, tabs only in a
// fenced block.
func TestRedteamReportNoControls(t *testing.T) {
	for name, s := range hostileStrings {
		md := string(hostileReport(s).Markdown())
	lines:
		for _, bl := range mdBlocks(md) {
			for _, l := range bl.lines {
				for _, r := range l {
					if r == '\t' && bl.fence {
						continue
					}
					if !unicode.IsPrint(r) || r == unicode.ReplacementChar || unicode.Is(unicode.Bidi_Control, r) {
						t.Errorf("%s: the report holds %U raw: %q", name, r, l)
						break lines
					}
				}
			}
		}
		if strings.ContainsAny(md, "\r\x1b\a\u202e\u2066\u2028") {
			t.Errorf("%s: the report holds a raw control character:\n%q", name, md)
		}
	}
}

// TestRedteamReportStderrFence: a stderr line of ``` (or ~~~, a longer
// fence, an indented one) does not end the block: every line the server
// wrote is inside it, and the text after it is the report's.
func TestRedteamReportStderrFence(t *testing.T) {
	for name, s := range hostileStrings {
		rep := hostileReport(s)
		md := string(rep.Markdown())
		stderr := strings.Count(rep.Backends[0].Server.Stderr, "\n") + 1
		blocks := mdBlocks(md)
		found := false
		for i, bl := range blocks {
			if bl.fence || bl.lines[0] != "The server's stderr (last lines):" {
				continue
			}
			found = true
			if i+3 >= len(blocks) || !blocks[i+2].fence {
				t.Fatalf("%s: no fenced block after the stderr heading:\n%s", name, md)
			}
			if got := len(blocks[i+2].lines); got != stderr {
				t.Errorf("%s: the stderr block holds %d lines, the server wrote %d:\n%s", name, got, stderr, md)
			}
			if after := blocks[i+3]; after.fence || after.lines[0] != "" || blocks[i+4].lines[0] != "To reproduce a row, paste its command:" {
				t.Errorf("%s: the stderr block is not followed by the report's text:\n%s", name, md)
			}
		}
		if !found {
			t.Errorf("%s: no stderr block:\n%s", name, md)
		}
	}
}

// TestToolTextIsBounded: what a server's tools/list says of a tool is
// kept cut short, and so is the number of its parameters (a red team's
// 1 MB description and 2.3 MB parameter description made a 26 MB
// evidence.json and a 9 MB evidence.md).
func TestToolTextIsBounded(t *testing.T) {
	props := map[string]any{}
	for i := range 500 {
		props[fmt.Sprintf("p%03d", i)] = map[string]any{"description": strings.Repeat("\x01", 2<<20)}
	}
	props[strings.Repeat("k", 1<<20)] = map[string]any{"description": "x"}
	ti := toolInfo("t", strings.Repeat("d", 1<<20), map[string]any{"properties": props}, false, false)
	total := len(ti.Description)
	for k, v := range ti.Params {
		total += len(k) + len(v)
	}
	if len(ti.Params) > maxParams || total > maxToolText+maxParams*(maxParamName+maxParamText+64) {
		t.Errorf("%d parameters, %d bytes kept of what the server said", len(ti.Params), total)
	}
}
