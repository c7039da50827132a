// Command gen rewrites the weights of a doc (docs/exposure.md) from the
// embedded weights.cue: `go run ./compiler/exposure/gen docs/exposure.md`.
// (Its example breakdown is rewritten by
// `MCPOLICY_UPDATE=1 go test ./compiler/exposure/ -run TestDoc`, which
// checks both.)
package main

import (
	"fmt"
	"os"

	"github.com/mcpolicy/mcpolicy/compiler/exposure"
	"github.com/mcpolicy/mcpolicy/exitcode"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen FILE.md")
		os.Exit(exitcode.Error)
	}
	b, err := os.ReadFile(os.Args[1])
	if err == nil {
		var out string
		if out, err = exposure.Splice(string(b)); err == nil {
			err = os.WriteFile(os.Args[1], []byte(out), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(exitcode.Error)
	}
}
