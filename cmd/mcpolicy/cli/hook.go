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
	var path string
	var force, chain bool
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
			self, err := os.Executable()
			if err != nil {
				return err
			}
			file, err := project.InstallHook(path, self, force, chain)
			if err != nil {
				return &exitError{code: ExitError, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", file)
			return nil
		},
	}
	install.Flags().StringVarP(&path, "path", "p", ".", "the project folder (inside a git repository)")
	install.Flags().BoolVar(&force, "force", false, "replace a pre-commit hook that is not mcpolicy's")
	install.Flags().BoolVar(&chain, "chain", false, "keep an existing hook as pre-commit.local and run it first")
	hook.AddCommand(install)
	return hook
}
