// Package splicefile is the body of the doc generators (exitcode/_gen,
// compiler/exposure/_gen): rewrite the generated part of one markdown file
// in place, leaving the prose around it.
package splicefile

import (
	"fmt"
	"os"
)

// Main rewrites the file named by the one argument with splice, or exits 1
// saying why.
func Main(splice func(doc string) (string, error)) {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen FILE.md")
		os.Exit(1)
	}
	b, err := os.ReadFile(os.Args[1])
	if err == nil {
		var out string
		if out, err = splice(string(b)); err == nil {
			err = os.WriteFile(os.Args[1], []byte(out), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
