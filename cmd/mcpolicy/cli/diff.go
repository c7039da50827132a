package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/compiler/exposure"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/spf13/cobra"
)

// diffOptions are diff's flags and arguments.
type diffOptions struct {
	streams
	Args      []string // OLD and NEW, or neither
	Against   string   // the git ref of the old side, without arguments
	Policy    string
	Format    string
	FailOn    string
	Artefacts bool   // also each artefact's line diff
	Category  string // --sarif-category
}

func newDiffCmd() *cobra.Command {
	opts := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff [--against REF] [-p POLICY] | diff OLD NEW",
		Short: "Show grant changes between two versions, each widened or narrowed",
		Long: `diff compiles both versions of the policies and compares them server by
server, grant by grant. Each change is widened (a new grant, ro -> rw, a
mount moved to a parent, a bigger scratch, network opened, an egress host
or env name added, an egress host replaced by a wildcard that covers it,
a protection removed, a limit raised, root, a tool allowed or undenied, an
argument constraint widened or removed, a pinned tool added or changed) or
narrowed; reordering, renamed targets, comments and wording change no grant
and are not reported. The old side comes from a git ref (default HEAD) or a path.

A widening can be acknowledged in the new policy by its kind:
  waive: [{rule: "MOUNT_RW", reason: "the indexer writes its cache"}]

Kinds (docs/diff-kinds.md, mcpolicy rules --diff): ` + strings.Join(diff.Kinds, ", ") + `.

Formats: text, markdown (a PR comment), json, github (an annotation per
unwaived change), sarif (a result per change: a widening is an error, a
narrowing a note, a waived widening a suppressed result).

Exit codes: 0 nothing widened (or everything waived), 6 an unwaived
widening (--fail-on widening, the default; any: every change; never).`,
		Example: `  mcpolicy diff                         # the working tree against HEAD
  mcpolicy diff --artefacts             # and how each emitted file changes
  mcpolicy diff --against origin/main --format markdown
  mcpolicy diff --against origin/main --format sarif > diff.sarif
  mcpolicy diff old/mcpolicy.cue mcpolicy.cue`,
		Args: cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.streams, opts.Args = streamsOf(cmd), args
			return diffRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Against, "against", "HEAD", "git ref of the old side")
	policyFlag(cmd, &opts.Policy)
	formatFlag(cmd, &opts.Format, diff.Formats...)
	cmd.Flags().StringVar(&opts.FailOn, "fail-on", "widening", "exit 6 on: widening, any, never")
	sarifCategoryFlag(cmd, &opts.Category, diff.SARIFCategory)
	cmd.Flags().BoolVar(&opts.Artefacts, "artefacts", false, "also show the line diff of every emitted artefact (docker args, bwrap, .sb, plans)")
	return cmd
}

// diffRun compares the old plans with the new, prints the grant changes
// and the exposure that moved, and says by its exit code whether a
// change fails it.
func diffRun(opts *diffOptions) error {
	oldPlans, newPlans, display, cleanup, err := opts.sides()
	if err != nil {
		return err
	}
	defer cleanup()
	cs := diff.Plans(oldPlans, newPlans)
	for i := range cs {
		cs[i].Against.File = display(cs[i].Against.File)
	}
	if err := diff.WriteCategory(opts.Out, cs, opts.Format, colour(opts.Out), version(), opts.Category); err != nil {
		return &exitError{code: ExitError, err: err}
	}
	ds := exposure.Deltas(oldPlans, newPlans)
	for _, d := range ds {
		for i := range d.Removed {
			d.Removed[i].Pos.File = display(d.Removed[i].Pos.File)
		}
	}
	writeExposure(opts.Out, ds, opts.Format)
	if opts.Artefacts {
		if err := writeArtefactDiffs(opts.Out, oldPlans, newPlans, opts.Format); err != nil {
			return err
		}
	}
	switch opts.FailOn {
	case "widening":
		if diff.Widening(cs) {
			return &errSilent{code: ExitWidened}
		}
	case "any":
		if len(cs) > 0 {
			return &errSilent{code: ExitWidened}
		}
	case "never":
	default:
		return &exitError{code: ExitError, err: fmt.Errorf("--fail-on: widening, any or never (got %q)", opts.FailOn)}
	}
	return nil
}

// sides are the old and the new plans: OLD and NEW's, or the policies at
// --against's ref and the working tree's. display names an old file as
// the messages show it; cleanup removes the old side's copy.
func (opts *diffOptions) sides() (oldPlans, newPlans []*compiler.Plan, display func(string) string, cleanup func(), err error) {
	display, cleanup = func(s string) string { return s }, func() {}
	switch len(opts.Args) {
	case 2:
		if oldPlans, err = plansAt(opts.Args[0]); err != nil {
			return nil, nil, nil, nil, err
		}
		if newPlans, err = plansAt(opts.Args[1]); err != nil {
			return nil, nil, nil, nil, err
		}
		return oldPlans, newPlans, display, cleanup, nil
	case 0:
	default:
		return nil, nil, nil, nil, &exitError{code: ExitError, err: fmt.Errorf("give OLD and NEW, or neither (and --against)")}
	}
	if err := policyMissing(opts.Policy); err != nil {
		return nil, nil, nil, nil, err
	}
	old, display, cleanup, err := project.AtRef(opts.Policy, opts.Against)
	if err != nil {
		return nil, nil, nil, nil, &exitError{code: ExitError, err: err}
	}
	if len(old.Files) > 0 {
		// The old side is copied without its sources: compare policies, check no file system.
		home, _ := os.UserHomeDir()
		pols, err := old.Load()
		if err == nil {
			oldPlans, err = compiler.Compile(pols, compiler.Options{Root: old.Root, Home: home, NoFS: true})
		}
		if err != nil {
			cleanup()
			return nil, nil, nil, nil, fmt.Errorf("the policies at %s: %w", opts.Against, err)
		}
	}
	if _, newPlans, err = compileProject(opts.Policy); err != nil {
		cleanup()
		return nil, nil, nil, nil, err
	}
	return oldPlans, newPlans, display, cleanup, nil
}

// writeArtefactDiffs prints the line diff of every emitted artefact that
// changed, in text and markdown.
func writeArtefactDiffs(w io.Writer, oldPlans, newPlans []*compiler.Plan, format string) error {
	oldFiles, err1 := project.Artefacts(oldPlans)
	newFiles, err2 := project.Artefacts(newPlans)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("rendering artefacts: %v %v", err1, err2)
	}
	for _, d := range diff.Artefacts(oldFiles, newFiles) {
		if format == "markdown" {
			fmt.Fprintf(w, "\n<details><summary><code>%s</code></summary>\n\n```diff\n%s```\n</details>\n", d.Name, d.Text)
		} else if format == "text" {
			fmt.Fprintf(w, "\n--- a/%s\n+++ b/%s\n%s", d.Name, d.Name, d.Text)
		}
	}
	return nil
}

// writeExposure follows the changes, in text and markdown, with each
// server whose exposure score (docs/exposure.md) moved: a widening raises
// it. The JSON, SARIF and GitHub formats stay the list of changes.
func writeExposure(w io.Writer, ds []exposure.ServerDelta, format string) {
	var moved []exposure.ServerDelta
	for _, d := range ds {
		if d.Delta != 0 {
			moved = append(moved, d)
		}
	}
	if len(moved) == 0 || (format != "text" && format != "markdown") {
		return
	}
	fmt.Fprintln(w)
	for _, d := range moved {
		if format == "markdown" {
			fmt.Fprintf(w, "- exposure of `%s`: %d → %d (%+d)\n", d.Server, d.Old, d.New, d.Delta)
			continue
		}
		fmt.Fprint(w, exposure.ExplainDelta(d))
	}
}

// plansAt compiles the policies at path, or reads a hand-written
// Kubernetes manifest there (a Pod, or a workload's Pod template) back into
// one plan per container: two versions of a manifest diff in grant terms.
func plansAt(path string) ([]*compiler.Plan, error) {
	if src, err := os.ReadFile(path); err == nil && kubernetes.LooksLikeManifest(src) {
		ts, err := clientcfg.ReadManifest(path, src)
		if err != nil {
			return nil, &exitError{code: ExitInvalid, err: err}
		}
		var plans []*compiler.Plan
		for _, t := range ts {
			if t.Plan != nil {
				plans = append(plans, t.Plan)
			}
		}
		return plans, nil
	}
	_, plans, err := compileProject(path)
	return plans, err
}
