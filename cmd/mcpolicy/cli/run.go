package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
	"github.com/spf13/cobra"
)

// runOptions are run's flags and arguments.
type runOptions struct {
	streams
	Policy      string // -p/--policy, with Server: compile the policy now
	Server      string
	Backend     string
	LogFile     string // --log: the proxy's decisions ("-": stderr)
	LogMax      string
	HostsFile   string // --hosts: names the proxy resolves first
	Self        string // the forwarder bound into the sandbox
	Image       string // replaces the policy's (engines)
	Pin         string // --plan: the plan hash the policy must compile to
	EnvFile     string
	ProjectRoot string // with Digest: the plan file a client entry pins
	Digest      string
	Args        []string // the plan file, and the command after --
	Dash        int      // where -- was among Args (-1: none)
	PolicyNamed bool
}

func newRunCmd() *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run -p POLICY --server NAME --backend " + strings.Join(backendNames(supervise.Backends()), "|") + " [-- CMD ARGS...] | run --backend B --project-root ROOT --sha256 DIGEST ROOT/.mcpolicy/plan/SERVER.json",
		Short: "Start a server confined, with the egress proxy when its policy allows destinations",
		Long: `run is what a client config starts for a server whose policy has a network
allowlist. It starts mcpolicy's egress proxy, then the server under the
backend with the proxy as its only way out, passes stdin and stdout through
unchanged (through the tool relay when the policy has a tools section), and
stops everything when either side ends.

A client entry starts the plan build wrote, pinned by its digest:
--project-root ROOT --sha256 DIGEST ROOT/.mcpolicy/plan/SERVER.json. The
file is read once and started only when its digest is the entry's (else
exit 8: run mcpolicy build, then mcpolicy client TARGET --write); the policy
is not read. By hand, --policy and --server compile the policy first.

  bwrap          the network namespace stays empty; a forwarder in front of
                 the server listens on the sandbox's loopback (the plan's
                 proxy port) and carries connections to the proxy's socket
  docker/podman  the server joins the network namespace of a sidecar that
                 has only loopback and the forwarder; the sidecar exits when
                 the proxy does
  seatbelt       the proxy listens on the host's 127.0.0.1 at the plan's
                 port, the only address the profile lets the server reach

The forwarder is this executable, bound read-only into the sandbox: it must
be statically linked (CGO_ENABLED=0), or name one with --self.
HTTPS_PROXY, HTTP_PROXY (and lower-case) point the server at it. Every
decision is logged as a JSON line, appended to the server's own file
($XDG_STATE_HOME/mcpolicy/egress/SERVER-HASH.jsonl, ~/.local/state without
it; its path is printed on stderr), or to --log FILE, or to stderr with
--log - (shared with the server, which can write lines that read as
decisions). mcpolicy suggest reads the server's file. A plan without an
allowlist runs with no network at all. CMD after -- (and --image for an
engine) replace the server's, in the same confinement: how mcpolicy prove's
evidence is reproduced. See docs/egress.md.`,
		Example: `  mcpolicy run --policy . --server github --backend bwrap
  mcpolicy run --policy . --server github --backend docker --log ~/.local/state/mcpolicy/github.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.streams, opts.Args, opts.Dash, opts.PolicyNamed = streamsOf(cmd), args, cmd.ArgsLenAtDash(), policyNamed(cmd)
			return runRun(cmd.Context(), opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringVar(&opts.Server, "server", "", "server to start (with --policy)")
	// The default is the first backend run starts, in the registry's order.
	runnable := supervise.Backends()
	cmd.Flags().StringVarP(&opts.Backend, "backend", "b", runnable[0].Name(), orList(backendNames(runnable)))
	cmd.Flags().StringVar(&opts.LogFile, "log", "", "append the proxy's decisions (JSON lines) to this file instead of the server's own ($XDG_STATE_HOME/mcpolicy/egress/); - for stderr")
	logMaxFlag(cmd, &opts.LogMax)
	cmd.Flags().StringVar(&opts.HostsFile, "hosts", "", "resolve these names (/etc/hosts format) in the proxy before DNS; the private-address check still applies")
	cmd.Flags().StringVar(&opts.Self, "self", "", "a statically linked mcpolicy or mcpolicy-launch to bind into the sandbox as the egress forwarder (default: mcpolicy-launch beside this executable, else this executable)")
	cmd.Flags().StringVar(&opts.Image, "image", "", "run this image instead of the policy's (docker, podman)")
	cmd.Flags().StringVar(&opts.Pin, "plan", "", "refuse to start (exit 8) unless the policy compiles to this plan hash (client entries pin it)")
	cmd.Flags().StringVar(&opts.EnvFile, "env-file", "", "take the values of the plan's env grants that the environment does not set from this file (NAME=value lines, mode 600, outside every grant): for clients that pass on no environment")
	cmd.Flags().StringVar(&opts.ProjectRoot, "project-root", "", "the project of the pinned plan file (client entries)")
	cmd.Flags().StringVar(&opts.Digest, "sha256", "", "start the plan file given as the argument only if its SHA-256 is this (client entries)")
	return cmd
}

// runRun starts the plan's server confined, with the egress proxy, and
// exits with the server's code.
func runRun(ctx context.Context, opts *runOptions) error {
	if err := checkBackend("run", opts.Backend, backendsOf("run")); err != nil {
		return err
	}
	if err := absEnvFile(&opts.EnvFile); err != nil {
		return err
	}
	// Nothing the caller left open reaches the server, nor a terminal.
	if err := launch.CloseInherited(); err != nil {
		return err
	}
	if err := launch.ShieldTerminals(nil); err != nil {
		return err
	}
	proj, plan, plans, args, err := opts.plan()
	if err != nil {
		return err
	}
	if len(args) > 0 {
		plan.Command = args
	}
	if opts.Image != "" {
		plan.Image = opts.Image
	}
	home, _ := os.UserHomeDir()
	machine := compiler.Machine{ProjectRoot: proj.Root, Home: home, Invoker: compiler.CurrentUser()}
	o, err := opts.superviseOptions(plan, plans, machine)
	if err != nil {
		return err
	}
	untrusted := writable(proj, plans)
	o.Launch = launchLog("run", plan, machine, untrusted, o.Environ, opts.Err)
	closeLog, err := opts.decisionLog(&o, plan, machine, untrusted)
	if err != nil {
		return logRefusal(o.Launch, err)
	}
	defer closeLog()
	if err := opts.hosts(&o, untrusted); err != nil {
		return logRefusal(o.Launch, err)
	}
	code, err := supervise.Run(ctx, plan, o)
	if err != nil {
		return logRefusal(o.Launch, err)
	}
	return &errSilent{code: code}
}

// superviseOptions are how the server is started: its environment, with
// the env file's values, and run's streams.
func (opts *runOptions) superviseOptions(plan *compiler.Plan, plans []*compiler.Plan, machine compiler.Machine) (supervise.Options, error) {
	environ, err := serverEnviron(plans, plan, machine, opts.EnvFile)
	if err != nil {
		return supervise.Options{}, err
	}
	o := supervise.Options{
		Backend: opts.Backend, Self: opts.Self,
		Machine: machine,
		Stdin:   opts.In, Stdout: opts.Out, Stderr: opts.Err,
		Environ: environ,
		Log:     opts.Err,
		// The tool relay runs whenever the plan has a tools section:
		// run has no path that starts the server without it.
		Tools: plan.Tools,
	}
	if o.LogLimit, err = logLimit(opts.LogMax); err != nil {
		return supervise.Options{}, err
	}
	return o, nil
}

// decisionLog points o.Log where the proxy's decisions go: the server's
// own file by default, --log FILE, or stderr (--log -, or a plan without
// an allowlist, which has no proxy). The returned func closes it.
func (opts *runOptions) decisionLog(o *supervise.Options, plan *compiler.Plan, machine compiler.Machine, untrusted []string) (func(), error) {
	switch {
	case plan.Network.Mode != "allowlist": // no proxy, nothing to log
	case opts.LogFile == "-":
	case opts.LogFile == "":
		// The default log, not the stderr the server shares: what
		// suggest reads must be the proxy's alone.
		f, path, err := supervise.OpenDefaultLog(plan.Server, machine, untrusted, o.LogLimit)
		if err != nil {
			fmt.Fprintf(opts.Err, "mcpolicy run: %v: the egress decisions go to stderr, which the server shares (mcpolicy suggest cannot tell its lines from the proxy's); name a log outside every grant with --log\n", err)
			break
		}
		o.Log = f
		fmt.Fprintf(opts.Err, "mcpolicy run: egress decisions: %s\n", path)
		return func() { f.Close() }, nil
	default:
		f, err := supervise.OpenLog(opts.LogFile, plan, machine)
		if err != nil {
			return nil, &exitError{code: ExitError, err: err}
		}
		o.Log = f
		return func() { f.Close() }, nil
	}
	return func() {}, nil
}

// hosts gives the proxy --hosts' table. The table says where names are,
// and its addresses are not refused as this machine's own: a file a
// server may write would let it put an allowed name at the host's address.
func (opts *runOptions) hosts(o *supervise.Options, untrusted []string) error {
	if opts.HostsFile == "" {
		return nil
	}
	table, err := supervise.ReadHosts(opts.HostsFile, untrusted)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	o.Resolve, o.Exempt = table.Resolver(nil), table.Names
	return nil
}

// plan finds the plan run starts, and the project's plans, and returns
// the command that replaces the server's (after --). A client entry's
// plan file (--sha256) is read and verified, and no policy is read;
// --policy and --server compile it (a person at a terminal, prove's
// reproductions).
func (opts *runOptions) plan() (*project.Project, *compiler.Plan, []*compiler.Plan, []string, error) {
	if opts.Digest == "" && opts.ProjectRoot == "" {
		if opts.Server == "" {
			return nil, nil, nil, nil, &exitError{code: ExitError, err: fmt.Errorf("name the server: --policy POLICY --server NAME (or, as a client entry does, --project-root ROOT --sha256 DIGEST PLANFILE)")}
		}
		proj, plan, plans, err := compileServerOf(opts.Policy, opts.Server)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		return proj, plan, plans, opts.Args, checkPin(plan, opts.Pin)
	}
	files, rest := opts.Args, []string(nil)
	if opts.Dash >= 0 {
		files, rest = opts.Args[:opts.Dash], opts.Args[opts.Dash:]
	}
	if opts.PolicyNamed || opts.Server != "" || opts.Pin != "" || len(files) != 1 || opts.Digest == "" || opts.ProjectRoot == "" {
		return nil, nil, nil, nil, &exitError{code: ExitError, err: fmt.Errorf("a client entry's run names --project-root ROOT --sha256 DIGEST and one plan file (ROOT/.mcpolicy/plan/SERVER.json), and neither --policy, --server nor --plan")}
	}
	plan, plans, err := supervise.ReadPinned(artefact.RunEntry{Backend: opts.Backend, ProjectRoot: opts.ProjectRoot,
		Digest: opts.Digest, EnvFile: opts.EnvFile, PlanFile: files[0]})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return &project.Project{Root: filepath.Clean(opts.ProjectRoot)}, plan, plans, rest, nil
}

// serverEnviron is the environment run and exec start plan's server
// with: this one, and the values of its env grants it lacks from envFile,
// which must lie outside every grant of the project (plans).
func serverEnviron(plans []*compiler.Plan, plan *compiler.Plan, machine compiler.Machine, envFile string) ([]string, error) {
	if err := envFileOutsideProject(plans, envFile, machine.ProjectRoot, machine.Home); err != nil {
		return nil, err
	}
	// A credential read from the environment may come from the env file
	// too (it goes to the proxy; its placeholder to the server).
	names := append(plan.EnvNames(), plan.CredentialSourceEnv()...)
	return launch.WithEnvFile(os.Environ(), launch.EnvFile{Path: envFile, Grants: grantSources(plan, machine)}, names)
}

// grantSources are the host paths the plan mounts, the host backends'
// runtime baseline and the project root: an env file must lie outside each.
func grantSources(p *compiler.Plan, m compiler.Machine) []string {
	out := append([]string{m.ProjectRoot}, p.Runtime.ReadOnly...)
	for _, mt := range p.Mounts {
		out = append(out, m.Resolve(mt.Source))
	}
	return out
}

// checkPin refuses a plan whose hash is not the one a client entry pinned:
// the policy (or the tree its protected paths were found in) changed since
// the entry was written and reviewed.
func checkPin(p *compiler.Plan, pin string) error {
	if pin == "" || pin == p.Hash {
		return nil
	}
	return &exitError{code: ExitTampered, err: fmt.Errorf("server %q compiles to plan %s, but the client entry pins %s: refusing to start it. If you changed the policy, run `mcpolicy build` and `mcpolicy client` again and review the diff; if not, something changed the policy or the project's protected paths — a server with write access?", p.Server, p.Hash, pin)}
}

// egressForwardOptions are egress-forward's flags and the command it
// starts.
type egressForwardOptions struct {
	Port     int    // the sandbox's loopback port
	Socket   string // the proxy's unix socket
	Lifeline bool   // exit when the proxy goes away
	Command  []string
}

// newEgressForwardCmd is the forwarder inside a sandbox; hidden: only
// emitted arguments start it. mcpolicy-launch runs the same forwarder
// (forwarder.Main), and is what mcpolicy run binds when it is installed.
func newEgressForwardCmd() *cobra.Command {
	opts := &egressForwardOptions{}
	cmd := &cobra.Command{
		Use:    "egress-forward --port N --socket PATH [--lifeline] [-- CMD ARGS...]",
		Short:  "Forward the sandbox's loopback port to the egress proxy (run inside the sandbox)",
		Hidden: true,
		Example: `  # what the bwrap backend runs in front of the server (see mcpolicy args SERVER --backend bwrap)
  /.mcpolicy/mcpolicy egress-forward --port 24180 --socket /.mcpolicy/egress.sock -- node server.js`,
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Command = args
			return egressForwardRun(opts)
		},
	}
	cmd.Flags().IntVar(&opts.Port, "port", 0, "loopback port to listen on")
	cmd.Flags().StringVar(&opts.Socket, "socket", sandbox.Socket, "the proxy's unix socket")
	cmd.Flags().BoolVar(&opts.Lifeline, "lifeline", false, "exit when the proxy goes away")
	cmd.MarkFlagRequired("port")
	return cmd
}

// egressForwardRun forwards until the command (or, with --lifeline, the
// proxy) ends, and exits with its code.
func egressForwardRun(opts *egressForwardOptions) error {
	code, err := supervise.Forward(opts.Port, opts.Socket, opts.Lifeline, opts.Command)
	if err != nil {
		return &exitError{code: code, err: err}
	}
	return &errSilent{code: code}
}

// envFileOutsideProject refuses an env file that lies in a grant of any
// server of the project, not only the one started: another server that
// reads it has this one's secrets, one that writes it chooses what this
// one's next launch gets (as mcpolicy client and check refuse).
func envFileOutsideProject(plans []*compiler.Plan, envFile, root, home string) error {
	if envFile == "" {
		return nil
	}
	abs, err := filepath.Abs(envFile)
	if err != nil {
		return err
	}
	return clientcfg.EnvFileOutsideProject(plans, abs, root, home)
}

// absEnvFile makes a relative --env-file absolute, against the current
// folder: the launcher reads it later from wherever the client starts it,
// so an entry names it by its absolute path. The file's checks (outside
// every grant, no symlink, mode 600, yours) are the launcher's and
// client's as before.
func absEnvFile(p *string) error {
	if *p == "" || filepath.IsAbs(*p) {
		return nil
	}
	abs, err := filepath.Abs(*p)
	if err != nil {
		return &exitError{code: ExitError, err: fmt.Errorf("--env-file %s: %w", *p, err)}
	}
	*p = abs
	return nil
}
