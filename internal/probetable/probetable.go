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

	"github.com/mcpolicy/mcpolicy/probe"
)

// Expectation is one attempt and what the confinement must answer.
type Expectation struct {
	Op, Target, Want, Why string
}

// Arg is the attempt as the probe takes it: "op:target".
func (x Expectation) Arg() string { return x.Op + ":" + x.Target }

// Check compares every attempt's result, in order, and fails the test
// with the whole table on any mismatch, a missing answer or an
// unexpected one.
func Check(t testing.TB, what string, expect []Expectation, got []probe.Result) {
	t.Helper()
	bad := len(got) != len(expect)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\top\ttarget\texpected\tgot\twhy")
	for i, x := range expect {
		g, mark := "(missing)", "x"
		if i < len(got) {
			if string(got[i].Op) != x.Op || got[i].Target != x.Target {
				g = fmt.Sprintf("(answer for %s:%s)", got[i].Op, got[i].Target)
			} else if g = got[i].Result; g == x.Want {
				mark = ""
			}
		}
		if mark != "" {
			bad = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", mark, x.Op, x.Target, x.Want, g, x.Why)
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
