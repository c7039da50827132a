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

// execOptions are exec's flags and the command after --.
type execOptions struct {
	streams
	Command  []string // replaces the server's command when given
	Policy   string
	Server   string
	EnvFile  string
	Verbose  bool
	Probes   []string // OP:TARGET accesses to run instead (prove)
	Programs []string // PATH=sha256:HEX pins of programs another server may write
}

func newExecCmd() *cobra.Command {
	opts := &execOptions{}
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

stdin and stdout pass through untouched, unless the policy has a tools
section: then the tool relay runs between them and the server's, outside
the sandbox, and its decisions go to the server's launch log. mcpolicy's own
messages go to stderr.
It fails closed: when the kernel lacks Landlock, or lacks what the plan needs
and the policy accepts no degradation, it refuses to start (exit 4).

Client entries run the committed ruleset with mcpolicy-launch --sha256
(.mcpolicy/landlock/SERVER.json): no compiling, and nothing but the
reviewed bytes.`,
		Example: `  mcpolicy exec --policy examples/code-index --server code-index -- cat /etc/hostname
  mcpolicy exec --policy mcpolicy.cue --server code-index --verbose`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.streams, opts.Command = streamsOf(cmd), args
			return execRun(opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringVar(&opts.Server, "server", "", "server to start (required)")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "say on stderr what is enforced, with the Landlock ABI")
	cmd.Flags().StringArrayVar(&opts.Programs, artefact.ProgramFlag, nil, "PATH=sha256:HEX: a program of the server's that another server's read-write grant holds, as you checked it: refuse (exit 8) other bytes (repeatable; required for each such program)")
	cmd.Flags().StringVar(&opts.EnvFile, "env-file", "", "take the values of the plan's env grants that the environment does not set from this file (NAME=value lines, mode 600, outside every grant)")
	cmd.Flags().StringArrayVar(&opts.Probes, "probe", nil, "run these OP:TARGET accesses in the confined launcher instead of the command (mcpolicy prove)")
	cmd.Flags().MarkHidden("probe")
	cmd.MarkFlagRequired("server")
	return cmd
}

// execRun builds the server's Landlock ruleset and starts it confined;
// the server's exit code is exec's.
func execRun(opts *execOptions) error {
	if err := absEnvFile(&opts.EnvFile); err != nil {
		return err
	}
	// Nothing the caller left open reaches the server (and
	// launch.Start gives it no terminal).
	if err := launch.CloseInherited(); err != nil {
		return err
	}
	proj, plan, plans, err := compileServerOf(opts.Policy, opts.Server)
	if err != nil {
		return err
	}
	if len(opts.Command) > 0 {
		plan.Command = opts.Command
	}
	home, _ := os.UserHomeDir()
	machine := compiler.Machine{ProjectRoot: proj.Root, Home: home, Invoker: compiler.CurrentUser()}
	environ, err := serverEnviron(plans, plan, machine, opts.EnvFile)
	if err != nil {
		return err
	}
	lo := launch.Options{Environ: environ}
	if len(opts.Probes) == 0 { // prove's probes are not a server's launch
		// The tool relay runs whenever the plan has a tools section, in
		// this process or in the launcher it hands the launch to.
		lo.Tools = plan.Tools
		lo.Log = launchLog("exec", plan, machine, writable(proj, plans), environ, opts.Err)
		lo.Log.Set("", "", artefact.RulesetBackend, "")
	}
	for _, a := range opts.Probes {
		at, err := probe.ParseAttempt(a)
		if err != nil {
			return &exitError{code: ExitError, err: err}
		}
		lo.Probe = append(lo.Probe, at)
	}
	if opts.Verbose {
		lo.Verbose = opts.Err
	}
	rs, err := landlock.Build(plan, machine)
	if err != nil {
		return logRefusal(lo.Log, err)
	}
	// As the entry: a program another server's grant holds runs
	// only with the digest the person starting it names.
	if err := launch.CheckPrograms(rs.ProgramPins, opts.Programs, proj.Root, home); err != nil {
		return logRefusal(lo.Log, err)
	}
	lo.ProjectRoot, lo.Home = proj.Root, home
	if len(opts.Probes) == 0 {
		handOver(rs, lo, writable(proj, plans)) // returns when it could not
	}
	code, err := launch.Start(rs, lo)
	logRefusal(lo.Log, err)
	var ue *launch.UnsupportedError
	if errors.As(err, &ue) {
		return &exitError{code: ExitUnsupported, err: err}
	}
	if err != nil {
		return err
	}
	return &errSilent{code: code}
}

// handOver execs mcpolicy-launch, installed beside mcpolicy, with the
// launch: what then stays beside the server is the small launcher and not
// the whole of mcpolicy. It returns, and exec runs the launch itself,
// when there is none to trust (launch.LauncherBeside).
func handOver(rs *artefact.Ruleset, lo launch.Options, untrusted []string) {
	self, err := os.Executable()
	if err != nil {
		return
	}
	if launcher := launch.LauncherBeside(self, untrusted); launcher != "" {
		launch.Handover(launcher, rs, lo)
	}
}
