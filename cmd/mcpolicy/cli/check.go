package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/internal/report"
	"github.com/mcpolicy/mcpolicy/internal/writereport"
	"github.com/mcpolicy/mcpolicy/project"
)

// writeFlag is check's finding for a flagged write of a recorded session.
const writeFlag = "WRITE_FLAGGED"

// checkRules describes, for SARIF, every ID a check can report.
func checkRules() []report.Rule {
	rules := []report.Rule{
		{ID: project.PinTampered, Name: "pin-tampered", Level: report.Error,
			Purpose:     "An entry's pinned artefact no longer has its digest, yet still names the policy's plan: something edited it after the build.",
			Remediation: "Find what wrote .mcpolicy/ (a server with write access?); rebuild, and review `mcpolicy client` again."},
		{ID: project.PinStale, Name: "pin-stale", Level: report.Error,
			Purpose:     "An entry's pinned artefact no longer has its digest because the policy changed since the entry was written: its next launch refuses to start.",
			Remediation: "Run `mcpolicy build` and `mcpolicy client` again, and review the diff."},
		{ID: project.EnvUnmet, Name: "env-unmet", Level: report.Error,
			Purpose:     "A variable the entry's plan grants reaches the server empty: the entry does not name it, the client does not pass it, and its env file lacks it.",
			Remediation: "Name the variable in the entry, or add it to the env file the entry names."},
		{ID: writeFlag, Name: "write-flagged", Level: report.Error,
			Purpose:     "A server session wrote, in a read-write grant, a file git does not track of a kind the host runs (bytecode, .pth, a shared object, an executable, a hook, a build file or .envrc below the project's top, node_modules/.bin, a symlink, setuid, a .git below the top, conftest.py, sitecustomize.py, anything in a python environment, a tracked path now of another type), or the write report could not see everything.",
			Remediation: "Read the file before anything on the host runs in the project; remove it, or accept the session (`mcpolicy sessions --accept ID`)."},
		{ID: project.ArtefactTampered, Name: "artefact-tampered", Level: report.Error,
			Purpose:     "A file in the output folder differs from what its own plan builds, the policy unchanged: it was edited after the build, and an entry that pins its new digest runs the edit (as `build --check` reports it).",
			Remediation: "Find what wrote .mcpolicy/ (a server with write access?); rebuild, and write the entries again with `mcpolicy client`."},
		{ID: project.ArtefactStale, Name: "artefact-stale", Level: report.Error,
			Purpose:     "The output folder is not what the policy builds: a file is missing, stale or extra (as `build --check` reports it).",
			Remediation: "Run `mcpolicy build`, then `mcpolicy client` again, and review the diff."},
		{ID: project.Unmanaged, Name: "unmanaged-entry", Level: report.Error,
			Purpose:     "An entry named for a server of the policy does not start it the way mcpolicy writes entries (a hand-written bwrap or docker command, a remote URL, an engine entry pinning no artefact): nothing holds it to the policy.",
			Remediation: "Write the entry again with `mcpolicy client TARGET --write --force`, or rename it if it is another server."},
	}
	for _, k := range diff.Registry() {
		rules = append(rules, k.Describe())
	}
	return append(rules, lint.ParseRule.Describe())
}

// checkReport is what check found: the findings, and the line text prints
// for each (check's own layout, `entry "NAME"`, kept as it was).
type checkReport struct {
	findings []report.Finding
	lines    []string
}

// add records a finding and its text line, the line spelt for a
// terminal (spellText): an entry's drift names what a client file, or a
// server that wrote one, chose. The printer spells the finding (report).
func (r *checkReport) add(f report.Finding, line string) {
	r.findings = append(r.findings, f)
	r.lines = append(r.lines, spellText(line))
}

// write prints the report in a format; text ends with "no drift" when
// clean is set.
func (r *checkReport) write(w io.Writer, format string, clean bool) error {
	if format == "text" {
		for _, l := range r.lines {
			fmt.Fprintln(w, l)
		}
		if clean {
			fmt.Fprintln(w, "no drift")
		}
		return nil
	}
	return report.Write(w, report.Doc{Tool: "mcpolicy", Version: version(), Rules: checkRules(), Findings: r.findings,
		EmptyMarkdown: "**mcpolicy check:** no drift."}, format)
}

// writes adds the write report's pending lines of the project's recorded
// sessions (writereport), says whether there was any, and how many
// sessions it read from where (a client with another XDG_STATE_HOME
// records elsewhere: an empty report must not pass for a clean one).
func (r *checkReport) writes(proj *project.Project, plans []*compiler.Plan) (bool, string, error) {
	state := writereport.StateDir(os.Getenv)
	if state == "" {
		return false, "write report: no HOME and no XDG_STATE_HOME: no session is read", nil
	}
	home, _ := os.UserHomeDir()
	reps, err := proj.WriteReports(state, plans, home, 0)
	if err != nil {
		return false, "", fmt.Errorf("the write report: %v", err)
	}
	found := false
	for _, w := range reps {
		for _, p := range w.Problems() {
			r.findings = append(r.findings, report.Finding{Rule: writeFlag, Level: report.Error, Server: w.Session.Server, Message: p})
			r.lines = append(r.lines, p) // already spelt
			found = true
		}
	}
	return found, writereport.Summary(len(reps), state, proj.Root), nil
}
