package lint_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The official SARIF 2.1.0 schema (OASIS, errata 01) is not vendored here:
// the test fetches the copy that gosec ships in its module, at a pinned
// version, through the Go module proxy (so the checksum database vouches
// for the bytes), and checks the file's own digest before using it.
const (
	sarifSchemaModule = "github.com/securego/gosec/v2@v2.30.0"
	sarifSchemaFile   = "report/sarif/testdata/sarif-schema-2.1.0.json"
	sarifSchemaSHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
	sarifSchemaID     = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)

// officialSARIFSchema compiles the schema, or skips the test when the
// module proxy cannot be reached (never in CI, where it fails instead).
func officialSARIFSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", sarifSchemaModule).Output()
	var mod struct{ Dir, Error string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("fetching %s for the SARIF schema: %v %s", sarifSchemaModule, err, mod.Error)
		}
		t.Skipf("cannot fetch %s (offline?): %v %s", sarifSchemaModule, err, mod.Error)
	}
	raw, err := os.ReadFile(filepath.Join(mod.Dir, sarifSchemaFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != sarifSchemaSHA256 {
		t.Fatalf("%s has sha256 %x, not the pinned official schema", sarifSchemaFile, sum)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := doc.(map[string]any)["id"].(string); id != sarifSchemaID {
		t.Fatalf("schema id %q, want %q", id, sarifSchemaID)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(sarifSchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(sarifSchemaID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSARIFValidatesAgainstTheOfficialSchema runs every rule's bad and
// good example through the SARIF writer and validates each document.
func TestSARIFValidatesAgainstTheOfficialSchema(t *testing.T) {
	schema := officialSARIFSchema(t)

	// The schema is strict enough to fail: a document whose result has a
	// level SARIF does not define is refused.
	bad, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(
		`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"level":"fatal"}]}]}`)))
	if schema.Validate(bad) == nil {
		t.Fatal("the schema accepted a result with level \"fatal\"")
	}

	for _, r := range lint.Registry() {
		for _, e := range []*lint.Example{&r.Bad, &r.Good} {
			if e.Text == "" {
				continue
			}
			var buf bytes.Buffer
			if err := lint.Write(&buf, lint.Run(targets(t, *e), lint.Options{}), "sarif", "test"); err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatalf("%s: %v", r.ID, err)
			}
			if err := schema.Validate(doc); err != nil {
				t.Errorf("%s example: SARIF does not validate: %v\n%s", r.ID, err, buf.String())
			}
		}
	}
}
