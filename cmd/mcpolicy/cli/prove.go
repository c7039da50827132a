package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/prove"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/spf13/cobra"
)

// proveOptions are prove's flags.
type proveOptions struct {
	streams
	Policy    string   // -p/--policy: the policy file or folder
	OutDir    string   // --out: the evidence folder
	Servers   []string // only these servers
	Backends  []string // only these backends
	Probes    []string // more host paths to try to read
	Tool      string   // also call this MCP tool of the real server
	ToolArgs  []string // --tool's arguments, KEY=VALUE
	KeepImage bool
}

func newProveCmd() *cobra.Command {
	opts := &proveOptions{}
	cmd := &cobra.Command{
		Use:   "prove [-p POLICY] [--server NAME] [-b BACKEND] [--probe PATH] [-o DIR]",
		Short: "Demonstrate the denied reads: a probe, not the server, under each backend's confinement",
		Long: `prove runs a probe — mcpolicy's own, never the server — under each
server's compiled confinement on every Linux backend this machine can run
(bwrap, landlock, docker, podman) and records what the kernel answered to
reading the usual credential stores (~/.aws/credentials, ~/.ssh/id_*,
~/.config/gcloud, ~/.kube/config, ~/.netrc, ~/.docker/config.json),
/etc/shadow, a folder beside the project, listing / and $HOME, writing into
each read-only grant and protected path, and a TCP connect to a listener it
opens on the host. A denial is expected only of a target outside every
grant the plan makes; a row with no such target is skipped, saying why.
It writes evidence.md and evidence.json, with the command that reproduces
each row with ordinary tools (bwrap: the bwrap line itself; docker and
podman: the artefact's flags in the server's own image, running its own
cat, ls or sh, or, where the image has none, the static probe prove ran —
this mcpolicy, at its path here — bound in read-only; Landlock, a plan
with egress or a read-write project: mcpolicy exec or run, which set up
what bare arguments cannot), and beside each row what mcpolicy why says of
the same target on the same backend: the grant that makes it reachable
(with its file:line:col), or what stops it. A row where why and prove's
expectation differ is marked (a bug in one of the two) and counted on
stderr; it does not change the exit code.

Only the backends the server is built for are proved (podman runs the
docker artefact); --backend naming another is an error.

With --tool, the real server is also started in the same confinement and
asked over MCP. Each --arg value that is an absolute path (a sandbox path
below a mount target, or a host path) is classified by how the tool uses
it — read or write, from the tool's name, description and inputSchema —
probed that way, and given to each backend's server as that backend shows
it; the host is watched for a write the plan denies, and what the call
changed is put back.

Everything prove makes (stand-in images, containers, temporary folders)
is removed when it ends, also on an error or an interrupt; --keep-image
keeps the stand-in images (a plan with egress or a read-write project
reproduces through mcpolicy run --image with them).

Exit codes: 0 every row as the plan says, 7 a disagreement, 1 an error or
an interrupt. Container backends need a static mcpolicy (CGO_ENABLED=0
go install).`,
		Example: `  mcpolicy prove -p examples/code-index --out evidence/
  mcpolicy prove -p examples/canary --tool read_file --arg path=$HOME/.aws/credentials
  mcpolicy prove -p . --tool write_file --arg path=/workspace/out/x.txt --arg content=hi
  mcpolicy prove --server code-index --backend bwrap --backend landlock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.streams = streamsOf(cmd)
			return proveRun(cmd.Context(), opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringVarP(&opts.OutDir, "out", "o", "evidence", "folder for evidence.md and evidence.json")
	cmd.Flags().StringArrayVar(&opts.Servers, "server", nil, "only this server (repeatable)")
	cmd.Flags().StringArrayVarP(&opts.Backends, "backend", "b", nil, "only this backend: "+strings.Join(prove.Backends, ", ")+" (repeatable)")
	cmd.Flags().StringArrayVar(&opts.Probes, "probe", nil, "another host path to try to read (repeatable)")
	cmd.Flags().StringVar(&opts.Tool, "tool", "", "also start the real server in the same confinement and call this MCP tool (the controlled comparison)")
	cmd.Flags().StringArrayVar(&opts.ToolArgs, "arg", nil, "an argument of --tool, KEY=VALUE; an absolute path is probed as the tool uses it (read or write)")
	cmd.Flags().BoolVar(&opts.KeepImage, "keep-image", false, "keep the stand-in images (mcpolicy-prove:...) that mcpolicy run's reproduce commands (egress, a read-write project) run")
	return cmd
}

// proveRun proves each selected server's plan on its backends and writes
// the evidence of each.
func proveRun(parent context.Context, opts *proveOptions) error {
	for _, b := range opts.Backends {
		if err := checkBackend("prove", b, backendsOf("prove")); err != nil {
			return err
		}
	}
	proj, plans, err := compileProject(opts.Policy)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	call, err := opts.toolCall()
	if err != nil {
		return err
	}
	todo, err := opts.selectPlans(plans)
	if err != nil {
		return err
	}
	// An interrupt ends the sandboxes and removes what prove made
	// before it exits.
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	home, _ := os.UserHomeDir()
	m := compiler.Machine{ProjectRoot: proj.Root, Home: home}
	untrusted := writable(proj, plans)
	disagree, whyDisagree := 0, 0
	for _, p := range todo {
		po := prove.Options{Backends: opts.Backends, Probes: opts.Probes, Self: self, Policy: opts.Policy, Call: call, KeepImages: opts.KeepImage}
		rep, err := prove.RunContext(ctx, p, m, po)
		if errors.Is(err, prove.ErrInterrupted) || ctx.Err() != nil {
			return &exitError{code: ExitError, err: fmt.Errorf("interrupted: what prove made (images, containers, temporary folders) was removed")}
		}
		if err != nil {
			return err
		}
		dir := filepath.Join(opts.OutDir, p.Server)
		if len(plans) == 1 || len(opts.Servers) == 1 {
			dir = opts.OutDir
		}
		if err := opts.writeEvidence(dir, p.Server, rep, untrusted); err != nil {
			return err
		}
		disagree += rep.Disagreements()
		whyDisagree += rep.WhyDisagreements()
	}
	if whyDisagree > 0 {
		// Not the kernel's disagreement: the plan's two readings
		// differ, a bug in one of them. Said, not an exit code.
		fmt.Fprintf(opts.Err, "mcpolicy: %d rows where mcpolicy why and prove's expectation disagree (a bug in one of the two): see the report\n", whyDisagree)
	}
	if disagree > 0 {
		fmt.Fprintf(opts.Err, "mcpolicy: %d rows disagree with the plan: see the report\n", disagree)
		return &errSilent{code: ExitDisagrees}
	}
	return nil
}

// toolCall is --tool with its --arg values, or nil without --tool.
func (opts *proveOptions) toolCall() (*prove.ToolCall, error) {
	if opts.Tool == "" {
		if len(opts.ToolArgs) > 0 {
			return nil, &exitError{code: ExitError, err: fmt.Errorf("--arg needs --tool")}
		}
		return nil, nil
	}
	call := &prove.ToolCall{Tool: opts.Tool, Args: map[string]any{}}
	for _, kv := range opts.ToolArgs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, &exitError{code: ExitError, err: fmt.Errorf("--arg %q: want KEY=VALUE", kv)}
		}
		call.Args[k] = v
	}
	return call, nil
}

// selectPlans are the plans to prove: every server's backends are
// checked before anything runs. A server with no backend prove can run is
// said and left out, unless --server or --backend asked for it.
func (opts *proveOptions) selectPlans(plans []*compiler.Plan) ([]*compiler.Plan, error) {
	want := map[string]bool{}
	for _, s := range opts.Servers {
		want[s] = true
	}
	var todo []*compiler.Plan
	for _, p := range plans {
		if len(want) > 0 && !want[p.Server] {
			continue
		}
		if _, err := prove.SelectBackends(p, opts.Backends); err != nil {
			if len(opts.Backends) == 0 && len(want) == 0 {
				fmt.Fprintf(opts.Out, "%s not proved: %v\n", p.Server, err)
				continue
			}
			return nil, &exitError{code: ExitError, err: err}
		}
		todo = append(todo, p)
	}
	for s := range want {
		if !hasServer(plans, s) {
			return nil, &exitError{code: ExitError, err: fmt.Errorf("no server %q in %s (servers: %s)", s, opts.Policy, names(plans))}
		}
	}
	return todo, nil
}

// writeEvidence writes one server's report into dir and says, per
// backend, how many rows it holds.
func (opts *proveOptions) writeEvidence(dir, server string, rep *prove.Report, untrusted []string) error {
	// The evidence folder is usually in the project, which the server
	// may write (and may just have, while it ran): no link it left on
	// the way is followed.
	if err := hostfile.WriteFile(filepath.Join(dir, "evidence.json"), rep.JSON(), 0o644, untrusted); err != nil {
		return err
	}
	if err := hostfile.WriteFile(filepath.Join(dir, "evidence.md"), rep.Markdown(), 0o644, untrusted); err != nil {
		return err
	}
	for _, b := range rep.Backends {
		state := fmt.Sprintf("%d rows", len(b.Rows))
		if n := (&prove.Report{Backends: []prove.BackendReport{b}}).WhyDisagreements(); n > 0 {
			state += fmt.Sprintf(", %d where mcpolicy why disagrees", n)
		}
		if b.Skipped != "" {
			state = "not run: " + b.Skipped
		}
		fmt.Fprintf(opts.Out, "%s %-8s %s\n", server, b.Backend, state)
	}
	fmt.Fprintf(opts.Out, "wrote %s\n", filepath.Join(dir, "evidence.md"))
	return nil
}

func hasServer(plans []*compiler.Plan, name string) bool {
	for _, p := range plans {
		if p.Server == name {
			return true
		}
	}
	return false
}
