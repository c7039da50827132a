package compiler

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// TestPolicyDocProtectedTable: docs/policy.md shows protect.Names, in
// order, with each reason. MCPOLICY_UPDATE=1 rewrites the table.
func TestPolicyDocProtectedTable(t *testing.T) {
	const file = "../docs/policy.md"
	const begin, end = "<!-- protected names: generated from protect.Names;", "<!-- end protected names -->"
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q ... %q", file, begin, end)
	}
	i += strings.Index(s[i:], "\n") + 1
	var b strings.Builder
	b.WriteString("| name | why |\n|---|---|\n")
	for _, n := range protect.Names {
		b.WriteString("| `" + n.Pattern + "` | " + strings.ReplaceAll(n.Reason, "|", `\|`) + " |\n")
	}
	if s[i:j] == b.String() {
		return
	}
	if os.Getenv("MCPOLICY_UPDATE") == "1" {
		if err := os.WriteFile(file, []byte(s[:i]+b.String()+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the protected names table is stale; run MCPOLICY_UPDATE=1 go test ./compiler/ -run TestPolicyDoc\nwant:\n%s", file, b.String())
}
