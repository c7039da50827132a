package lint_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestDiffSARIFValidates: diff's changes go through the same printer as
// lint's findings, so each kind's example, and a waived widening, must
// make a SARIF document the official schema accepts, and a widening must
// be an error result and a GitHub error annotation.
func TestDiffSARIFValidates(t *testing.T) {
	schema := officialSARIFSchema(t)
	compile := func(text, pin string) []*compiler.Plan {
		root := t.TempDir()
		if err := diff.WriteExamplePin(root, pin); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(root, "a", "b"), 0o755) // the examples' sources
		os.MkdirAll(filepath.Join(root, "b"), 0o755)
		os.WriteFile(filepath.Join(root, "mcpolicy.cue"), []byte("version: \"v1\"\n"+text+"\n"), 0o644)
		proj, err := project.Discover(root)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := proj.Compile(root)
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		return ps
	}
	for _, k := range diff.Registry() {
		oldPin, newPin := k.PinExample()
		cs := diff.Plans(compile(k.Old, oldPin), compile(k.New, newPin))
		if k.ID == "MOUNT_RW" {
			cs[0].Waived = "the indexer writes its cache"
		}
		var buf bytes.Buffer
		if err := diff.Write(&buf, cs, "sarif", false, "test"); err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", k.ID, err)
		}
		if err := schema.Validate(doc); err != nil {
			t.Errorf("%s example: SARIF does not validate: %v\n%s", k.ID, err, buf.String())
		}
		if !strings.Contains(buf.String(), `"ruleId": "`+k.ID+`"`) {
			t.Errorf("%s: no result", k.ID)
		}
		buf.Reset()
		diff.Write(&buf, cs, "github", false, "test")
		if want := "::error "; k.Verdict == diff.Widened && k.ID != "MOUNT_RW" && !strings.Contains(buf.String(), want) {
			t.Errorf("%s: no error annotation:\n%s", k.ID, buf.String())
		}
	}
}
