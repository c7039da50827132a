package exitcode_test

import (
	"os"
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
		t.Errorf("docs/exit-codes.md is stale: run `make docs` (go run ./internal/exitcode/gen docs/exit-codes.md) (%v)", err)
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
