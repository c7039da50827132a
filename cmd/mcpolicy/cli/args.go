package cli

import (
	"fmt"
	"os"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/spf13/cobra"
)

// argsOptions are args' flags and argument.
type argsOptions struct {
	streams
	Server string
	Policy string
	Format string // json only: the output is for machines
}

func newArgsCmd() *cobra.Command {
	opts := &argsOptions{}
	cmd := &cobra.Command{
		Use:   "args SERVER",
		Short: "Print the docker/podman run arguments for SERVER with this machine's paths",
		Long: `args compiles the policies and prints, as a JSON array, the arguments after
"docker" (or "podman") that start SERVER confined on this machine: the same
arguments as the committed artefact, with ${PROJECT_ROOT} and ${HOME}
resolved and quoted for this machine. Start them through a client entry
(mcpolicy client): mcpolicy-launch --engine docker --project-root ROOT
--sha256 DIGEST .mcpolicy/docker/SERVER.json -- ARGS... runs them only when
they are the pinned artefact's, checks every source for symlinks, fixes the
project's top level (protected names read-only), masks the image's volumes
and checks the mounts inside the container; run bare, they do none of that.`,
		Example: `  mcpolicy args code-index -p examples/code-index`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return missingArg("args", "a SERVER", opts.Policy, func(s string) string {
					return "mcpolicy args " + shellQuote(s) + policyArg(opts.Policy)
				})
			}
			opts.streams, opts.Server = streamsOf(cmd), args[0]
			return argsRun(opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	formatFlag(cmd, &opts.Format, "json")
	return cmd
}

// argsRun prints the server's docker/podman run arguments for this
// machine, noting a read-write mount of the project that bare they leave
// writable.
func argsRun(opts *argsOptions) error {
	proj, p, err := compileServer(opts.Policy, opts.Server)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	a, err := docker.Args(p, compiler.Machine{ProjectRoot: proj.Root, Home: home, Invoker: compiler.CurrentUser()})
	if err != nil {
		return err
	}
	for _, m := range p.Mounts {
		if m.FixedTop() {
			fmt.Fprintf(opts.Err, "mcpolicy: note: %s is a read-write mount of the project: run these through a client entry (`mcpolicy client`, whose launcher runs them only as %s/.mcpolicy/docker pins them), which fixes its top level and keeps .git and the other protected names read-only; bare, they are writable\n", m.Target, proj.Root)
			break
		}
	}
	_, err = opts.Out.Write(emit.JSONArgs(a))
	return err
}
