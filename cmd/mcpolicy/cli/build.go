package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/backends"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/report"
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

func newBuildCmd() *cobra.Command {
	var out, policy string
	var check bool
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
			path, err := policyPath(cmd, args, policy)
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
			dir := out
			if dir == "" {
				dir = filepath.Join(path, project.DefaultOut)
				if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
					dir = filepath.Join(filepath.Dir(path), project.DefaultOut)
				}
			}
			w := cmd.OutOrStdout()
			if check {
				drift, err := project.Check(dir, files)
				if err != nil {
					return err
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
					fmt.Fprintf(cmd.ErrOrStderr(), "mcpolicy: %s: an artefact differs from what its own plan builds (the policy did not change it): it was edited after the build — by a server with write access? Inspect `git diff %s`, then rebuild\n", spell(dir), spell(dir))
					return &errSilent{code: ExitTampered}
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpolicy: %s is out of date with %s; run `mcpolicy build %s`\n", spell(dir), compiler.Plural(len(proj.Files), "policy file"), spell(path))
				return &errSilent{code: ExitStale}
			}
			if err := project.Write(dir, files, writable(proj, plans)); err != nil {
				return err
			}
			fmt.Fprintf(w, "wrote %s: %s, %s\n", spell(dir), compiler.Plural(len(plans), "server"), compiler.Plural(len(files), "file"))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "output folder (default PATH/"+project.DefaultOut+")")
	policyFlag(cmd, &policy)
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; exit 3 if the output folder is stale, 8 if an artefact was edited after the build")
	return cmd
}

func newVetCmd() *cobra.Command {
	var policy, format string
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
			if err := report.Check(format); err != nil {
				return &exitError{code: ExitError, err: err}
			}
			path, err := policyPath(cmd, args, policy)
			if err != nil {
				return err
			}
			proj, plans, err := compileProject(path)
			if err == nil {
				_, err = project.Artefacts(plans)
			}
			if format != "text" {
				return writeVet(cmd.OutOrStdout(), format, err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %s in %s\n", compiler.Plural(len(plans), "server"), compiler.Plural(len(proj.Files), "policy file"))
			return nil
		},
	}
	policyFlag(cmd, &policy)
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output: "+strings.Join(report.Formats, ", "))
	return cmd
}

func newExplainCmd() *cobra.Command {
	var path, backend string
	cmd := &cobra.Command{
		Use:   "explain [SERVER...]",
		Short: "Print each server's grants as a numbered list, and what is taken away",
		Example: `  mcpolicy explain code-index
  mcpolicy explain -p examples/code-index   # every server
  mcpolicy explain code-index --backend landlock   # what landlock enforces here`,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, plans, err := compileProject(path)
			if err != nil {
				return err
			}
			byName := map[string]*compiler.Plan{}
			for _, p := range plans {
				byName[p.Server] = p
			}
			selected := plans
			if len(args) > 0 {
				selected = nil
				for _, a := range args {
					p, ok := byName[a]
					if !ok {
						return &exitError{code: ExitError, err: fmt.Errorf("no server %q in %s (servers: %s)", a, path, names(plans))}
					}
					selected = append(selected, p)
				}
			}
			for i, p := range selected {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				fmt.Fprint(cmd.OutOrStdout(), spellText(compiler.Explain(p)))
				if backend != "" {
					rows, err := enforcement(p, backend)
					if err != nil {
						return err
					}
					fmt.Fprintln(cmd.OutOrStdout())
					if err := emit.PrintTable(cmd.OutOrStdout(), backend, rows); err != nil {
						return err
					}
					if err := printSyscalls(cmd.OutOrStdout(), backend); err != nil {
						return err
					}
					if err := emit.Check(p, backend, rows); err != nil {
						fmt.Fprintf(cmd.OutOrStdout(), "\n%s\n", spellText(err.Error()))
					}
				}
			}
			return nil
		},
	}
	policyFlag(cmd, &path)
	cmd.Flags().StringVarP(&backend, "backend", "b", "", "also show what BACKEND ("+strings.Join(backends.Names(), ", ")+") enforces for the server, on this machine")
	return cmd
}

// enforcement is a backend's report for a plan; landlock's depends on
// this machine's kernel.
func enforcement(p *compiler.Plan, backend string) ([]emit.Row, error) {
	b, err := backends.Lookup(backend)
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
	b, err := backends.Lookup(backend)
	if err != nil {
		return nil
	}
	// The launcher loads it with a bwrap spec and with a ruleset.
	if k := b.Runtime().Sandbox; k != artefact.Bwrap && k != artefact.Landlock {
		return nil
	}
	rules := seccomp.Rules(seccomp.Options{})
	fmt.Fprintf(w, "\nSystem calls the seccomp filter takes away (%d; the rest as Docker's default profile allows them):\n", len(rules))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rules {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.Name, r.Action, r.Reason)
	}
	return tw.Flush()
}
