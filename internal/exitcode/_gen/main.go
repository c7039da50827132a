// Command gen rewrites the exit-code table of a doc (docs/exit-codes.md)
// from exitcode.Table: `go run ./internal/exitcode/_gen docs/exit-codes.md`.
package main

import (
	"github.com/mcpolicy/mcpolicy/internal/exitcode"
	"github.com/mcpolicy/mcpolicy/internal/splicefile"
)

func main() { splicefile.Main(exitcode.Splice) }
