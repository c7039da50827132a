// Package cli holds mcpolicy's cobra commands: each parses flags, calls a
// library package and prints. Nothing here decides policy.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/exitcode"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/schema"
	"github.com/spf13/cobra"
)

// Exit codes: the one table is package exitcode (docs/exit-codes.md is
// generated from it); these names are the commands' shorthand.
const (
	ExitOK          = exitcode.OK
	ExitError       = exitcode.Error
	ExitInvalid     = exitcode.Invalid
	ExitStale       = exitcode.Stale
	ExitUnsupported = exitcode.Unsupported
	ExitFindings    = exitcode.Findings
	ExitWidened     = exitcode.Widened
	ExitDisagrees   = exitcode.Disagrees
	ExitTampered    = exitcode.Tampered
)

// exitError carries an exit code for an error already worth printing.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// errSilent ends a command with a code after it printed its own report.
type errSilent struct{ code int }

func (e *errSilent) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Main runs mcpolicy with os.Args and returns the exit code.
func Main() int {
	if len(os.Args) > 1 && os.Args[1] == launch.Stage2Arg {
		launch.Stage2() // inside the namespaces `mcpolicy exec` made; never returns
	}
	if len(os.Args) > 2 && os.Args[1] == launch.RelayArg {
		launch.Relay(os.Args[2]) // between a terminal and a server's pipe; never returns
	}
	return Run(os.Args[1:], os.Stdout, os.Stderr)
}

// Run runs mcpolicy with args, printing to stdout and stderr.
func Run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmdFor(args)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if len(root.Commands()) > 1 { // every command: help, completion, ...
		completeCommands(root)
	}
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var silent *errSilent
	if errors.As(err, &silent) {
		return silent.code
	}
	var se schema.Errors
	var ne *emit.NotEnforceableError
	if errors.As(err, &se) || (errors.As(err, &ne) && ne.Field != "") {
		fmt.Fprintln(stderr, spellText(err.Error())) // already file:line:col: field: message, one per line
	} else {
		fmt.Fprintf(stderr, "mcpolicy: %s\n", spellText(err.Error()))
	}
	return exitCode(err)
}

func exitCode(err error) int {
	var se schema.Errors
	var ne *emit.NotEnforceableError
	var ue *emit.UnsafeStringError
	var ee *exitError
	var te *launch.TamperError
	var he *hostfile.TamperedError
	var lu *launch.UnsupportedError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &te), errors.As(err, &he):
		return ExitTampered
	case errors.As(err, &lu):
		return ExitUnsupported
	case errors.As(err, &se), errors.As(err, &ne), errors.As(err, &ue):
		return ExitInvalid
	}
	return ExitError
}

// subcommands are mcpolicy's commands, in the order help lists them, by
// name (a test holds each name to its command's).
var subcommands = []struct {
	name string
	new  func() *cobra.Command
}{
	{"build", newBuildCmd}, {"vet", newVetCmd}, {"explain", newExplainCmd}, {"version", newVersionCmd},
	{"schema", newSchemaCmd}, {"args", newArgsCmd}, {"exec", newExecCmd}, {"doctor", newDoctorCmd},
	{"check-profile", newCheckProfileCmd}, {"lint", newLintCmd}, {"rules", newRulesCmd}, {"diff", newDiffCmd},
	{"hook", newHookCmd}, {"prove", newProveCmd}, {"client", newClientCmd}, {"check", newCheckCmd},
	{"probe", newProbeCmd}, {"run", newRunCmd}, {"egress-forward", newEgressForwardCmd}, {"why", newWhyCmd},
	{"suggest", newSuggestCmd}, {"egress-proxy", newEgressProxyCmd}, {"sessions", newSessionsCmd},
	{"import", newImportCmd}, {"pin", newPinCmd}, {"credentials", newCredentialsCmd},
}

// newRootCmd is the root command with every subcommand.
func newRootCmd() *cobra.Command { return newRootCmdFor(nil) }

// newRootCmdFor is the root command with the subcommands args may run:
// the one args[0] names, or every one when it names none (help,
// completion, a flag, a mistyped name to suggest for). Building every
// command and its flags was a tenth of a one-server build's own work.
func newRootCmdFor(args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   "mcpolicy",
		Short: "Compile MCP server confinement policies into enforceable sandboxes",
		Long: `mcpolicy turns a reviewed policy (CUE, JSON, YAML or Jsonnet) into the
confinement that spawns each local MCP server — docker/podman run
arguments, a bubblewrap launch, a Landlock ruleset, a macOS seatbelt
profile — and the client entries that start it through mcpolicy-launch,
which refuses (exit 8) anything but what was reviewed.

A policy only subtracts by default: a server that declares nothing gets no
network, a read-only root, no capabilities, no new privileges, a non-root
user and no mounts. Every addition is an explicit, counted grant.`,
		Example: `  mcpolicy build                 # compile ./mcpolicy.cue into ./.mcpolicy/
  mcpolicy build --check         # exit 3 if .mcpolicy/ is stale
  mcpolicy explain code-index    # the grants of one server, numbered
  mcpolicy vet examples/code-index`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       "-", // printed by the template, which reads the build info only then
		// Deprecated aliases are named, --format is checked (grammar.go).
		PersistentPreRunE: checkGrammar,
	}
	// Without the -v cobra would give it: -v is --verbose (grammar.go).
	root.Flags().Bool("version", false, "the version (as mcpolicy version)")
	root.SetVersionTemplate(`{{mcpolicyVersion}}`)
	// Help is folded at a terminal's width, as explain is (wrap.go).
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		out := c.OutOrStdout()
		wrapping(out, func(w io.Writer) error {
			c.SetOut(w)
			defer c.SetOut(out)
			help(c, args)
			return nil
		})
	})
	for _, c := range subcommands {
		if len(args) > 0 && args[0] == c.name {
			root.AddCommand(c.new())
			return root
		}
	}
	for _, c := range subcommands {
		root.AddCommand(c.new())
	}
	return root
}

func init() { cobra.AddTemplateFunc("mcpolicyVersion", versionText) }

// streams are where a command reads and prints: its cobra command's, so
// tests capture them. Each command's options carry them into its run
// function.
type streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

func streamsOf(cmd *cobra.Command) streams {
	return streams{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr()}
}
