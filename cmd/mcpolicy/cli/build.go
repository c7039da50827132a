package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/findings"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/seccomp"
	"github.com/spf13/cobra"
)

// compileProject discovers and compiles the policies at path.
func compileProject(path string) (*project.Project, []*compiler.Plan, error) {
	proj, err := project.Discover(path)
	if err != nil {
		return nil, nil, err
	}
	home, _ := os.UserHomeDir()
	plans, err := proj.Compile(home)
	return proj, plans, err
}

// writable are the host folders a server of the project may have written
// (project.Writable), on this machine.
func writable(proj *project.Project, plans []*compiler.Plan) []string {
	home, _ := os.UserHomeDir()
	return proj.Writable(plans, home)
}

// compileServer compiles the project at path and returns one server's plan.
func compileServer(path, server string) (*project.Project, *compiler.Plan, error) {
	proj, plan, _, err := compileServerOf(path, server)
	return proj, plan, err
}

// compileServerOf is compileServer, with every plan of the project too.
func compileServerOf(path, server string) (*project.Project, *compiler.Plan, []*compiler.Plan, error) {
	proj, plans, err := compileProject(path)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, p := range plans {
		if p.Server == server {
			return proj, p, plans, nil
		}
	}
	return nil, nil, nil, &exitError{code: ExitError, err: fmt.Errorf("no server %q in %s (servers: %s)", server, path, names(plans))}
}

// buildOptions are build's flags and argument.
type buildOptions struct {
	streams
	Args        []string // the policy, when given as the argument
	Policy      string
	PolicyNamed bool   // -p was given: the argument may not name another
	OutDir      string // --out; default PATH/.mcpolicy
	Check       bool   // write nothing: report drift
	Format      string
}

func newBuildCmd() *cobra.Command {
	opts := &buildOptions{}
	cmd := &cobra.Command{
		Use:   "build [PATH | -p POLICY]",
		Short: "Compile every policy under PATH into the output folder",
		Long: `build compiles the policies at PATH (a policy file, or a folder holding
mcpolicy.cue/.json/.yaml/.yml/.jsonnet and/or files under mcpolicy.d/) and
writes one reviewable file per server per backend into the output folder,
plus a manifest with each plan's hash. Output is byte-identical on every
machine: host paths appear as ${PROJECT_ROOT} and ${HOME}.

With --check nothing is written: build exits 3 and lists the files that are
missing, stale or extra, for CI and pre-commit.`,
		Example: `  mcpolicy build
  mcpolicy build examples/code-index
  mcpolicy build --check          # in CI: fail when .mcpolicy/ is stale
  mcpolicy build --out build/mcp  # another output folder`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.streams, opts.Args, opts.PolicyNamed = streamsOf(cmd), args, policyNamed(cmd)
			return buildRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.OutDir, "out", "o", "", "output folder (default PATH/"+project.DefaultOut+")")
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().BoolVar(&opts.Check, "check", false, "write nothing; exit 3 if the output folder is stale, 8 if an artefact was edited after the build")
	formatFlag(cmd, &opts.Format, "text", "json")
	return cmd
}

// buildRun compiles the policies and writes their artefacts, or with
// --check says how the output folder differs from them.
func buildRun(opts *buildOptions) error {
	path, err := policyPath(opts.Args, opts.Policy, opts.PolicyNamed)
	if err != nil {
		return err
	}
	proj, plans, err := compileProject(path)
	if err != nil {
		return err
	}
	files, err := project.Artefacts(plans)
	if err != nil {
		return err
	}
	dir := opts.OutDir
	if dir == "" {
		dir = filepath.Join(path, project.DefaultOut)
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
			dir = filepath.Join(filepath.Dir(path), project.DefaultOut)
		}
	}
	if opts.Check {
		return buildCheck(opts.streams, opts.Format, path, dir, proj, plans, files)
	}
	if err := project.Write(dir, files, writable(proj, plans)); err != nil {
		return err
	}
	if opts.Format == "json" {
		err = writeBuildJSON(opts.Out, dir, plans, files)
	} else {
		fmt.Fprintf(opts.Out, "wrote %s: %s, %s\n", spell(dir), compiler.Plural(len(plans), "server"), compiler.Plural(len(files), "file"))
	}
	hostNotes(opts.Err, plans)
	noteUnwritable(terminalOnly(opts.Err), plans, proj.Root)
	return err
}

// landlockHost is what this machine offers Landlock (a test's stand-in).
var landlockHost = hostcaps.Detect

// hostNotes says which plans built here the launcher will refuse on this
// machine: the artefacts are every machine's, checked against the best.
func hostNotes(w io.Writer, plans []*compiler.Plan) {
	h := landlockHost()
	for _, p := range plans {
		if err := landlock.OnThisHost(p, h); err != nil {
			fmt.Fprintf(w, "mcpolicy: note: on this machine (Landlock ABI %d, user namespaces unavailable) the launcher will refuse server %q on landlock: %s\n", h.ABI, p.Server, spellText(err.Error()))
		}
	}
}

// buildCheck is build --check: each file of dir that is missing, stale,
// extra or tampered with, and exit 3 (stale) or 8 (tampered) when any is.
func buildCheck(std streams, format, path, dir string, proj *project.Project, plans []*compiler.Plan, files map[string][]byte) error {
	w := std.Out
	drift, err := project.Check(dir, files)
	if err != nil {
		return err
	}
	if format == "json" {
		if err := writeBuildCheckJSON(w, dir, &drift); err != nil {
			return err
		}
		w = io.Discard // the exit code and stderr as for text
	}
	if drift.Empty() {
		fmt.Fprintf(w, "%s is up to date (%s)\n", spell(dir), compiler.Plural(len(plans), "server"))
		return nil
	}
	for _, f := range drift.Missing {
		fmt.Fprintf(w, "missing: %s\n", spell(filepath.Join(dir, f)))
	}
	for _, f := range drift.Stale {
		fmt.Fprintf(w, "stale:   %s\n", spell(filepath.Join(dir, f)))
	}
	for _, f := range drift.Extra {
		fmt.Fprintf(w, "extra:   %s\n", spell(filepath.Join(dir, f)))
	}
	for _, f := range drift.Tampered {
		fmt.Fprintf(w, "TAMPERED: %s\n", spell(filepath.Join(dir, f)))
	}
	if len(drift.Tampered) > 0 {
		fmt.Fprintf(std.Err, "mcpolicy: %s: an artefact differs from what its own plan builds (the policy did not change it): it was edited after the build — by a server with write access? Inspect `git diff %s`, then rebuild\n", spell(dir), spell(dir))
		return &errSilent{code: ExitTampered}
	}
	fmt.Fprintf(std.Err, "mcpolicy: %s is out of date with %s; run `mcpolicy build %s`\n", spell(dir), compiler.Plural(len(proj.Files), "policy file"), spell(path))
	return &errSilent{code: ExitStale}
}

// vetOptions are vet's flags and argument.
type vetOptions struct {
	streams
	Args        []string
	Policy      string
	PolicyNamed bool
	Format      string
	Category    string // --sarif-category
}

func newVetCmd() *cobra.Command {
	opts := &vetOptions{}
	cmd := &cobra.Command{
		Use:   "vet [PATH | -p POLICY]",
		Short: "Validate and compile the policies under PATH, writing nothing",
		Long: `vet loads every policy at PATH, validates it against the embedded schema
and compiles it, reporting every problem as file:line:col: field: message.
--format json, github, sarif or markdown prints the problems as findings
(SCHEMA, NOT_ENFORCEABLE) on stdout instead; the exit code is the same.`,
		Example: `  mcpolicy vet
  mcpolicy vet mcpolicy.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.streams, opts.Args, opts.PolicyNamed = streamsOf(cmd), args, policyNamed(cmd)
			return vetRun(opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	formatFlag(cmd, &opts.Format, findings.Formats...)
	sarifCategoryFlag(cmd, &opts.Category, "mcpolicy/vet/")
	return cmd
}

// vetRun compiles the policies and renders their artefacts, writing
// nothing: an error is the answer.
func vetRun(opts *vetOptions) error {
	if err := findings.Check(opts.Format); err != nil {
		return &exitError{code: ExitError, err: err}
	}
	path, err := policyPath(opts.Args, opts.Policy, opts.PolicyNamed)
	if err != nil {
		return err
	}
	proj, plans, err := compileProject(path)
	if err == nil {
		_, err = project.Artefacts(plans)
	}
	if opts.Format != "text" {
		return writeVet(opts.Out, opts.Format, opts.Category, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "ok: %s in %s\n", compiler.Plural(len(plans), "server"), compiler.Plural(len(proj.Files), "policy file"))
	return nil
}

// explainOptions are explain's flags and arguments.
type explainOptions struct {
	streams
	Servers []string // the arguments: these servers, or every one
	Policy  string
	Backend string // also what this backend enforces
	Format  string
	// ListProtected lists each protected name absent in a read-write
	// mount, rather than their count.
	ListProtected bool
}

func newExplainCmd() *cobra.Command {
	opts := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain [SERVER...]",
		Short: "Print each server's grants as a numbered list, and what is taken away",
		Long: `explain prints, for each server (or those named), its grants as a numbered
list with their source positions, then what is taken away, the protected
names, and with --backend what that backend enforces of it on this machine.
The protected names absent when the policy compiled are counted per
read-write mount; --list-protected lists them.

On a terminal, lines are folded at its width (COLUMNS when set); into a
pipe or a file they are not, so the text reads the same on every machine.`,
		Example: `  mcpolicy explain code-index
  mcpolicy explain -p examples/code-index   # every server
  mcpolicy explain code-index --backend landlock   # what landlock enforces here`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.streams, opts.Servers = streamsOf(cmd), args
			return explainRun(opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringVarP(&opts.Backend, "backend", "b", "", "also show what BACKEND ("+strings.Join(registry.Names(), ", ")+") enforces for the server, on this machine")
	formatFlag(cmd, &opts.Format, "text", "json")
	cmd.Flags().BoolVar(&opts.ListProtected, "list-protected", false, "list every protected name absent in a read-write mount (default: their count per mount)")
	return cmd
}

// secretsWarnings says which secret-looking files a server with network
// access can still read in its mounts, each with the one-line fix.
func secretsWarnings(w io.Writer, p *compiler.Plan, root string) {
	home, _ := os.UserHomeDir()
	for _, s := range compiler.ReadableSecrets(p, compiler.Machine{ProjectRoot: root, Home: home}) {
		fmt.Fprintf(w, "\n%s\n", spellText(s.Warning(p)))
	}
}

// explainRun prints each selected server's grants and, with --backend,
// what that backend enforces of them here.
func explainRun(opts *explainOptions) error {
	if err := checkBackend("explain", opts.Backend, backendsOf("explain")); err != nil {
		return err
	}
	proj, plans, err := compileProject(opts.Policy)
	if err != nil {
		return err
	}
	selected, err := selectServers(plans, opts.Servers, opts.Policy)
	if err != nil {
		return err
	}
	noteUnwritable(terminalOnly(opts.Err), selected, proj.Root)
	if opts.Format == "json" {
		return writeExplainJSON(opts.Out, proj.Root, opts.Backend, selected)
	}
	return wrapping(opts.Out, func(w io.Writer) error { return opts.explain(w, selected, proj.Root) })
}

// explain writes the explanation of each selected plan to w.
func (opts *explainOptions) explain(w io.Writer, selected []*compiler.Plan, root string) error {
	for i, p := range selected {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprint(w, spellText(compiler.ExplainWith(p, compiler.ExplainOptions{ListAbsent: opts.ListProtected})))
		secretsWarnings(w, p, root)
		if opts.Backend == "" {
			continue
		}
		rows, err := enforcement(p, opts.Backend)
		if err != nil {
			return err
		}
		fmt.Fprintln(w)
		if err := emit.PrintTable(w, opts.Backend, rows); err != nil {
			return err
		}
		if err := printSyscalls(w, opts.Backend); err != nil {
			return err
		}
		if err := emit.Check(p, opts.Backend, rows); err != nil {
			fmt.Fprintf(w, "\n%s\n", spellText(err.Error()))
		}
	}
	return nil
}

// selectServers are the plans of the servers named, in the order named;
// every plan when none is.
func selectServers(plans []*compiler.Plan, servers []string, policy string) ([]*compiler.Plan, error) {
	if len(servers) == 0 {
		return plans, nil
	}
	byName := map[string]*compiler.Plan{}
	for _, p := range plans {
		byName[p.Server] = p
	}
	var selected []*compiler.Plan
	for _, a := range servers {
		p, ok := byName[a]
		if !ok {
			return nil, &exitError{code: ExitError, err: fmt.Errorf("no server %q in %s (servers: %s)", a, policy, names(plans))}
		}
		selected = append(selected, p)
	}
	return selected, nil
}

// enforcement is a backend's report for a plan; landlock's depends on
// this machine's kernel.
func enforcement(p *compiler.Plan, backend string) ([]emit.Row, error) {
	b, err := registry.Lookup(backend)
	if err != nil {
		return nil, &exitError{code: ExitError, err: err}
	}
	return b.Enforcement(p), nil
}

func names(plans []*compiler.Plan) string {
	s := ""
	for i, p := range plans {
		if i > 0 {
			s += ", "
		}
		s += p.Server
	}
	return s
}

// printSyscalls lists what mcpolicy's seccomp filter takes away, for the
// host backends that load it (docker and podman bring the engine's own).
func printSyscalls(w io.Writer, backend string) error {
	b, err := registry.Lookup(backend)
	if err != nil {
		return nil
	}
	// The launcher loads it with a bwrap spec and with a ruleset.
	if k := b.Runtime().Sandbox; k != artefact.Bwrap && k != artefact.Landlock {
		return nil
	}
	rules := seccomp.Rules(seccomp.Options{})
	fmt.Fprintf(w, "\nSystem calls the seccomp filter takes away (%d, by answer and reason; the rest as Docker's default profile allows them):\n", len(rules))
	// The calls that share an answer and a reason, on one line, in the
	// order of the first of each.
	type group struct {
		action, reason string
		names          []string
	}
	var groups []*group
	at := map[[2]string]*group{}
	for _, r := range rules {
		k := [2]string{r.Action, r.Reason}
		g := at[k]
		if g == nil {
			g = &group{action: r.Action, reason: r.Reason}
			at[k] = g
			groups = append(groups, g)
		}
		g.names = append(g.names, r.Name)
	}
	for _, g := range groups {
		fmt.Fprintf(w, "  - %s: %s\n    %s\n", g.action, strings.Join(g.names, ", "), g.reason)
	}
	return nil
}
