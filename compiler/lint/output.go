package lint

import (
	"fmt"
	"io"

	"github.com/mcpolicy/mcpolicy/internal/findings"
	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// Formats are the output formats Write knows: the printer's (package findings).
var Formats = findings.Formats

// SARIFCategory is lint's code scanning category (a SARIF run's
// automationDetails.id) unless --sarif-category names another.
const SARIFCategory = "mcpolicy/lint/"

// Write renders a report in a format: the findings through the one
// printer, and in text each server's summary line after them.
func Write(w io.Writer, rep Report, format string, version string) error {
	return WriteCategory(w, rep, format, version, SARIFCategory)
}

// WriteCategory is Write with the SARIF run's category (findings.Category).
func WriteCategory(w io.Writer, rep Report, format, version, category string) error {
	js := rep // JSON encodes the report: its messages' URLs hidden as the printer hides them
	js.Findings = make([]Finding, len(rep.Findings))
	for i, f := range rep.Findings {
		f.Message = findings.Redact(f.Message)
		js.Findings[i] = f
	}
	d := findings.Doc{Tool: "mcpolicy", Version: version, Category: category, Rules: sarifRules(rep), Findings: rep.Findings, JSON: js,
		EmptyMarkdown: "**mcpolicy lint:** no finding."}
	if err := findings.Write(w, d, format); err != nil || format != "text" {
		return err
	}
	if len(rep.Findings) > 0 {
		fmt.Fprintln(w)
	}
	for _, s := range rep.Servers {
		grants := fmt.Sprintf("%d grants", s.Grants)
		if s.Grants == 1 {
			grants = "1 grant"
		}
		if s.Grants < 0 {
			grants = "unconfined"
			if s.Confinement != "" {
				grants = s.Confinement
			}
		}
		if s.Exposure >= 0 {
			grants += fmt.Sprintf(", exposure %d", s.Exposure)
		}
		worst := s.Worst
		if worst == "" {
			worst = "clean"
		}
		fmt.Fprintf(w, "%s  %s (%s): %s, worst: %s\n", printable.String(s.Pos.String()), printable.String(s.Server), printable.String(s.File), grants, worst)
	}
	return nil
}

// sarifRules describes every rule, and PARSE when some finding is a note
// about a file as read.
func sarifRules(rep Report) []findings.Rule {
	rules := Registry()
	for _, f := range rep.Findings {
		if f.Rule == ParseID {
			rules = append(rules, &ParseRule)
			break
		}
	}
	for _, f := range rep.Findings {
		if f.Rule == ExposureID {
			rules = append(rules, &ExposureRule)
			break
		}
	}
	var out []findings.Rule
	for _, r := range rules {
		out = append(out, r.Describe())
	}
	return out
}

// Describe is the rule as the printer lists it.
func (r *Rule) Describe() findings.Rule {
	return findings.Rule{ID: r.ID, Name: r.Name, Level: r.Severity.String(), Purpose: r.Purpose, Rationale: r.Rationale, Remediation: r.Remediation}
}
