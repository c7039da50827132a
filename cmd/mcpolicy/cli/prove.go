package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/prove"
	"github.com/spf13/cobra"
)

// ExitDisagrees: prove saw the kernel allow what the plan denies (or the reverse).
const ExitDisagrees = 7

func newProveCmd() *cobra.Command {
	var path, out string
	var servers, backends, probes, toolArgs []string
	var tool string
	cmd := &cobra.Command{
		Use:   "prove [-p PATH] [--server NAME] [--backend B] [--probe PATH] [--out DIR]",
		Short: "Demonstrate the denied reads: a probe, not the server, under each backend's confinement",
		Long: `prove runs a probe — mcpolicy's own, never the server — under each
server's compiled confinement on every Linux backend this machine can run
(bwrap, landlock, docker, podman) and records what the kernel answered to
reading the usual credential stores (~/.aws/credentials, ~/.ssh/id_*,
~/.config/gcloud, ~/.kube/config, ~/.netrc, ~/.docker/config.json),
/etc/shadow, the project's parent, listing / and $HOME, writing into each
read-only grant and protected path, and a TCP connect to a listener it
opens on the host. It writes evidence.md and evidence.json, with the
command that reproduces each row with ordinary tools.

Exit codes: 0 every row as the plan says, 7 a disagreement, 1 an error.
Container backends need a static mcpolicy (CGO_ENABLED=0 go install).`,
		Example: `  mcpolicy prove -p examples/code-index --out evidence/
  mcpolicy prove -p examples/canary --tool read_file --arg path=$HOME/.aws/credentials
  mcpolicy prove --server code-index --backend bwrap --backend landlock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			proj, plans, err := compileProject(path)
			if err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			home, _ := os.UserHomeDir()
			m := compiler.Machine{ProjectRoot: proj.Root, Home: home}
			want := map[string]bool{}
			for _, s := range servers {
				want[s] = true
			}
			disagree := 0
			for _, p := range plans {
				if len(want) > 0 && !want[p.Server] {
					continue
				}
				opts := prove.Options{Backends: backends, Probes: probes, Self: self, Policy: path}
				if tool != "" {
					call := &prove.ToolCall{Tool: tool, Args: map[string]any{}}
					for _, kv := range toolArgs {
						k, v, ok := strings.Cut(kv, "=")
						if !ok {
							return &exitError{code: ExitError, err: fmt.Errorf("--arg %q: want KEY=VALUE", kv)}
						}
						call.Args[k] = v
						if strings.HasPrefix(v, "/") && call.Target == "" {
							call.Target = v
							opts.Probes = append(opts.Probes, v)
						}
					}
					opts.Call = call
				}
				rep, err := prove.Run(p, m, opts)
				if err != nil {
					return err
				}
				dir := filepath.Join(out, p.Server)
				if len(plans) == 1 || len(servers) == 1 {
					dir = out
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, "evidence.json"), rep.JSON(), 0o644); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, "evidence.md"), rep.Markdown(), 0o644); err != nil {
					return err
				}
				for _, b := range rep.Backends {
					state := fmt.Sprintf("%d rows", len(b.Rows))
					if b.Skipped != "" {
						state = "not run: " + b.Skipped
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s %-8s %s\n", p.Server, b.Backend, state)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", filepath.Join(dir, "evidence.md"))
				disagree += rep.Disagreements()
			}
			if disagree > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpolicy: %d rows disagree with the plan: see the report\n", disagree)
				return &errSilent{code: ExitDisagrees}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "path", "p", ".", "policy file or folder")
	cmd.Flags().StringVarP(&out, "out", "o", "evidence", "folder for evidence.md and evidence.json")
	cmd.Flags().StringArrayVar(&servers, "server", nil, "only this server (repeatable)")
	cmd.Flags().StringArrayVar(&backends, "backend", nil, "only this backend: bwrap, landlock, docker, podman (repeatable)")
	cmd.Flags().StringArrayVar(&probes, "probe", nil, "another host path to try to read (repeatable)")
	cmd.Flags().StringVar(&tool, "tool", "", "also start the real server in the same confinement and call this MCP tool (the controlled comparison)")
	cmd.Flags().StringArrayVar(&toolArgs, "arg", nil, "an argument of --tool, KEY=VALUE; the first absolute path is also probed")
	return cmd
}
