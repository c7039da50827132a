package diff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/schema"
)

// compilePolicy compiles a whole policy (no version line) as an example
// shows it; sources need not exist: diff compares policies.
func compilePolicy(t *testing.T, text string, pinTools ...string) []*compiler.Plan {
	t.Helper()
	root := t.TempDir()
	if len(pinTools) > 0 {
		if err := WriteExamplePin(root, pinTools[0]); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(root, "mcpolicy.cue")
	os.WriteFile(file, []byte("version: \"v1\"\n"+text+"\n"), 0o644)
	pol, err := schema.Load(file, root)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	ps, err := compiler.Compile([]*schema.Policy{pol}, compiler.Options{Root: root, Home: root, NoFS: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return ps
}

// TestKindExamples: every kind's example produces that kind with its
// verdict.
func TestKindExamples(t *testing.T) {
	t.Parallel()
	for _, k := range Registry() {
		if k.Old == "" || k.New == "" || k.Means == "" {
			t.Errorf("%s: no example or meaning", k.ID)
			continue
		}
		oldPin, newPin := k.PinExample()
		old, new := compilePolicy(t, k.Old, oldPin), compilePolicy(t, k.New, newPin)
		found := false
		for _, c := range Plans(old, new) {
			if c.Kind == k.ID {
				found = c.Verdict == k.Verdict
			}
		}
		if !found {
			t.Errorf("%s: the example does not produce it (%s):\n%s\n->\n%s\ngot %s", k.ID, k.Verdict, k.Old, k.New, kinds(Plans(old, new)))
		}
	}
}

// TestKindIDs: IDs are unique UPPER_SNAKE and every verdict has its kinds.
func TestKindIDs(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Registry() {
		if seen[k.ID] || strings.ToUpper(k.ID) != k.ID || strings.Contains(k.ID, " ") {
			t.Errorf("bad or duplicate ID %q", k.ID)
		}
		seen[k.ID] = true
		if k.Verdict != Widened && k.Verdict != Narrowed {
			t.Errorf("%s: verdict %q", k.ID, k.Verdict)
		}
	}
}

// TestKindsDocIsCurrent: docs/diff-kinds.md is generated from the registry.
func TestKindsDocIsCurrent(t *testing.T) {
	got, err := os.ReadFile("../../docs/diff-kinds.md")
	if err != nil || string(got) != Markdown() {
		t.Errorf("docs/diff-kinds.md is stale: run `make docs` (go run ./cmd/mcpolicy rules --diff --format markdown > docs/diff-kinds.md) (%v)", err)
	}
}
