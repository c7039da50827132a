// Package textdiff splits a line-mode diff of two texts into lines marked
// ' ', '-' or '+': what diff --artefacts prints and suggest's patches are
// made of.
package textdiff

import (
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Line is one line of a diff: its op (' ', '-' or '+') and its text, with
// its "\n" when it has one.
type Line struct {
	Op   byte
	Text string
}

// Lines diffs a and b line by line.
func Lines(a, b string) []Line {
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
	var ls []Line
	for _, d := range diffs {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for _, l := range strings.SplitAfter(d.Text, "\n") {
			if l != "" {
				ls = append(ls, Line{op, l})
			}
		}
	}
	return ls
}
