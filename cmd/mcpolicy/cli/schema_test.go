package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/schema"
)

// TestSchemaFormats: cue prints the schema as written (the default),
// jsonschema the generated JSON Schema, anything else is refused.
func TestSchemaFormats(t *testing.T) {
	code, out, errs := run(t, "schema")
	if code != ExitOK || out != string(schema.Source()) {
		t.Fatalf("schema: exit %d, stderr %s", code, errs)
	}
	if code, out, _ = run(t, "schema", "--format", "cue"); code != ExitOK || out != string(schema.Source()) {
		t.Fatalf("schema --format cue: exit %d", code)
	}
	code, out, errs = run(t, "schema", "-f", "jsonschema")
	want, err := schema.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitOK || out != string(want) {
		t.Fatalf("schema -f jsonschema: exit %d, stderr %s", code, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("not a JSON Schema (%v): %.200s", err, out)
	}
	code, out, errs = run(t, "schema", "--format", "xml")
	if code != ExitError || out != "" || !strings.Contains(errs, `"xml"`) || !strings.Contains(errs, "jsonschema") {
		t.Errorf("--format xml: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	if bytes.Contains([]byte(errs), []byte("#Policy")) {
		t.Error("an error printed the schema")
	}
}
