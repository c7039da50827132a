package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/mcpolicy/mcpolicy/schema"
	"github.com/spf13/cobra"
)

// Version is set at link time (-ldflags "-X ...cli.Version=v1.2.3"); otherwise
// the module version from the build info is used.
var Version = ""

func version() string {
	v := Version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	return fmt.Sprintf("mcpolicy %s (schema %s, %s)", v, schema.Version, runtime.Version())
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the mcpolicy version and the policy schema version",
		Example: "  mcpolicy version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), version())
			return nil
		},
	}
}
