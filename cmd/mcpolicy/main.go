// Command mcpolicy compiles MCP server confinement policies into the
// arguments, profiles and client configs that enforce them.
package main

import (
	"os"

	"github.com/mcpolicy/mcpolicy/cmd/mcpolicy/cli"
)

func main() {
	os.Exit(cli.Main())
}
