// Command gen rewrites the exit-code table of a doc (docs/exit-codes.md)
// from exitcode.Table: `go run ./exitcode/gen docs/exit-codes.md`.
package main

import (
	"fmt"
	"os"

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
		if out, err = exitcode.Splice(string(b)); err == nil {
			err = os.WriteFile(os.Args[1], []byte(out), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(exitcode.Error)
	}
}
