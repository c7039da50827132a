package cli

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/internal/bytesize"

	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/spf13/cobra"
)

// logMaxFlag is --log-max, the size a decision log stops growing at.
func logMaxFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "log-max", bytesize.Format(egress.DefaultLogLimit), "the size the decision log stops growing at, counting what the file holds already (k, m, g suffixes); 0: no limit. Past it, one line says so and the rest are counted, not written: a server cannot fill the disk with denials")
}

// logLimit reads --log-max as egress.Proxy.LogLimit.
func logLimit(v string) (int64, error) {
	if v == "0" {
		return -1, nil
	}
	n, err := bytesize.Parse(v)
	if err != nil {
		return 0, &exitError{code: ExitError, err: fmt.Errorf("--log-max: %v", err)}
	}
	return n, nil
}
