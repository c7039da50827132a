package compiler

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/baseline"
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

// TestPolicyDocPacks: docs/policy.md shows every runtime pack, entry by
// entry with its reason, as the schema's #Packs holds them.
// MCPOLICY_UPDATE=1 rewrites the tables.
func TestPolicyDocPacks(t *testing.T) {
	var b strings.Builder
	for _, name := range baseline.PackNames() {
		k, err := baseline.PackNamed(name)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n`%s`: %s.\n\n| | entry | why |\n|---|---|---|\n", name, k.Why)
		cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
		for _, p := range k.Paths {
			fmt.Fprintf(&b, "| read-only | `%s` | %s |\n", p.Path, cell(p.Why))
		}
		for _, e := range k.Env {
			fmt.Fprintf(&b, "| env | `%s=%s` | %s |\n", e.Name, e.Value, cell(e.Why))
		}
		for _, c := range k.Caches {
			fmt.Fprintf(&b, "| cache | `%s`, %s | %s |\n", c.Target, c.Size, cell(c.Why))
		}
		if k.Proc {
			fmt.Fprintf(&b, "| proc | its own `/proc` | %s |\n", cell(k.ProcWhy))
		}
	}
	b.WriteString("\n")
	checkDocPart(t, "../docs/policy.md", "<!-- runtime packs: generated from the schema's #Packs;", "<!-- end runtime packs -->", b.String(), "TestPolicyDocPacks")
}

// checkDocPart compares the part of file between the line holding begin
// and end with want; MCPOLICY_UPDATE=1 rewrites it.
func checkDocPart(t *testing.T, file, begin, end, want, test string) {
	t.Helper()
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
	if s[i:j] == want {
		return
	}
	if os.Getenv("MCPOLICY_UPDATE") == "1" {
		if err := os.WriteFile(file, []byte(s[:i]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: a generated part is stale; run MCPOLICY_UPDATE=1 go test ./compiler/ -run %s\nwant:\n%s", file, test, want)
}
