package cli

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

func newExecCmd() *cobra.Command {
	var policy, server, envFile string
	var verbose bool
	var probes, programs []string
	cmd := &cobra.Command{
		Use:   "exec -p POLICY --server NAME [-- CMD ARGS...]",
		Short: "Start a server under its Landlock ruleset (the landlock backend)",
		Long: `exec compiles the policy, applies the server's Landlock ruleset and starts
the server's command (or CMD, when given after --) confined: read-only and
read-write hierarchies at their host paths, nothing else readable, the
environment cleared but for the named variables, no new privileges, TCP
denied, abstract unix sockets and signals scoped (ABI >= 6). Where
unprivileged user namespaces work, the server also gets an empty network
namespace, its scratch as a bounded tmpfs, and a minimal root holding only
the baseline and the grants (the host's named unix sockets are not there);
always a new session, a new session keyring and mcpolicy's seccomp filter.

stdin and stdout pass through untouched; mcpolicy's own messages go to stderr.
It fails closed: when the kernel lacks Landlock, or lacks what the plan needs
and the policy accepts no degradation, it refuses to start (exit 4).

Client entries run the committed ruleset with mcpolicy-launch --sha256
(.mcpolicy/landlock/SERVER.json): no compiling, and nothing but the
reviewed bytes.`,
		Example: `  mcpolicy exec --policy examples/code-index --server code-index -- cat /etc/hostname
  mcpolicy exec --policy mcpolicy.cue --server code-index --verbose`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Nothing the caller left open reaches the server (and
			// launch.Start gives it no terminal).
			if err := launch.CloseInherited(); err != nil {
				return err
			}
			proj, plan, plans, err := compileServerOf(policy, server)
			if err != nil {
				return err
			}
			if len(args) > 0 {
				plan.Command = args
			}
			home, _ := os.UserHomeDir()
			machine := compiler.Machine{ProjectRoot: proj.Root, Home: home, Invoker: compiler.CurrentUser()}
			if err := envFileOutsideProject(plans, envFile, proj.Root, home); err != nil {
				return err
			}
			environ, err := launch.WithEnvFile(os.Environ(), launch.EnvFile{Path: envFile, Grants: grantSources(plan, machine)}, plan.EnvNames())
			if err != nil {
				return err
			}
			opts := launch.Options{Environ: environ}
			for _, a := range probes {
				at, err := probe.ParseAttempt(a)
				if err != nil {
					return &exitError{code: ExitError, err: err}
				}
				opts.Probe = append(opts.Probe, at)
			}
			if verbose {
				opts.Verbose = cmd.ErrOrStderr()
			}
			rs, err := landlock.Build(plan, machine)
			if err != nil {
				return err
			}
			// As the entry: a program another server's grant holds runs
			// only with the digest the person starting it names.
			if err := launch.CheckPrograms(rs.ProgramPins, programs, proj.Root, home); err != nil {
				return err
			}
			opts.ProjectRoot, opts.Home = proj.Root, home
			code, err := launch.Start(rs, opts)
			var ue *launch.UnsupportedError
			if errors.As(err, &ue) {
				return &exitError{code: ExitUnsupported, err: err}
			}
			if err != nil {
				return err
			}
			return &errSilent{code: code}
		},
	}
	policyFlag(cmd, &policy)
	cmd.Flags().StringVar(&server, "server", "", "server to start (required)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "say on stderr what is enforced, with the Landlock ABI")
	cmd.Flags().StringArrayVar(&programs, artefact.ProgramFlag, nil, "PATH=sha256:HEX: a program of the server's that another server's read-write grant holds, as you checked it: refuse (exit 8) other bytes (repeatable; required for each such program)")
	cmd.Flags().StringVar(&envFile, "env-file", "", "take the values of the plan's env grants that the environment does not set from this file (NAME=value lines, mode 600, outside every grant)")
	cmd.Flags().StringArrayVar(&probes, "probe", nil, "run these OP:TARGET accesses in the confined launcher instead of the command (mcpolicy prove)")
	cmd.Flags().MarkHidden("probe")
	cmd.MarkFlagRequired("server")
	return cmd
}
