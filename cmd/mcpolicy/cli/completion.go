package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/evidence/prove"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// backendsOf are the backends a command's --backend accepts: what
// checkBackend holds it to, and what completion offers.
func backendsOf(command string) []string {
	switch command {
	case "run":
		return backendNames(supervise.Backends())
	case "prove":
		return prove.Backends
	}
	return registry.Names()
}

// shells are the shells cobra writes a completion script for.
var shells = []string{"bash", "zsh", "fish", "powershell"}

// completeCommands teaches shell completion mcpolicy's names: a
// policy's servers (args, explain, --server), client targets (client),
// each command's backends (--backend) and formats (--format). A
// completion for a shell cobra has no script for is an error that names
// the shells it has.
// It runs once the root's streams are set: cobra's completion command
// prints to those it finds then.
func completeCommands(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(c *cobra.Command, args []string) error {
				if len(args) == 0 {
					return c.Help()
				}
				return &exitError{code: ExitError, err: fmt.Errorf("completion %s: not supported; mcpolicy completes in %s (mcpolicy completion SHELL --help says how to load it)", args[0], orList(shells))}
			}
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		name := strings.TrimPrefix(c.CommandPath(), "mcpolicy ")
		switch name {
		case "args":
			c.ValidArgsFunction = serverArgs(1)
		case "explain":
			c.ValidArgsFunction = serverArgs(-1)
		case "client":
			c.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				var out []string
				for _, cl := range clientcfg.Clients {
					out = append(out, cl.Name)
				}
				return out, cobra.ShellCompDirectiveNoFileComp
			}
		}
		if c.Flags().Lookup("server") != nil {
			c.RegisterFlagCompletionFunc("server", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
				return policyServers(c), cobra.ShellCompDirectiveNoFileComp
			})
		}
		if c.Flags().Lookup("backend") != nil {
			backends := backendsOf(name)
			c.RegisterFlagCompletionFunc("backend", cobra.FixedCompletions(backends, cobra.ShellCompDirectiveNoFileComp))
		}
		if f := c.Flags().Lookup("format"); f != nil {
			c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(formatsOf(f), cobra.ShellCompDirectiveNoFileComp))
		}
	}
	walk(root)
}

// formatsOf are the formats a --format flag takes: those formatFlag
// recorded (the grammar's vocabulary).
func formatsOf(f *pflag.Flag) []string { return f.Annotations[annFormats] }

// serverArgs completes up to n arguments (-1: any number) with the
// servers of the command's policy not given yet.
func serverArgs(n int) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if n >= 0 && len(args) >= n {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, s := range policyServers(c) {
			if !slices.Contains(args, s) {
				out = append(out, s)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// policyServers are the servers of the policy the command line names
// (-p, default the current folder); none when it does not compile.
func policyServers(c *cobra.Command) []string {
	policy := "."
	for _, name := range []string{"policy", "path"} {
		if f := c.Flags().Lookup(name); f != nil && f.Changed {
			policy = f.Value.String()
		}
	}
	_, plans, err := compileProject(policy)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range plans {
		out = append(out, p.Server)
	}
	return out
}
