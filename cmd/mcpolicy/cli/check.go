package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/internal/findings"
	"github.com/mcpolicy/mcpolicy/internal/writereport"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/spf13/cobra"
)

// writeFlag is check's finding for a flagged write of a recorded session.
const writeFlag = "WRITE_FLAGGED"

// checkOptions are check's flags.
type checkOptions struct {
	streams
	Policy  string   // -p/--policy
	Clients []string // --client: these client files (none: the project's and the user's)
	Format  string
	// Category is --sarif-category's value.
	Category string
}

func newCheckCmd() *cobra.Command {
	opts := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check [-p POLICY] [--client FILE...] [--format F]",
		Short: "Report artefacts and client entries that drifted from what the policy compiles to",
		Long: `check compares what runs with what the policy compiles to. The output
folder is compared with what a build writes, as build --check does: an
artefact edited after the build is TAMPERED (exit 8) even when an entry
pins its new digest; a missing, stale or extra file is drift (exit 6).
Then each client file is read (default: the project's own, as lint
--discover finds them, and every client's user-scope file — ~/.claude.json,
Claude Desktop's, ~/.cursor/mcp.json, VS Code's, ~/.codex/config.toml... —
for the entries that apply to this project): the launch commands of the
entries mcpolicy manages are read back into plans and compared with the
policy's, grant by grant: a hand-widened mount is reported as widened.
Exit 6 on drift. An entry named for a server of the policy that mcpolicy
does not recognise as its own (a hand-written bwrap or docker command in
its place) is reported as UNMANAGED_ENTRY (exit 6): nothing holds it to
the policy, and so is an egress entry of the earlier form (mcpolicy run
--policy ... --plan HASH, which compiled the policy at every start). An
entry that pins an artefact (mcpolicy-launch --sha256) or a plan (mcpolicy
run --sha256) whose file no longer has that digest is reported: as TAMPERED (exit 8) when the
file still names the policy's plan (something edited it after the build),
as stale (exit 6) when the policy changed since the entry was written. A
client file that cannot be read is a PARSE error at its position, and the
next is checked; the check is then incomplete: exit 1, as lint's.
Then the write report (see mcpolicy sessions): a file a recorded session
of the project wrote in a read-write grant, untracked by git, of a kind
the host runs (bytecode, .pth, shared object, executable, hook, ...) and
still there, in a session not accepted, is listed with its session and
server: exit 5 (8, 1 and 6 outrank it). stderr says how many sessions
were read, and from which folder; records in a folder that is not yours,
or that group or others may write, are refused (exit 1).

--format github or sarif reports each drifted grant under its diff kind
(docs/diff-kinds.md), a pin as PIN_TAMPERED or PIN_STALE, the output
folder as ARTEFACT_TAMPERED or ARTEFACT_STALE, an entry that is not
mcpolicy's as UNMANAGED_ENTRY, an unmet env grant as ENV_UNMET, a flagged
write as WRITE_FLAGGED, an unread file as PARSE.`,
		Example: `  mcpolicy check
  mcpolicy check --client ~/.cursor/mcp.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.streams = streamsOf(cmd)
			return checkRun(opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringArrayVar(&opts.Clients, "client", nil, "a client file to check (repeatable)")
	formatFlag(cmd, &opts.Format, findings.Formats...)
	sarifCategoryFlag(cmd, &opts.Category, "mcpolicy/check/")
	return cmd
}

// checkRun compares the output folder and the client entries with what
// the policy compiles to, then reads the write report.
func checkRun(opts *checkOptions) error {
	if err := findings.Check(opts.Format); err != nil {
		return &exitError{code: ExitError, err: err}
	}
	proj, plans, err := compileProject(opts.Policy)
	if err != nil {
		if proj != nil {
			return opts.writesThen(proj, err)
		}
		return err
	}
	home, _ := os.UserHomeDir()
	res, err := project.CheckClients(project.CheckOptions{Project: proj, Plans: plans, Clients: opts.Clients,
		Home: home, ConfigHome: os.Getenv("XDG_CONFIG_HOME")})
	if err != nil {
		return opts.writesThen(proj, err)
	}
	rep := checkReport{category: opts.Category}
	for i, f := range res.Findings {
		rep.add(f, res.Lines[i])
	}
	written, summary, err := rep.writes(proj, plans)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	fmt.Fprintln(opts.Err, summary)
	// Started by root, a server runs as its plan's user (a launcher run as
	// root, rootful docker): a read-write grant that user cannot write is
	// one in name only, which the client shows as a failed tool call.
	noteUnwritable(opts.Err, plans, proj.Root)
	hostNotes(opts.Err, plans)
	clean := ""
	if !res.Drift && len(res.Unread) == 0 && !written {
		clean = checkedNothing(res, proj.Root, home)
	}
	if err := rep.write(opts.Out, opts.Format, clean); err != nil {
		return &exitError{code: ExitError, err: err}
	}
	return opts.exit(res, written)
}

// writesThen shows what the project's sessions wrote, then returns err: a
// server can make its policy stop compiling (a protected name created in
// a Landlock grant), and what it wrote is still shown.
func (opts *checkOptions) writesThen(proj *project.Project, err error) error {
	rep := checkReport{category: opts.Category}
	_, summary, werr := rep.writes(proj, nil)
	if werr != nil {
		summary = werr.Error()
	}
	rep.write(opts.Out, opts.Format, "")
	fmt.Fprintln(opts.Err, summary)
	return err
}

// exit is check's exit code: a tampered artefact is the one finding an
// unread file cannot outrank; otherwise the check is incomplete and, as
// lint's, 1 wins; then drift, then a flagged write.
func (opts *checkOptions) exit(res *project.CheckResult, written bool) error {
	unread := res.Unread
	if len(unread) > 0 && res.Tamper {
		fmt.Fprintf(opts.Err, "not checked (see PARSE): %s\n", strings.Join(unread, ", "))
	}
	if res.Tamper {
		return &errSilent{code: ExitTampered}
	}
	if len(unread) > 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("not checked (see PARSE): %s", strings.Join(unread, ", "))}
	}
	if res.Drift {
		return &errSilent{code: ExitWidened}
	}
	if written {
		return &errSilent{code: ExitFindings}
	}
	return nil
}

// checkRules describes, for SARIF, every ID a check can report.
func checkRules() []findings.Rule {
	rules := []findings.Rule{
		{ID: project.PinTampered, Name: "pin-tampered", Level: findings.Error,
			Purpose:     "An entry's pinned artefact no longer has its digest, yet still names the policy's plan: something edited it after the build.",
			Remediation: "Find what wrote .mcpolicy/ (a server with write access?); rebuild, and review `mcpolicy client` again."},
		{ID: project.PinStale, Name: "pin-stale", Level: findings.Error,
			Purpose:     "An entry's pinned artefact no longer has its digest because the policy changed since the entry was written: its next launch refuses to start.",
			Remediation: "Run `mcpolicy build` and `mcpolicy client` again, and review the diff."},
		{ID: project.EnvUnmet, Name: "env-unmet", Level: findings.Error,
			Purpose:     "A variable the entry's plan grants reaches the server empty: the entry does not name it, the client does not pass it, and its env file lacks it.",
			Remediation: "Name the variable in the entry, or add it to the env file the entry names."},
		{ID: writeFlag, Name: "write-flagged", Level: findings.Error,
			Purpose:     "A server session wrote, in a read-write grant, a file git does not track of a kind the host runs (bytecode, .pth, a shared object, an executable, a hook, a build file or .envrc below the project's top, node_modules/.bin, a symlink, setuid, a .git below the top, conftest.py, sitecustomize.py, anything in a python environment, a tracked path now of another type), or the write report could not see everything.",
			Remediation: "Read the file before anything on the host runs in the project; remove it, or accept the session (`mcpolicy sessions --accept ID`)."},
		{ID: project.ArtefactTampered, Name: "artefact-tampered", Level: findings.Error,
			Purpose:     "A file in the output folder differs from what its own plan builds, the policy unchanged: it was edited after the build, and an entry that pins its new digest runs the edit (as `build --check` reports it).",
			Remediation: "Find what wrote .mcpolicy/ (a server with write access?); rebuild, and write the entries again with `mcpolicy client`."},
		{ID: project.ArtefactStale, Name: "artefact-stale", Level: findings.Error,
			Purpose:     "The output folder is not what the policy builds: a file is missing, stale or extra (as `build --check` reports it).",
			Remediation: "Run `mcpolicy build`, then `mcpolicy client` again, and review the diff."},
		{ID: project.Unmanaged, Name: "unmanaged-entry", Level: findings.Error,
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
	findings []findings.Finding
	lines    []string
	category string // the SARIF run's
}

// add records a finding and its text line, the line spelt for a
// terminal (spellText): an entry's drift names what a client file, or a
// server that wrote one, chose. The printer spells the finding (report).
func (r *checkReport) add(f findings.Finding, line string) {
	r.findings = append(r.findings, f)
	r.lines = append(r.lines, spellText(line))
}

// write prints the report in a format; text ends with clean, what a
// check that found nothing says ("no drift"), when it is set.
func (r *checkReport) write(w io.Writer, format string, clean string) error {
	if format == "text" {
		for _, l := range r.lines {
			fmt.Fprintln(w, l)
		}
		if clean != "" {
			fmt.Fprintln(w, clean)
		}
		return nil
	}
	if clean == "" {
		clean = "no drift"
	}
	return findings.Write(w, findings.Doc{Tool: "mcpolicy", Version: version(), Category: r.category, Rules: checkRules(), Findings: r.findings,
		EmptyMarkdown: "**mcpolicy check:** " + clean + "."}, format)
}

// checkedNothing is what a clean check says: "no drift" when it compared
// a client file; else that it found none, and where it looked (with
// whether the output folder matched), so that a check of nothing does not
// pass for a clean one.
func checkedNothing(res *project.CheckResult, root, home string) string {
	if len(res.Clients) > 0 {
		return "no drift"
	}
	var proj, user []string
	for _, f := range res.Looked {
		if rel, err := filepath.Rel(root, f); err == nil && filepath.IsLocal(rel) {
			proj = append(proj, filepath.ToSlash(rel))
		} else if rel, err := filepath.Rel(home, f); home != "" && err == nil && filepath.IsLocal(rel) {
			user = append(user, "~/"+filepath.ToSlash(rel))
		} else {
			user = append(user, f)
		}
	}
	where := strings.Join(user, ", ")
	if len(proj) > 0 {
		where = spell(root) + ": " + strings.Join(proj, ", ") + "; " + where
	}
	msg := "no client config found to check (looked in: " + strings.TrimSuffix(where, "; ") + ")"
	if res.Built {
		msg = "the output folder matches the policy; " + msg
	}
	return msg
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
			r.findings = append(r.findings, findings.Finding{Rule: writeFlag, Level: findings.Error, Server: w.Session.Server, Message: p})
			r.lines = append(r.lines, p) // already spelt
			found = true
		}
	}
	return found, writereport.Summary(len(reps), state, proj.Root), nil
}
