package lint_test

import (
	"bytes"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/internal/findings/sariftest"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// officialSARIFSchema is the official SARIF 2.1.0 schema (OASIS, errata
// 01), the copy in internal/findings/sariftest (its source and digest are
// noted there).
func officialSARIFSchema(t *testing.T) *jsonschema.Schema { return sariftest.Schema(t) }

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
