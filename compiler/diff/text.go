package diff

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/textdiff"
)

// ArtefactDiff is the line diff of one emitted file between two versions.
type ArtefactDiff struct {
	Name string
	Text string // "-old line" / "+new line" / " same line", trimmed to context
}

// Artefacts compares two sets of emitted files (name -> content) and
// returns the line diffs of those that differ, by name.
func Artefacts(old, new map[string][]byte) []ArtefactDiff {
	names := map[string]bool{}
	for n := range old {
		names[n] = true
	}
	for n := range new {
		names[n] = true
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var out []ArtefactDiff
	for _, n := range sorted {
		if string(old[n]) == string(new[n]) {
			continue
		}
		out = append(out, ArtefactDiff{Name: n, Text: lineDiff(string(old[n]), string(new[n]), 3)})
	}
	return out
}

// TextDiff is a line diff of two texts with three lines of context.
func TextDiff(a, b string) string { return lineDiff(a, b, 3) }

// lineDiff renders a line-mode diff with ctx lines of context around each
// change (diffmatchpatch's pretty printer is coloured and character-based).
func lineDiff(a, b string, ctx int) string {
	ls := textdiff.Lines(a, b)
	for i := range ls {
		ls[i].Text = strings.TrimSuffix(ls[i].Text, "\n")
	}
	keep := make([]bool, len(ls))
	for i, l := range ls {
		if l.Op != ' ' {
			for j := max(0, i-ctx); j <= min(len(ls)-1, i+ctx); j++ {
				keep[j] = true
			}
		}
	}
	var b2 strings.Builder
	skipped := false
	for i, l := range ls {
		if !keep[i] {
			skipped = true
			continue
		}
		if skipped {
			b2.WriteString("...\n")
			skipped = false
		}
		fmt.Fprintf(&b2, "%c%s\n", l.Op, l.Text)
	}
	return b2.String()
}
