package lint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// ParseID is the rule name under which a report carries what the reader of
// a client config says about the file itself (Note): not a rule of the
// registry (nothing to select or waive), a note about how the file was read.
const ParseID = "PARSE"

// ParseRule describes PARSE for the formats that list rules (SARIF).
var ParseRule = Rule{
	ID: ParseID, Name: "parse", Severity: Info,
	Purpose:     "A client config is not valid JSON as written: lint repaired it to read it (a fragment, a # or // comment, a trailing comma, a missing closing brace, unescaped backslashes, the flat \"mcp.servers\" key), or could not read it (an error: the file, or the entry, is not linted).",
	Rationale:   "Published configs are often snippets; lint reads what it can rather than nothing, and says where it guessed. A client that reads plain JSON refuses such a file, or misreads it (\"C:\\new\" is C:, a newline, ew).",
	Remediation: "Fix the file where the note points: write it as the client reads it (plain JSON for most clients; comments and trailing commas only where the client reads JSONC: VS Code, Zed).",
}

// Note is what the reader of a client config says about the file at a
// position in it, as written: a repair it made to read it (Unread false,
// reported as info), or why it could not read the file, or one entry in it
// (Unread true, reported as an error: that part is not linted).
type Note struct {
	Pos    position.Pos
	Msg    string
	Unread bool
}

// AddNotes adds notes to the report as PARSE findings of no server, in the
// report's order (file, line, rule).
func (r *Report) AddNotes(notes []Note) {
	if len(notes) == 0 {
		return
	}
	for _, n := range notes {
		sev := Info
		if n.Unread {
			sev = Error
		}
		r.Findings = append(r.Findings, Finding{Rule: ParseID, Level: sev.String(), Pos: n.Pos, Message: printable.String(n.Msg)})
	}
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := r.Findings[i], r.Findings[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Rule < b.Rule
	})
}

// parseMarkdown documents PARSE after the rules in docs/rules.md.
func parseMarkdown(b *strings.Builder) {
	r := ParseRule
	fmt.Fprintf(b, "\n## %s\n\n`%s`: not a rule of the registry (nothing to select or waive) but what `lint` says about a client config as it reads it: **info** for a repair, **error** for what it could not read (`mcpolicy lint` then exits 1 once every other file is linted; docs/exit-codes.md). %s\n\n**Why.** %s\n\n**Fix.** %s\n",
		r.ID, r.Name, r.Purpose, r.Rationale, r.Remediation)
	r = ExposureRule
	fmt.Fprintf(b, "\n## %s\n\n`%s`: not a rule of the registry but the gate `lint --max-exposure N` sets: **error** (exit 5) for each server whose score is above N. %s\n\n**Why.** %s\n\n**Fix.** %s\n",
		r.ID, r.Name, r.Purpose, r.Rationale, r.Remediation)
}
