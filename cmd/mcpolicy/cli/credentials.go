package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
	"github.com/spf13/cobra"
)

// credentialsOptions are credentials' flags and argument.
type credentialsOptions struct {
	streams
	Server    string
	Policy    string
	EnvFile   string
	Namespace string
}

// newCredentialsCmd prints the objects that carry a server's credentials
// into a cluster (issue 41).
func newCredentialsCmd() *cobra.Command {
	opts := &credentialsOptions{}
	cmd := &cobra.Command{
		Use:   "credentials SERVER [-p POLICY] [--env-file FILE] [--namespace NS]",
		Short: "Print the Secrets and ConfigMap that carry a server's credentials into a cluster (kubernetes backend)",
		Long: `credentials reads the values of a server's credential grants as mcpolicy run
does (the environment, --env-file, or each grant's command), draws a
placeholder of each value's shape and a session CA constrained to the
credentials' hosts, and prints, for kubectl apply -f -:

  Secret <server>-credentials              the values, placeholders, the CA and its key:
                                           mounted in the egress-proxy Pod alone
  Secret <server>-credential-placeholders  the placeholders: the server's variables
  ConfigMap <server>-session-ca            the CA and the trust bundle (it and this
                                           machine's roots): mounted in the server's Pod

The manifest mcpolicy build writes for the kubernetes backend names these
objects and holds none of their data. Each run draws new placeholders and a
new CA: apply, then restart both Pods. The output holds the values: pipe
it, never commit it (it is not printed on a terminal).`,
		Example: `  GITHUB_TOKEN=... mcpolicy credentials github | kubectl apply -f -
  mcpolicy credentials github --env-file ~/.config/mcpolicy/github.env --namespace tools | kubectl apply -f -`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return missingArg("credentials", "a SERVER", opts.Policy, func(s string) string {
					return "mcpolicy credentials " + shellQuote(s) + policyArg(opts.Policy) + " | kubectl apply -f -"
				})
			}
			opts.streams, opts.Server = streamsOf(cmd), args[0]
			return credentialsRun(opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringVar(&opts.EnvFile, "env-file", "", "take values the environment does not set from this file (NAME=value lines, mode 600, outside every grant)")
	cmd.Flags().StringVar(&opts.Namespace, "namespace", "", "the objects' namespace (default: kubectl's context)")
	return cmd
}

// credentialsRun reads the values, draws the placeholders and the CA and
// prints the objects.
func credentialsRun(opts *credentialsOptions) error {
	if err := absEnvFile(&opts.EnvFile); err != nil {
		return err
	}
	proj, plan, plans, err := compileServerOf(opts.Policy, opts.Server)
	if err != nil {
		return err
	}
	if len(plan.Credentials) == 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("server %q has no credentials: nothing to carry", plan.Server)}
	}
	if !slices.ContainsFunc(plan.Backends, backendtraits.InCluster) {
		return &exitError{code: ExitError, err: fmt.Errorf("server %q does not list the kubernetes backend (backends: %s): its credentials are drawn by mcpolicy run at each spawn, and no manifest reads these objects; add \"kubernetes\" to its backends to run it in a cluster", plan.Server, strings.Join(plan.Backends, ", "))}
	}
	// Checked before any value is read (a command run): nothing to print it on.
	if isTerminal(opts.Out) {
		return &exitError{code: ExitError, err: errors.New("credentials: the output holds the credentials' values: pipe it (| kubectl apply -f -) rather than print it on a terminal")}
	}
	home, _ := os.UserHomeDir()
	if out, ok := outputFile(opts.Out); ok {
		if err := clientcfg.CredentialsOutsideProject(plans, out, proj.Root, home); err != nil {
			return &exitError{code: ExitError, err: err}
		}
	}
	o := kubernetes.Options{Namespace: opts.Namespace}
	// Before a value is read (a command may prompt): what would refuse it after.
	if err := kubernetes.CheckCredentials(plan, o); err != nil {
		return err
	}
	machine := compiler.Machine{ProjectRoot: proj.Root, Home: home, Invoker: compiler.CurrentUser()}
	environ, err := serverEnviron(plans, plan, machine, opts.EnvFile)
	if err != nil {
		return err
	}
	given, err := supervise.DrawGiven(plan.Server, plan.Credentials, environ)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	d := kubernetes.Drawn{Values: map[string]string{}, Placeholders: map[string]string{},
		CACert: given.CACert, CAKey: given.CAKey, Bundle: given.Bundle}
	for _, c := range given.Credentials {
		d.Values[c.Grant.Name], d.Placeholders[c.Grant.Name] = c.Value, c.Placeholder
	}
	out, err := kubernetes.CredentialManifest(plan, o, d)
	if err != nil {
		return err
	}
	_, err = opts.Out.Write(out)
	return err
}

// outputFile is the path of the regular file w writes to (stdout
// redirected to a file), where the system says it.
func outputFile(w io.Writer) (string, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return "", false
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || !filepath.IsAbs(p) {
		return "", false
	}
	return p, true
}
