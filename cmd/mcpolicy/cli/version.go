package cli

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/internal/buildversion"
	"github.com/mcpolicy/mcpolicy/schema"
	"github.com/spf13/cobra"
)

// version is the build on one line, as reports (lint, vet, check, diff)
// name their tool: "mcpolicy v0.1.0 (commit 0123456789ab, DATE; schema v1)".
// The release build sets the version at link time (docs/release.md).
func version() string {
	i := buildversion.Read()
	return fmt.Sprintf("mcpolicy %s; schema %s, %s", i.Line(), schema.Version, i.Go)
}

// versionText is what `mcpolicy version` and `mcpolicy --version` print:
// the version, the commit, its date, the schema and the toolchain, a line
// each (package buildversion).
func versionText() string {
	return buildversion.Read().Text("mcpolicy", "schema: "+schema.Version)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the mcpolicy version, its commit and date, and the policy schema version",
		Example: "  mcpolicy version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionText())
			return err
		},
	}
}
