// Package probetable sets what `mcpolicy probe` answered under an
// engine's confinement beside what the policy says, as one table: the
// engine tests (emit/docker, emit/kubernetes) print it whole on any
// mismatch.
package probetable

import (
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// Row is one attempt and what the confinement must answer, as a test
// writes it (its own struct, so its table stays positional).
type Row interface {
	Row() (op, target, want, why string)
}

// Check compares every attempt's result, in order, and fails the test
// with the whole table on any mismatch, a missing answer or an
// unexpected one.
func Check[R Row](t testing.TB, what string, expect []R, got []probe.Result) {
	t.Helper()
	bad := len(got) != len(expect)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\top\ttarget\texpected\tgot\twhy")
	for i, x := range expect {
		op, target, want, why := x.Row()
		g, mark := "(missing)", "x"
		if i < len(got) {
			if string(got[i].Op) != op || got[i].Target != target {
				g = fmt.Sprintf("(answer for %s:%s)", got[i].Op, got[i].Target)
			} else if g = got[i].Result; g == want {
				mark = ""
			}
		}
		if mark != "" {
			bad = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", mark, op, target, want, g, why)
	}
	for _, r := range got[min(len(got), len(expect)):] {
		fmt.Fprintf(tw, "x\t%s\t%s\t(unexpected)\t%s\t\n", r.Op, r.Target, r.Result)
	}
	tw.Flush()
	if bad {
		t.Errorf("%s: confinement differs from the policy:\n%s", what, b.String())
	} else {
		t.Logf("%s:\n%s", what, b.String())
	}
}
