package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
	"github.com/spf13/cobra"
)

func newRunCmd() *cobra.Command {
	var policy, server, backend, logFile, logMax, hostsFile, self, image, pin, envFile, projectRoot, digest string
	cmd := &cobra.Command{
		Use:   "run -p POLICY --server NAME --backend " + strings.Join(backendNames(supervise.Backends()), "|") + " [-- CMD ARGS...] | run --backend B --project-root ROOT --sha256 DIGEST ROOT/.mcpolicy/plan/SERVER.json",
		Short: "Start a server confined, with the egress proxy when its policy allows destinations",
		Long: `run is what a client config starts for a server whose policy has a network
allowlist. It starts mcpolicy's egress proxy, then the server under the
backend with the proxy as its only way out, passes stdin and stdout through
unchanged, and stops everything when either side ends.

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
			// Nothing the caller left open reaches the server, nor a terminal.
			if err := launch.CloseInherited(); err != nil {
				return err
			}
			if err := launch.ShieldTerminals(nil); err != nil {
				return err
			}
			proj, plan, plans, args, err := runPlan(cmd, runWhat{policy, server, pin, artefact.RunEntry{
				Backend: backend, ProjectRoot: projectRoot, Digest: digest, EnvFile: envFile}}, args)
			if err != nil {
				return err
			}
			if len(args) > 0 {
				plan.Command = args
			}
			if image != "" {
				plan.Image = image
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
			o := supervise.Options{
				Backend: backend, Self: self,
				Machine: machine,
				Stdin:   cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
				Environ: environ,
				Log:     cmd.ErrOrStderr(),
			}
			if o.LogLimit, err = logLimit(logMax); err != nil {
				return err
			}
			switch {
			case plan.Network.Mode != "allowlist": // no proxy, nothing to log
			case logFile == "-":
			case logFile == "":
				// The default log, not the stderr the server shares: what
				// suggest reads must be the proxy's alone.
				f, path, err := supervise.OpenDefaultLog(plan.Server, machine, writable(proj, plans), o.LogLimit)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "mcpolicy run: %v: the egress decisions go to stderr, which the server shares (mcpolicy suggest cannot tell its lines from the proxy's); name a log outside every grant with --log\n", err)
					break
				}
				defer f.Close()
				o.Log = f
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpolicy run: egress decisions: %s\n", path)
			default:
				f, err := supervise.OpenLog(logFile, plan, machine)
				if err != nil {
					return &exitError{code: ExitError, err: err}
				}
				defer f.Close()
				o.Log = f
			}
			if hostsFile != "" {
				// The table says where names are, and its addresses are not
				// refused as this machine's own: a file a server may write
				// would let it put an allowed name at the host's address.
				table, err := supervise.ReadHosts(hostsFile, writable(proj, plans))
				if err != nil {
					return &exitError{code: ExitError, err: err}
				}
				o.Resolve, o.Exempt = table.Resolver(nil), table.Names
			}
			code, err := supervise.Run(cmd.Context(), plan, o)
			if err != nil {
				return err
			}
			return &errSilent{code: code}
		},
	}
	policyFlag(cmd, &policy)
	cmd.Flags().StringVar(&server, "server", "", "server to start (with --policy)")
	cmd.Flags().StringVar(&backend, "backend", bwrap.Backend, orList(backendNames(supervise.Backends())))
	cmd.Flags().StringVar(&logFile, "log", "", "append the proxy's decisions (JSON lines) to this file instead of the server's own ($XDG_STATE_HOME/mcpolicy/egress/); - for stderr")
	logMaxFlag(cmd, &logMax)
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "resolve these names (/etc/hosts format) in the proxy before DNS; the private-address check still applies")
	cmd.Flags().StringVar(&self, "self", "", "a statically linked mcpolicy to bind into the sandbox as the forwarder (default: this executable)")
	cmd.Flags().StringVar(&image, "image", "", "run this image instead of the policy's (docker, podman)")
	cmd.Flags().StringVar(&pin, "plan", "", "refuse to start (exit 8) unless the policy compiles to this plan hash (client entries pin it)")
	cmd.Flags().StringVar(&envFile, "env-file", "", "take the values of the plan's env grants that the environment does not set from this file (NAME=value lines, mode 600, outside every grant): for clients that pass on no environment")
	cmd.Flags().StringVar(&projectRoot, "project-root", "", "the project of the pinned plan file (client entries)")
	cmd.Flags().StringVar(&digest, "sha256", "", "start the plan file given as the argument only if its SHA-256 is this (client entries)")
	return cmd
}

// runWhat is what run is asked to start: a policy's server, compiled now,
// or (Entry.Digest set) the plan file a client entry pins.
type runWhat struct {
	policy, server, pin string
	entry               artefact.RunEntry
}

// runPlan finds the plan run starts, and the project's plans, and returns
// the command that replaces the server's (after --). A client entry's
// plan file is read and verified, and no policy is read; --policy and
// --server compile it (a person at a terminal, prove's reproductions).
func runPlan(cmd *cobra.Command, w runWhat, args []string) (*project.Project, *compiler.Plan, []*compiler.Plan, []string, error) {
	if w.entry.Digest == "" && w.entry.ProjectRoot == "" {
		if w.server == "" {
			return nil, nil, nil, nil, &exitError{code: ExitError, err: fmt.Errorf("name the server: --policy POLICY --server NAME (or, as a client entry does, --project-root ROOT --sha256 DIGEST PLANFILE)")}
		}
		proj, plan, plans, err := compileServerOf(w.policy, w.server)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		return proj, plan, plans, args, checkPin(plan, w.pin)
	}
	files, rest := args, []string(nil)
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		files, rest = args[:dash], args[dash:]
	}
	if policyNamed(cmd) || w.server != "" || w.pin != "" || len(files) != 1 || w.entry.Digest == "" || w.entry.ProjectRoot == "" {
		return nil, nil, nil, nil, &exitError{code: ExitError, err: fmt.Errorf("a client entry's run names --project-root ROOT --sha256 DIGEST and one plan file (ROOT/.mcpolicy/plan/SERVER.json), and neither --policy, --server nor --plan")}
	}
	w.entry.PlanFile = files[0]
	plan, plans, err := supervise.ReadPinned(w.entry)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return &project.Project{Root: filepath.Clean(w.entry.ProjectRoot)}, plan, plans, rest, nil
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

// newEgressForwardCmd is the forwarder inside a sandbox; hidden: only
// emitted arguments start it.
func newEgressForwardCmd() *cobra.Command {
	var port int
	var socket string
	var lifeline bool
	cmd := &cobra.Command{
		Use:    "egress-forward --port N --socket PATH [--lifeline] [-- CMD ARGS...]",
		Short:  "Forward the sandbox's loopback port to the egress proxy (run inside the sandbox)",
		Hidden: true,
		Example: `  # what the bwrap backend runs in front of the server (see mcpolicy args SERVER --backend bwrap)
  /.mcpolicy/mcpolicy egress-forward --port 24180 --socket /.mcpolicy/egress.sock -- node server.js`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := supervise.Forward(port, socket, lifeline, args)
			if err != nil {
				return &exitError{code: code, err: err}
			}
			return &errSilent{code: code}
		},
	}
	cmd.Flags().IntVar(&port, "port", 0, "loopback port to listen on")
	cmd.Flags().StringVar(&socket, "socket", sandbox.Socket, "the proxy's unix socket")
	cmd.Flags().BoolVar(&lifeline, "lifeline", false, "exit when the proxy goes away")
	cmd.MarkFlagRequired("port")
	return cmd
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
