// Package source holds positions in policy files. It is a leaf: every layer
// (loader, compiler, emitters, printers) may import it without pulling in
// the loader.
package position

import "fmt"

// Pos is a position in a policy file. Line and Col are 1-based; zero means unknown.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

func (p Pos) String() string {
	switch {
	case p.File == "":
		return "-"
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}
