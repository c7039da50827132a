package cli

import (
	"io"

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
			return probeRun(cmd.OutOrStdout(), args)
		},
	}
}

// probeRun makes the attempts in order and prints what each got; one that
// does not parse ends it with an error, nothing printed.
func probeRun(out io.Writer, attempts []string) error {
	var rs []probe.Result
	for _, a := range attempts {
		at, err := probe.ParseAttempt(a)
		if err != nil {
			return err
		}
		rs = append(rs, probe.Run(at))
	}
	return probe.Encode(out, rs)
}
