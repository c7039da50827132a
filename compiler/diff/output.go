package diff

import (
	"io"

	"github.com/mcpolicy/mcpolicy/internal/findings"
)

// Formats are the output formats Write knows: the printer's (package findings).
var Formats = findings.Formats

// Finding is the change as every pass reports: its kind is the rule, an
// unwaived-or-not widening an error, a narrowing a note.
func (c Change) Finding() findings.Finding {
	level := findings.Info
	if k := Lookup(c.Kind); k != nil {
		level = k.Level()
	}
	return findings.Finding{Rule: c.Kind, Level: level, Server: c.Server, Pos: c.Pos, Message: c.What,
		Waived: c.Waived, Verdict: string(c.Verdict), Against: c.Against}
}

// Write renders changes through the one printer; color marks verdicts with
// ANSI colours (text only, for a terminal). JSON keeps the changes' own
// shape (kind, what), which tools already read.
func Write(w io.Writer, cs []Change, format string, color bool, version string) error {
	return WriteCategory(w, cs, format, color, version, SARIFCategory)
}

// SARIFCategory is diff's code scanning category (a SARIF run's
// automationDetails.id) unless --sarif-category names another.
const SARIFCategory = "mcpolicy/diff/"

// WriteCategory is Write with the SARIF run's category (findings.Category).
func WriteCategory(w io.Writer, cs []Change, format string, color bool, version, category string) error {
	if cs == nil {
		cs = []Change{}
	}
	d := findings.Doc{Tool: "mcpolicy", Version: version, Category: category, JSON: cs, Color: color,
		Empty: "no grant changed", EmptyMarkdown: "**mcpolicy diff:** no grant changed."}
	for _, k := range registry {
		d.Rules = append(d.Rules, k.Describe())
	}
	for _, c := range cs {
		d.Findings = append(d.Findings, c.Finding())
	}
	return findings.Write(w, d, format)
}

// Widening reports whether any change widens without a waiver.
func Widening(cs []Change) bool {
	for _, c := range cs {
		if c.Verdict == Widened && c.Waived == "" {
			return true
		}
	}
	return false
}
