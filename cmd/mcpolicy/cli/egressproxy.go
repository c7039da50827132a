package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/credential"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/spf13/cobra"
)

// egressProxyOptions are egress-proxy's flags.
type egressProxyOptions struct {
	streams
	Listen      string
	Policy      string
	PolicyNamed bool
	Server      string   // the server whose allowlist to enforce
	Allow       []string // or these entries
	LogFile     string   // "-" stdout
	LogMax      string
	HostsFile   string
	// Credentials are grants (their JSON, as the plan holds them) whose
	// values, placeholders and session CA are in CredentialsDir.
	Credentials    []string
	CredentialsDir string
}

// newEgressProxyCmd is mcpolicy's egress proxy on TCP: what the egress-proxy
// Pod the kubernetes backend emits runs. The proxy is egress.Proxy, the
// one `mcpolicy run` serves on its unix socket; only the peer check is
// left out, since across Pods there is no peer to check.
func newEgressProxyCmd() *cobra.Command {
	opts := &egressProxyOptions{}
	cmd := &cobra.Command{
		Use:   "egress-proxy --listen ADDR:PORT (-p POLICY --server NAME | --allow HOST:PORT...) [--log FILE|-]",
		Short: "Serve the egress proxy on TCP for one server's allowlist (the kubernetes backend's egress-proxy Pod)",
		Long: `egress-proxy serves mcpolicy's egress proxy — the one mcpolicy run starts, with
the same checks and the same JSON decision log — on a TCP address, for the
allowlist of one server (-p POLICY --server NAME) or the entries given with
--allow (what the kubernetes backend's egress-proxy Pod runs: no policy file
is needed in the Pod). Every request is checked as under mcpolicy run: the
host and port against the allowlist, the resolved addresses against private
ranges (refused unless an entry names the address), a refusal answered 403
with the X-Mcpolicy-Denied header and a JSON body; every decision is a JSON
line on stdout (--log -, the default) or appended to --log FILE.

Who may connect is NOT checked here. mcpolicy run's proxy admits only the
sandbox's processes (the kernel says who connected to its unix socket);
across Pods there is no such answer, so whoever reaches the listening
address can use the proxy's allowlist. In a cluster, the NetworkPolicy the
kubernetes backend emits beside the proxy is what lets only the server's Pod
in: on a CNI that does not enforce NetworkPolicy, any Pod can use the proxy
(and the server is not confined to it either). Outside a cluster, listen on
an address only the client can reach. See docs/kubernetes.md.

With --credential and --credentials-dir the proxy injects credentials as
mcpolicy run's does: the server holds placeholders, and on requests to a
credential's destinations alone the proxy intercepts TLS (under the session
CA it is given, which the server trusts) and puts the value in the bound
header or query parameter. The folder holds what mcpolicy credentials
writes into a Secret: mount it in the proxy's Pod alone. See
docs/credentials.md.`,
		Example: `  # what the egress-proxy Pod of the kubernetes backend runs
  mcpolicy egress-proxy --listen 0.0.0.0:24180 --allow api.github.com:443
  # the allowlist of a server of a policy, decisions appended to a file
  mcpolicy egress-proxy --listen 127.0.0.1:24180 -p . --server github --log egress.jsonl
  # with a credential, its value and the session CA in a Secret mounted at /var/run/mcpolicy/credentials
  mcpolicy egress-proxy --listen 0.0.0.0:24180 --allow api.github.com:443 \
    --credential '{"name":"GITHUB_TOKEN","to":["api.github.com:443"],"as":{"header":"Authorization","format":"Bearer {}"}}' \
    --credentials-dir /var/run/mcpolicy/credentials`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.streams, opts.PolicyNamed = streamsOf(cmd), policyNamed(cmd)
			return egressProxyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "", "TCP address to listen on, ADDR:PORT (required; port 0 picks one, printed on stderr)")
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringVar(&opts.Server, "server", "", "the server whose allowlist to enforce (with -p)")
	cmd.Flags().StringArrayVar(&opts.Allow, "allow", nil, "an allowlist entry, HOST:PORT, *.SUFFIX:PORT or IP:PORT (repeat; instead of -p and --server)")
	cmd.Flags().StringVar(&opts.LogFile, "log", "-", "append the decisions (JSON lines) to this file; - for stdout")
	logMaxFlag(cmd, &opts.LogMax)
	cmd.Flags().StringVar(&opts.HostsFile, "hosts", "", "resolve these names (/etc/hosts format) before DNS; the private-address check still applies")
	cmd.Flags().StringArrayVar(&opts.Credentials, "credential", nil, `a credential grant to inject, as the plan's JSON: {"name":"GITHUB_TOKEN","to":["api.github.com:443"],"as":{"header":"Authorization","format":"Bearer {}"}} (repeat; with --credentials-dir)`)
	cmd.Flags().StringVar(&opts.CredentialsDir, "credentials-dir", "", "the folder holding each --credential's value (file NAME), placeholder (NAME.placeholder) and the session CA (session-ca.crt, session-ca.key): a Secret written by mcpolicy credentials, mounted here alone")
	cmd.MarkFlagRequired("listen")
	return cmd
}

// egressProxyRun serves the proxy on --listen until an interrupt.
func egressProxyRun(ctx context.Context, opts *egressProxyOptions) error {
	list, err := egressProxyAllowlist(opts)
	if err != nil {
		return err
	}
	p := &egress.Proxy{Allow: list, Log: opts.Out}
	if err := egressProxyCredentials(p, opts); err != nil {
		return err
	}
	if p.LogLimit, err = logLimit(opts.LogMax); err != nil {
		return err
	}
	if opts.LogFile != "" && opts.LogFile != "-" {
		f, err := egress.OpenLog(opts.LogFile)
		if err != nil {
			return &exitError{code: ExitError, err: err}
		}
		defer f.Close()
		p.Log = f
	}
	if opts.HostsFile != "" {
		f, err := os.Open(opts.HostsFile)
		if err != nil {
			return &exitError{code: ExitError, err: err}
		}
		p.Resolve, err = egress.HostsResolver(f, nil)
		f.Close()
		if err != nil {
			return &exitError{code: ExitError, err: fmt.Errorf("%s: %v", opts.HostsFile, err)}
		}
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveEgressProxy(ctx, ln, p, opts.Err)
}

// egressProxyCredentials gives p the credentials of --credential, from
// --credentials-dir.
func egressProxyCredentials(p *egress.Proxy, opts *egressProxyOptions) error {
	if (len(opts.Credentials) == 0) != (opts.CredentialsDir == "") {
		return &exitError{code: ExitError, err: errors.New("egress-proxy: --credential and --credentials-dir go together")}
	}
	if len(opts.Credentials) == 0 {
		return nil
	}
	var grants []credential.Grant
	for _, c := range opts.Credentials {
		var g credential.Grant
		dec := json.NewDecoder(strings.NewReader(c))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&g); err != nil || dec.More() {
			return &exitError{code: ExitInvalid, err: fmt.Errorf("egress-proxy: --credential %s: want a grant's JSON: %v", c, err)}
		}
		grants = append(grants, g)
	}
	if err := p.LoadCredentials(opts.CredentialsDir, grants); err != nil {
		return &exitError{code: ExitError, err: fmt.Errorf("egress-proxy: %v", err)}
	}
	return nil
}

// egressProxyAllowlist is the list to enforce: the server's, or --allow's.
func egressProxyAllowlist(opts *egressProxyOptions) (allowlist.List, error) {
	server, allow := opts.Server, opts.Allow
	switch {
	case server != "" && len(allow) > 0:
		return nil, &exitError{code: ExitError, err: errors.New("egress-proxy: give the allowlist once: --server (of -p POLICY) or --allow, not both")}
	case len(allow) > 0:
		if opts.PolicyNamed {
			return nil, &exitError{code: ExitError, err: errors.New("egress-proxy: -p names a policy, but --allow gives the list: give --server, or drop -p")}
		}
		list, err := allowlist.Parse(allow)
		if err != nil {
			return nil, &exitError{code: ExitInvalid, err: err}
		}
		return list, nil
	case server != "":
		_, plan, err := compileServer(opts.Policy, server)
		if err != nil {
			return nil, err
		}
		if plan.Network.Mode != "allowlist" || len(plan.Network.Allow) == 0 {
			return nil, &exitError{code: ExitError, err: fmt.Errorf("server %q has no egress allowlist (network %q): it needs no egress proxy", server, plan.Network.Mode)}
		}
		return plan.Network.Rules(), nil
	}
	return nil, &exitError{code: ExitError, err: errors.New("egress-proxy: give the allowlist: -p POLICY --server NAME, or --allow HOST:PORT")}
}

// serveEgressProxy serves p on ln until ctx ends, then stops accepting,
// ends the open tunnels and returns once every decision is logged.
func serveEgressProxy(ctx context.Context, ln net.Listener, p *egress.Proxy, stderr io.Writer) error {
	var rules []string
	for _, r := range p.Allow {
		rules = append(rules, r.String())
	}
	fmt.Fprintf(stderr, "mcpolicy egress-proxy: listening on %s, allowing %s\n", ln.Addr(), strings.Join(rules, ", "))
	for _, c := range p.Credentials {
		fmt.Fprintf(stderr, "mcpolicy egress-proxy: injecting %s for %s only (TLS intercepted there, under the session CA given)\n", c.Grant.Name, strings.Join(c.Grant.To, ", "))
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-done:
		p.Close()
		return &exitError{code: ExitError, err: err}
	}
	p.Close() // ends the requests, then the tunnels; waits for every decision to be logged
	<-done
	return nil
}
