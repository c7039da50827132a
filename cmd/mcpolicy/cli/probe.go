package cli

import (
	"github.com/mcpolicy/mcpolicy/runtime/probe"
	_ "github.com/mcpolicy/mcpolicy/runtime/probe/fetch" // the fetch op
	"github.com/spf13/cobra"
)

// newProbeCmd is hidden: tests run it inside a sandbox in place of the
// server. It prints one JSON line per attempt and always exits 0 once the
// attempts are parsed: a denial is a result, not a failure.
func newProbeCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "probe OP:TARGET...",
		Short:   "Attempt accesses and print what the kernel answered (used by tests)",
		Hidden:  true,
		Example: `  mcpolicy probe read:/root/.aws/credentials write:/workspace/.git/config connect:10.0.2.2:8080`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rs []probe.Result
			for _, a := range args {
				at, err := probe.ParseAttempt(a)
				if err != nil {
					return err
				}
				rs = append(rs, probe.Run(at))
			}
			return probe.Encode(cmd.OutOrStdout(), rs)
		},
	}
}
