package suggest

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/textdiff"
)

// Unified is a unified diff (3 lines of context) from a to b, with the
// headers `--- a/NAME` and `+++ b/NAME`, as git diff writes them: `git
// apply` and `patch -p1` read it from the folder NAME is relative to.
// Empty when a and b are the same.
func Unified(name string, a, b []byte) string {
	if string(a) == string(b) {
		return ""
	}
	ls := textdiff.Lines(string(a), string(b))
	const ctx = 3
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", name, name)
	// Hunks: runs of changes with ctx lines around, merged when close.
	oldLine, newLine := 1, 1 // numbers of ls[i] in each version
	nums := make([][2]int, len(ls))
	for i, l := range ls {
		nums[i] = [2]int{oldLine, newLine}
		if l.Op != '+' {
			oldLine++
		}
		if l.Op != '-' {
			newLine++
		}
	}
	for i := 0; i < len(ls); {
		if ls[i].Op == ' ' {
			i++
			continue
		}
		start := max(0, i-ctx)
		end := i
		for j := i; j < len(ls); j++ {
			if ls[j].Op != ' ' {
				end = j
			} else if j-end > 2*ctx {
				break
			}
		}
		stop := min(len(ls), end+ctx+1)
		var oldN, newN int
		for _, l := range ls[start:stop] {
			if l.Op != '+' {
				oldN++
			}
			if l.Op != '-' {
				newN++
			}
		}
		oldStart, newStart := nums[start][0], nums[start][1]
		if oldN == 0 {
			oldStart--
		}
		if newN == 0 {
			newStart--
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", span(oldStart, oldN), span(newStart, newN))
		for _, l := range ls[start:stop] {
			out.WriteByte(l.Op)
			out.WriteString(l.Text)
			if !strings.HasSuffix(l.Text, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
	return out.String()
}

func span(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
