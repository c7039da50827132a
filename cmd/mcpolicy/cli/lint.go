package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/project/ruleexample"
	"github.com/spf13/cobra"
)

// lintOptions are lint's flags and argument.
type lintOptions struct {
	streams
	Args        []string // the policy, when given as the argument
	Policy      string
	PolicyNamed bool
	Clients     []string // client configs
	Manifests   []string // hand-written Kubernetes manifests
	Discover    bool     // also the project's own client configs
	NoPolicy    bool     // client configs only
	ThisMachine bool     // the configs' paths are this machine's
	Format      string
	FailOn      string
	MaxGrants   int
	MaxExposure int
	Category    string // --sarif-category
}

func newLintCmd() *cobra.Command {
	opts := &lintOptions{}
	cmd := &cobra.Command{
		Use:   "lint [PATH | -p POLICY] [--client FILE...] [--manifest FILE...]",
		Short: "Count each server's grants and flag what widens its confinement",
		Long: `lint runs the rule registry (mcpolicy rules) on the policies at PATH and on
MCP client configs (--client FILE, or --discover for the project's own
.mcp.json, .vscode/mcp.json, .cursor/mcp.json...), whose launch commands
(docker/podman run, bwrap, sandbox-exec) are read back into the same
model, and on hand-written Kubernetes manifests (--manifest FILE, or a
YAML manifest given to --client): each container of a Pod, or of a
workload's Pod template, is a server. Each finding is file:line:col: RULE
severity message; each server gets a summary line with its grant count
and worst severity.

A client config is judged as written, for whichever machine it was written
on (/Users/NAME, C:\Users\NAME, ~ and $HOME are homes wherever lint runs),
and nothing it names is read here, unless its paths are this machine's: a
config in the project (--discover), a project-scope one (.mcp.json,
.vscode/mcp.json...), or --this-machine. Only then are granted folders
looked into (symlinks, secret files) and env files and profiles read.

A client config that is not JSON as written is read anyway where it can
be (a fragment without its braces, # and // comments, trailing commas, one
missing closing brace, unescaped backslashes in Windows paths, VS Code's
flat "mcp.servers" key): each repair is a PARSE note (info) at its
file:line:col. A config that cannot be read, or an entry in it, is a PARSE
error at its position; the other configs and entries are still linted.

Exit codes: 0 nothing at or above --fail-on, 5 findings at or above it,
1 usage or I/O error, or a client config (or an entry in one) that could
not be read, or that yields no server (even with findings; an empty servers
section is a note), 2 an invalid policy. An entry the client does not start
("disabled": true, "enabled": false) is reported as disabled, its findings
at info.`,
		Example: `  mcpolicy lint
  mcpolicy lint --client ~/Library/Application\ Support/Claude/claude_desktop_config.json
  mcpolicy lint --manifest deploy/code-index.yaml
  mcpolicy lint --discover --format sarif > lint.sarif
  mcpolicy lint --format github --fail-on warning`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.streams, opts.Args, opts.PolicyNamed = streamsOf(cmd), args, policyNamed(cmd)
			return lintRun(opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Clients, "client", nil, "an MCP client config to lint (repeatable)")
	cmd.Flags().StringArrayVar(&opts.Manifests, "manifest", nil, "a hand-written Kubernetes manifest (Pod, Deployment...) to lint, each container as a server (repeatable; a YAML manifest given to --client is read as one too)")
	cmd.Flags().BoolVar(&opts.Discover, "discover", false, "also lint the project's own client configs (.mcp.json, .vscode/mcp.json, .cursor/mcp.json, ...)")
	cmd.Flags().BoolVar(&opts.NoPolicy, "no-policy", false, "lint only client configs, not PATH's policies")
	cmd.Flags().BoolVar(&opts.ThisMachine, "this-machine", false, "the client configs' paths are this machine's: place ~ in $HOME, look into granted folders, read env files and profiles")
	policyFlag(cmd, &opts.Policy)
	formatFlag(cmd, &opts.Format, lint.Formats...)
	cmd.Flags().StringVar(&opts.FailOn, "fail-on", "error", "exit 5 when a finding is at least: error, warning, info, or never")
	sarifCategoryFlag(cmd, &opts.Category, lint.SARIFCategory)
	cmd.Flags().IntVar(&opts.MaxGrants, "max-grants", 4, "GRANT_COUNT's limit per server")
	cmd.Flags().IntVar(&opts.MaxExposure, "max-exposure", 0, "an EXPOSURE_LIMIT error (exit 5) for each server whose exposure score is above this (docs/exposure.md); 0: no limit")
	return cmd
}

// lintRun lints the policies, client configs and manifests, prints the
// report and says by its exit code whether it found enough to fail.
func lintRun(opts *lintOptions) error {
	threshold := lint.Severity(-1)
	if opts.FailOn != "never" {
		s, err := lint.ParseSeverity(opts.FailOn)
		if err != nil {
			return &exitError{code: ExitError, err: fmt.Errorf("--fail-on: %v (or never)", err)}
		}
		threshold = s
	}
	in, err := opts.read()
	if err != nil {
		return err
	}
	if len(in.Targets) == 0 && len(in.Notes) == 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("nothing to lint: no policy and no client config")}
	}
	rep := lint.Run(in.Targets, lint.Options{MaxGrants: opts.MaxGrants, MaxExposure: opts.MaxExposure})
	rep.AddNotes(in.Notes)
	if err := lint.WriteCategory(opts.Out, rep, opts.Format, version(), opts.Category); err != nil {
		return &exitError{code: ExitError, err: err}
	}
	// A file that yields no server is an Unread PARSE error, unless it is a
	// valid config with none (an empty servers section: a PARSE note).
	if len(in.Unread) > 0 { // the lint is incomplete: not "clean", whatever it found
		return &exitError{code: ExitError, err: fmt.Errorf("not linted (see PARSE): %s", strings.Join(in.Unread, ", "))}
	}
	if worst, any := rep.Worst(); any && threshold >= 0 && worst >= threshold {
		return &errSilent{code: ExitFindings}
	}
	return nil
}

// read gathers the targets (project.ReadLint): the policies' servers,
// unless there are none to lint, then the client configs' and the
// manifests'.
func (opts *lintOptions) read() (*project.LintInput, error) {
	path, err := policyPath(opts.Args, opts.Policy, opts.PolicyNamed)
	if err != nil {
		return nil, err
	}
	// Client configs alone need no policy: without a PATH argument, a
	// folder holding none is not an error when --client is given.
	noPolicy := opts.NoPolicy
	if !noPolicy && len(opts.Args) == 0 && !opts.PolicyNamed && len(opts.Clients)+len(opts.Manifests) > 0 {
		if _, err := project.Discover(path); err != nil {
			noPolicy = true
		}
	}
	home, _ := os.UserHomeDir()
	o := project.LintOptions{Clients: opts.Clients, Manifests: opts.Manifests, Home: home, ThisMachine: opts.ThisMachine}
	if !noPolicy {
		if o.Project, o.Plans, err = compileProject(path); err != nil {
			return nil, err
		}
	}
	if opts.Discover {
		o.Discover = path
	}
	return project.ReadLint(o), nil
}

// rulesOptions are rules' flags.
type rulesOptions struct {
	streams
	Format string
	Kinds  bool // diff's change kinds instead
}

func newRulesCmd() *cobra.Command {
	opts := &rulesOptions{}
	cmd := &cobra.Command{
		Use:   "rules [--diff]",
		Short: "List the lint rules: ID, severity, what each flags (docs/rules.md is generated from it); --diff: diff's change kinds",
		Example: `  mcpolicy rules
  mcpolicy rules --format markdown > docs/rules.md
  mcpolicy rules --diff --format markdown > docs/diff-kinds.md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.streams = streamsOf(cmd)
			return rulesRun(opts)
		},
	}
	formatFlag(cmd, &opts.Format, "text", "json", "markdown")
	cmd.Flags().BoolVar(&opts.Kinds, "diff", false, "list diff's change kinds (the other half of the waive: namespace) instead")
	return cmd
}

// rulesRun lists the lint rules, or diff's change kinds, in a format.
func rulesRun(opts *rulesOptions) error {
	w, format := opts.Out, opts.Format
	if opts.Kinds {
		return writeKinds(w, format)
	}
	switch format {
	case "markdown":
		_, err := fmt.Fprint(w, lint.Markdown(ruleexample.Says))
		return err
	case "json":
		type row struct {
			ID          string `json:"id"`
			Name        string `json:"name"`
			Severity    string `json:"severity"`
			Purpose     string `json:"purpose"`
			Rationale   string `json:"rationale"`
			Remediation string `json:"remediation"`
		}
		var rows []row
		for _, r := range lint.Registry() {
			rows = append(rows, row{r.ID, r.Name, r.Severity.String(), r.Purpose, r.Rationale, r.Remediation})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "text":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSEVERITY\tFLAGS")
		for _, r := range lint.Registry() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Severity, r.Purpose)
		}
		return tw.Flush()
	}
	return &exitError{code: ExitError, err: fmt.Errorf("unknown format %q (text, json, markdown)", format)}
}

// writeKinds lists diff's change kinds, as rules lists the lint rules.
func writeKinds(w io.Writer, format string) error {
	switch format {
	case "markdown":
		_, err := fmt.Fprint(w, diff.Markdown())
		return err
	case "json":
		type row struct {
			ID       string `json:"id"`
			Verdict  string `json:"verdict"`
			Severity string `json:"severity"`
			Means    string `json:"means"`
			Old      string `json:"old"`
			New      string `json:"new"`
		}
		var rows []row
		for _, k := range diff.Registry() {
			rows = append(rows, row{k.ID, string(k.Verdict), k.Level(), k.Means, k.Old, k.New})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "text":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tVERDICT\tMEANS")
		for _, k := range diff.Registry() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", k.ID, k.Verdict, k.Means)
		}
		return tw.Flush()
	}
	return &exitError{code: ExitError, err: fmt.Errorf("unknown format %q (text, json, markdown)", format)}
}
