package cli

import (
	"fmt"
	"os"

	"github.com/mcpolicy/mcpolicy/project"
	"github.com/spf13/cobra"
)

func newHookCmd() *cobra.Command {
	hook := &cobra.Command{
		Use:     "hook",
		Short:   "Manage the git pre-commit hook (for repositories without the pre-commit framework)",
		Example: "  mcpolicy hook install",
	}
	opts := &hookInstallOptions{}
	install := &cobra.Command{
		Use:   "install",
		Short: "Write .git/hooks/pre-commit: vet, build --check, lint and diff against HEAD",
		Long: `install writes a pre-commit hook that fails the commit when a policy is
invalid, .mcpolicy/ is stale, lint finds an error, or a grant widens without
a waiver. An existing hook that is not mcpolicy's is refused unless --force
replaces it or --chain keeps it (as pre-commit.local, run first). With the
pre-commit framework, use this repository's .pre-commit-hooks.yaml instead.`,
		Example: `  mcpolicy hook install
  mcpolicy hook install --chain     # keep the hook you have, run it first`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.streams = streamsOf(cmd)
			return hookInstallRun(opts)
		},
	}
	policyFlag(install, &opts.Path)
	install.Flags().BoolVar(&opts.Force, "force", false, "replace a pre-commit hook that is not mcpolicy's")
	install.Flags().BoolVar(&opts.Chain, "chain", false, "keep an existing hook as pre-commit.local and run it first")
	hook.AddCommand(install)
	return hook
}

// hookInstallOptions are hook install's flags.
type hookInstallOptions struct {
	streams
	Path  string // -p/--policy: the project folder
	Force bool   // replace a hook that is not mcpolicy's
	Chain bool   // keep it, run first
}

// hookInstallRun writes the pre-commit hook, which runs this mcpolicy.
func hookInstallRun(opts *hookInstallOptions) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := policyMissing(opts.Path); err != nil {
		return err
	}
	file, err := project.InstallHook(opts.Path, self, opts.Force, opts.Chain)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	fmt.Fprintf(opts.Out, "wrote %s\n", file)
	return nil
}
