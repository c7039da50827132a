package cli

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/why"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/spf13/cobra"
)

// whyOptions are why's flags and argument.
type whyOptions struct {
	streams
	Target      string // the argument
	Policy      string
	Server      string // only this server
	Backend     string // only this backend
	Format      string
	HostsFile   string // an /etc/hosts-style table for names
	HostPath    bool   // read an absolute target as a host path
	SandboxPath bool   // or as a sandbox path
	Resolve     bool   // look names up in DNS
}

func newWhyCmd() *cobra.Command {
	opts := &whyOptions{}
	cmd := &cobra.Command{
		Use:   "why TARGET [-p POLICY] [--server S] [--backend B] [--format text|json]",
		Short: "Whether a server can reach a path, a host:port or a variable, through which grant, and what stops it",
		Long: `why answers, for each server of the policy and each backend it is built
for, whether TARGET is reachable: how (read, write, exec, connect), through
which grant (with its file:line:col), and otherwise what stops it (no grant,
a read-only mount, a protected name, the fixed top level of the project,
the read-only root, network none, the egress proxy's allowlist and its
private-address rule).

TARGET is a host path (~/.aws/credentials, src/a.go from the current
folder, /usr/bin/env), a sandbox path (/workspace/.git/config: an absolute
path at or below a mount target or the scratch; /proc/self/exe: /proc is
the server's own procfs on each backend that gives one, never this
machine's), a destination (api.github.com:443), or an environment
variable's name (GITHUB_TOKEN).
--host and --sandbox force how an absolute path is read.

Paths are resolved as the backends resolve them: the deepest mount decides
(a read-only mount inside a read-write one stays read-only), protected
names are read-only at the top of read-write mounts, Landlock and bwrap add
the runtime baseline (docker and podman show the image's own /usr), and
symlinks are followed on this machine where the path exists (the answer
says so). Destinations go through the egress proxy's own matcher; with
--resolve the name is looked up here, as the proxy would, for the
private-address rule (--hosts FILE: an /etc/hosts-style table first, as
mcpolicy run --hosts).`,
		Example: `  mcpolicy why ~/.aws/credentials -p examples/code-index
  mcpolicy why /workspace/.git/config -p examples/code-index
  mcpolicy why api.github.com:443 --format json
  mcpolicy why /proc/self/exe --backend landlock
  mcpolicy why GITHUB_TOKEN --server github`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return missingArg("why", "a TARGET (a path, HOST:PORT or a variable's name)", opts.Policy, func(s string) string {
					return "mcpolicy why TARGET --server " + shellQuote(s) + policyArg(opts.Policy) + ", e.g. mcpolicy why ~/.ssh/id_ed25519" + policyArg(opts.Policy)
				})
			}
			opts.streams, opts.Target = streamsOf(cmd), args[0]
			return whyRun(opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringVar(&opts.Server, "server", "", "only this server")
	cmd.Flags().StringVarP(&opts.Backend, "backend", "b", "", "only this backend (bwrap, landlock, docker, podman, seatbelt)")
	formatFlag(cmd, &opts.Format, "text", "json")
	cmd.Flags().BoolVar(&opts.HostPath, "host", false, "read an absolute TARGET as a host path")
	cmd.Flags().BoolVar(&opts.SandboxPath, "sandbox", false, "read an absolute TARGET as a path inside the sandbox")
	cmd.Flags().BoolVar(&opts.Resolve, "resolve", false, "look a destination's name up here, as the egress proxy would")
	cmd.Flags().StringVar(&opts.HostsFile, "hosts", "", "resolve names from this /etc/hosts-style file first (as mcpolicy run --hosts)")
	return cmd
}

// whyRun answers, for each selected server and backend, whether the
// target is reachable and through what.
func whyRun(opts *whyOptions) error {
	if opts.Format != "text" && opts.Format != "json" {
		return &exitError{code: ExitError, err: fmt.Errorf("--format %q: want text or json", opts.Format)}
	}
	if err := checkBackend("why", opts.Backend, backendsOf("why")); err != nil {
		return err
	}
	if opts.HostPath && opts.SandboxPath {
		return &exitError{code: ExitError, err: fmt.Errorf("--host and --sandbox: give one")}
	}
	proj, plans, err := compileProject(opts.Policy)
	if err != nil {
		return err
	}
	if opts.Server != "" {
		var keep []*compiler.Plan
		for _, p := range plans {
			if p.Server == opts.Server {
				keep = append(keep, p)
			}
		}
		if keep == nil {
			return &exitError{code: ExitError, err: fmt.Errorf("no server %q in %s (servers: %s)", opts.Server, opts.Policy, names(plans))}
		}
		plans = keep
	}
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	m := why.Machine{Machine: compiler.Machine{ProjectRoot: proj.Root, Home: home}, Cwd: cwd, FS: true}
	if m.Resolve, err = opts.resolver(); err != nil {
		return err
	}
	var kind why.Kind
	switch {
	case opts.HostPath:
		kind = why.HostPath
	case opts.SandboxPath:
		kind = why.SandboxPath
	}
	t, err := why.ParseTarget(opts.Target, plans, m, kind)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	a, err := why.Ask(plans, t, m, opts.Backend)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	if opts.Format == "json" {
		return a.JSON(opts.Out)
	}
	return spelling(opts.Out, a.Text)
}

// resolver looks a destination's name up as the proxy would: --hosts's
// table first, then DNS with --resolve. Nil without either: names are
// not looked up.
func (opts *whyOptions) resolver() (func(string) ([]netip.Addr, error), error) {
	if !opts.Resolve && opts.HostsFile == "" {
		return nil, nil
	}
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if !opts.Resolve {
			return nil, fmt.Errorf("not in %s (add --resolve to ask DNS)", opts.HostsFile)
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
	if opts.HostsFile != "" {
		f, err := os.Open(opts.HostsFile)
		if err != nil {
			return nil, &exitError{code: ExitError, err: err}
		}
		lookup, err = egress.HostsResolver(f, lookup)
		f.Close()
		if err != nil {
			return nil, &exitError{code: ExitError, err: err}
		}
	}
	return func(host string) ([]netip.Addr, error) { return lookup(context.Background(), host) }, nil
}
