// Command gen rewrites the weights of a doc (docs/exposure.md) from the
// embedded weights.cue: `go run ./compiler/exposure/_gen docs/exposure.md`.
// (Its example breakdown is rewritten by
// `MCPOLICY_UPDATE=1 go test ./compiler/exposure/ -run TestDoc`, which
// checks both.)
package main

import (
	"github.com/mcpolicy/mcpolicy/compiler/exposure"
	"github.com/mcpolicy/mcpolicy/internal/splicefile"
)

func main() { splicefile.Main(exposure.Splice) }
