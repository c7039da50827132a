package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/owenrumney/go-sarif/v2/sarif"
)

// Formats are the output formats Write knows.
var Formats = []string{"text", "json", "github", "sarif"}

// Write renders a report in a format.
func Write(w io.Writer, rep Report, format string, version string) error {
	switch format {
	case "text":
		return writeText(w, rep)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "github":
		return writeGitHub(w, rep)
	case "sarif":
		return writeSARIF(w, rep, version)
	}
	return fmt.Errorf("unknown format %q (formats: %s)", format, strings.Join(Formats, ", "))
}

func writeText(w io.Writer, rep Report) error {
	for _, f := range rep.Findings {
		waived := ""
		if f.Waived != "" {
			waived = " (waived: " + f.Waived + ")"
		}
		fmt.Fprintf(w, "%s: %s %s %s%s\n", f.Pos, f.Rule, f.Level, f.Message, waived)
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
		worst := s.Worst
		if worst == "" {
			worst = "clean"
		}
		fmt.Fprintf(w, "%s  %s (%s): %s, worst: %s\n", s.Pos, s.Server, s.File, grants, worst)
	}
	return nil
}

// githubEscape escapes a workflow-command value (properties also escape
// ':' and ','); the message is formatted before escaping.
func githubEscape(s string, property bool) string {
	s = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
	if property {
		s = strings.NewReplacer(":", "%3A", ",", "%2C").Replace(s)
	}
	return s
}

func writeGitHub(w io.Writer, rep Report) error {
	level := map[string]string{"error": "error", "warning": "warning", "info": "notice"}
	for _, f := range rep.Findings {
		if f.Waived != "" {
			continue
		}
		at := fmt.Sprintf(",line=%d,col=%d", f.Pos.Line, f.Pos.Col)
		if f.Pos.Line == 0 { // a whole file (one that cannot be opened)
			at = ""
		}
		fmt.Fprintf(w, "::%s file=%s%s,title=%s::%s\n", level[f.Level],
			githubEscape(f.Pos.File, true), at, githubEscape(f.Rule, true), githubEscape(f.label(), false))
	}
	return nil
}

func writeSARIF(w io.Writer, rep Report, version string) error {
	report, err := sarif.New(sarif.Version210)
	if err != nil {
		return err
	}
	run := sarif.NewRunWithInformationURI("mcpolicy", "https://github.com/mcpolicy/mcpolicy")
	run.Tool.Driver.Version = &version
	rules := Registry()
	for _, f := range rep.Findings {
		if f.Rule == ParseID { // notes about a file as read: described once, when there are some
			rules = append(rules, &ParseRule)
			break
		}
	}
	for _, r := range rules {
		run.AddRule(r.ID).WithName(r.Name).WithShortDescription(sarif.NewMultiformatMessageString(r.Purpose)).
			WithFullDescription(sarif.NewMultiformatMessageString(r.Rationale)).
			WithHelp(sarif.NewMultiformatMessageString(r.Remediation)).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(sarifLevel(r.Severity.String())))
	}
	run.Results = []*sarif.Result{} // never null
	for _, f := range rep.Findings {
		res := sarif.NewRuleResult(f.Rule).WithLevel(sarifLevel(f.Level)).WithMessage(sarif.NewTextMessage(f.label()))
		region := sarif.NewRegion().WithStartLine(max(f.Pos.Line, 1)).WithStartColumn(max(f.Pos.Col, 1))
		res.AddLocation(sarif.NewLocationWithPhysicalLocation(
			sarif.NewPhysicalLocation().WithArtifactLocation(sarif.NewSimpleArtifactLocation(f.Pos.File)).WithRegion(region)))
		if f.Waived != "" { // (the library spells it WithJustifcation)
			res.WithSuppression([]*sarif.Suppression{sarif.NewSuppression("inSource").WithJustifcation(f.Waived)})
		}
		run.AddResult(res)
	}
	report.AddRun(run)
	var buf bytes.Buffer
	if err := report.PrettyWrite(&buf); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func sarifLevel(level string) string {
	if level == "info" {
		return "note"
	}
	return level
}
