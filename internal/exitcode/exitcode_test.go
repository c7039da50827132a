package exitcode_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/exitcode"
)

// TestDocIsCurrent: docs/exit-codes.md's table is generated from Table.
func TestDocIsCurrent(t *testing.T) {
	b, err := os.ReadFile("../../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := exitcode.Splice(string(b))
	if err != nil || want != string(b) {
		t.Errorf("docs/exit-codes.md is stale: run `make docs` (go run ./internal/exitcode/_gen docs/exit-codes.md) (%v)", err)
	}
}

// TestCodesAreUnique: a code names one outcome.
func TestCodesAreUnique(t *testing.T) {
	seen := map[int]bool{}
	for _, c := range exitcode.Table {
		if seen[c.Code] {
			t.Errorf("code %d twice", c.Code)
		}
		seen[c.Code] = true
	}
}

// TestOfWait: a child's code, 128+N for signal N, the error of a wait
// that failed.
func TestOfWait(t *testing.T) {
	for _, c := range []struct {
		script string
		want   int
	}{{"exit 3", 3}, {"exit 0", 0}, {"kill -TERM $$", 128 + 15}} {
		code, err := exitcode.OfWait(exec.Command("/bin/sh", "-c", c.script).Run())
		if err != nil || code != c.want {
			t.Errorf("%s: %d, %v; want %d", c.script, code, err, c.want)
		}
	}
	if _, err := exitcode.OfWait(exec.Command("/nonexistent").Run()); err == nil {
		t.Error("a command that did not start: no error")
	}
}
