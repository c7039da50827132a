// Command mcpolicy compiles MCP server confinement policies into the
// arguments, profiles and client configs that enforce them.
package main

import (
	"fmt"
	"os"

	"github.com/mcpolicy/mcpolicy/cmd/mcpolicy/cli"
	"github.com/mcpolicy/mcpolicy/launch"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == launch.VerifyMountsArg {
		// Inside a container (mcpolicy run, prove): check the mounts, exec the server.
		err := launch.VerifyMounts(os.Args[2:])
		fmt.Fprintf(os.Stderr, "mcpolicy: refused: %v\n", err)
		os.Exit(launch.ExitTampered)
	}
	os.Exit(cli.Main())
}
