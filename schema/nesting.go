package schema

import (
	"fmt"

	"cuelang.org/go/cue/ast"
)

// maxNesting bounds how deep objects and lists nest in a CUE, JSON or
// YAML policy, as jsonnetMaxNesting does for Jsonnet's brackets. A
// policy nests five levels (servers, a server, mounts, a mount); CUE's
// evaluation of 10,000 nested objects, which the JSON and YAML readers
// allow, took 20 to 40 s.
const maxNesting = 100

// tooNested reports the first object or list of a policy's syntax nested
// deeper than maxNesting, at its position.
func tooNested(file string, n ast.Node) *Error {
	depth := 0
	var deep ast.Node
	ast.Walk(n, func(n ast.Node) bool {
		if deep != nil {
			return false
		}
		switch n.(type) {
		case *ast.StructLit, *ast.ListLit:
			if depth++; depth > maxNesting {
				deep = n
				return false
			}
		}
		return true
	}, func(n ast.Node) {
		switch n.(type) {
		case *ast.StructLit, *ast.ListLit:
			depth--
		}
	})
	if deep == nil {
		return nil
	}
	return &Error{Pos: posOf(deep.Pos(), file), Msg: fmt.Sprintf("objects and lists nested more than %d deep", maxNesting),
		Hint: "a policy nests a few levels: look for brackets left open, or a value nested in itself"}
}
