package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cuejson "cuelang.org/go/encoding/json"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// policyName is a policy file's name in a test archive: the project's
// mcpolicy.EXT or a file of its mcpolicy.d/.
var policyName = regexp.MustCompile(`^(mcpolicy|mcpolicy\.d/[^/]+)\.(cue|json|ya?ml|jsonnet)$`)

// compiledJSONSchema is JSONSchema compiled by a JSON Schema validator
// that is not CUE's (format assertions off, as editors do).
func compiledJSONSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mcpolicy.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mcpolicy.schema.json")
	if err != nil {
		t.Fatalf("the JSON Schema does not compile: %v", err)
	}
	return s
}

// TestJSONSchemaShape: draft 2020-12, titled, the same bytes each time,
// #Policy's fields and definitions, closed, and descriptions from the
// schema's comments.
func TestJSONSchemaShape(t *testing.T) {
	a, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := JSONSchema()
	if !bytes.Equal(a, b) {
		t.Fatal("two generations differ")
	}
	var s struct {
		Schema               string         `json:"$schema"`
		Title                string         `json:"title"`
		Required             []string       `json:"required"`
		AdditionalProperties *bool          `json:"additionalProperties"`
		Properties           map[string]any `json:"properties"`
		Defs                 map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(a, &s); err != nil {
		t.Fatal(err)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" || !strings.Contains(s.Title, "mcpolicy") {
		t.Errorf("$schema %q, title %q", s.Schema, s.Title)
	}
	if !slices.Contains(s.Required, "version") || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("version not required, or the policy not closed: required %v", s.Required)
	}
	for _, k := range []string{"version", "servers"} {
		if s.Properties[k] == nil {
			t.Errorf("no property %q", k)
		}
	}
	for _, d := range []string{"Server", "Mount", "Scratch", "Egress", "Limits", "Waiver"} {
		if s.Defs[d] == nil {
			t.Errorf("no definition %q", d)
		}
	}
	if !bytes.Contains(a, []byte(`"description": "\"ro\" unless the server must write."`)) {
		t.Error("the schema's comments are not the descriptions")
	}
	compiledJSONSchema(t)

	// Editors read draft-07 fully and 2020-12 in part (VS Code's JSON
	// service, yaml-language-server): the schema uses draft-07's keywords
	// only, with $defs (a JSON pointer's target wherever it is) and
	// prefixItems [true] (says nothing), so it means the same to them.
	draft7 := map[string]bool{"$schema": true, "$ref": true, "$defs": true, "title": true, "description": true, "type": true,
		"properties": true, "additionalProperties": true, "required": true, "items": true, "minItems": true, "maxItems": true,
		"enum": true, "const": true, "pattern": true, "not": true, "allOf": true, "anyOf": true, "oneOf": true,
		"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "default": true,
		"patternProperties": true, "minLength": true, "maxLength": true, "uniqueItems": true}
	var walk func(v any, names bool)
	walk = func(v any, names bool) { // names: v's keys are property names, not keywords
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				switch {
				case names:
				case k == "prefixItems":
					if l, ok := e.([]any); !ok || slices.ContainsFunc(l, func(x any) bool { return x != true }) {
						t.Errorf("prefixItems %v: not [true...]", e)
					}
				case !draft7[k]:
					t.Errorf("keyword %q: not draft-07's", k)
				}
				walk(e, !names && (k == "properties" || k == "$defs" || k == "patternProperties"))
			}
		case []any:
			for _, e := range v {
				walk(e, false)
			}
		}
	}
	var doc any
	json.Unmarshal(a, &doc)
	walk(doc, false)
}

// TestJSONSchemaAgreesWithCUE: every policy of the repository's tests —
// the examples, the golden and exposure archives, the lint corpus's
// projects, this package's plain and invalid policies — is accepted by
// the JSON Schema exactly when the CUE schema accepts it as JSON. A policy
// that is not data (a syntax error, an import, a file of no object) is
// neither's to judge and is left out; what the loader checks in Go
// beyond the schema (a missing path, a server declared twice) is not the
// JSON Schema's either, so those invalid cases are valid data.
func TestJSONSchemaAgreesWithCUE(t *testing.T) {
	js := compiledJSONSchema(t)
	dir := t.TempDir()
	type policy struct {
		name, file string
		src        []byte
	}
	var policies []policy
	add := func(name, file string, src []byte) {
		policies = append(policies, policy{name, file, src})
	}
	examples, _ := filepath.Glob("../examples/*/mcpolicy.*")
	for _, e := range examples {
		src, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		add(e, e, src)
	}
	var archives []string
	for _, g := range []string{"../golden/testdata/*.txtar", "../compiler/exposure/testdata/*.txtar", "../compiler/lint/testdata/corpus/*.txtar"} {
		m, _ := filepath.Glob(g)
		archives = append(archives, m...)
	}
	for _, c := range archives {
		a, err := txtar.ParseFile(c)
		if err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(dir, filepath.Base(filepath.Dir(c)), strings.TrimSuffix(filepath.Base(c), ".txtar"))
		for _, f := range a.Files { // on disk: Jsonnet imports its libraries
			p := filepath.Join(root, f.Name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range a.Files {
			if policyName.MatchString(f.Name) {
				add(filepath.Base(c)+"/"+f.Name, filepath.Join(root, f.Name), f.Data)
			}
		}
	}
	for _, m := range []map[string]string{plainPolicies, notPlainPolicies, invalidPolicies} {
		for name, src := range m {
			add("plain_test.go/"+name, filepath.Join(dir, name), []byte(src))
		}
	}
	sort.Slice(policies, func(i, j int) bool { return policies[i].name < policies[j].name })

	ctx := cuecontext.New()
	policyDef := compileSchema(ctx, "#Policy").LookupPath(cue.MakePath(cue.Def("#Policy")))
	var accepted, rejected, notData []string
	for _, p := range policies {
		data, _, errs := parseData(ctx, p.file, trimBOM(p.src), filepath.Dir(p.file))
		if errs != nil || rootKind(p.file, p.src, data) != nil {
			notData = append(notData, p.name)
			continue
		}
		raw, err := data.MarshalJSON()
		if err != nil { // not concrete: a CUE expression, not data
			notData = append(notData, p.name)
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		// Both judge the policy's JSON: what CUE alone can write (bytes,
		// a reference) is not in it.
		expr, err := cuejson.Extract(p.name, raw)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		cueErr := policyDef.Unify(ctx.BuildExpr(expr)).Validate(cue.Concrete(true))
		jsErr := js.Validate(doc)
		switch {
		case cueErr == nil && jsErr != nil:
			t.Errorf("%s: the JSON Schema refuses a policy the CUE schema accepts: %v\n%s", p.name, jsErr, raw)
		case cueErr != nil && jsErr == nil:
			t.Errorf("%s: the JSON Schema accepts a policy the CUE schema refuses (%v):\n%s", p.name, cueErr, raw)
		case jsErr == nil:
			accepted = append(accepted, p.name)
		default:
			rejected = append(rejected, p.name)
		}
	}
	t.Logf("not data: %v", notData)
	t.Logf("invalid, but not by the schema (the loader's Go checks): %v", slices.DeleteFunc(slices.Clone(accepted), func(s string) bool { return !strings.HasPrefix(s, "invalid_") }))
	t.Logf("%d policies: %d accepted, %d rejected by both schemas, %d not data", len(policies), len(accepted), len(rejected), len(notData))

	// The corpus is what it was when this test was written, or larger: a
	// glob that finds nothing fails here, not silently.
	if len(accepted) < 80 || len(rejected) < 25 {
		t.Errorf("only %d accepted and %d rejected: the corpus shrank", len(accepted), len(rejected))
	}
	for _, must := range []string{
		"../examples/code-index/mcpolicy.cue", "yaml_input.txtar/mcpolicy.yaml", "json_input.txtar/mcpolicy.json",
		"jsonnet_input.txtar/mcpolicy.jsonnet", "plain_test.go/bad-user.yaml",
	} {
		if !slices.Contains(accepted, must) && !slices.Contains(rejected, must) {
			t.Errorf("%s was not judged", must)
		}
	}
	for _, must := range []string{ // the golden cases of schema errors, and this package's
		"invalid_unknown_field.txtar/mcpolicy.cue", "invalid_wrong_type.txtar/mcpolicy.cue", "invalid_missing_version.txtar/mcpolicy.cue",
		"invalid_unbounded_tmpfs.txtar/mcpolicy.cue", "invalid_image_flag.txtar/mcpolicy.cue", "invalid_env_value.txtar/mcpolicy.cue",
		"plain_test.go/unknown-nested.cue", "plain_test.go/wrong-version.json", "plain_test.go/bad-user.yaml", "plain_test.go/pids-float.cue",
	} {
		if !slices.Contains(rejected, must) {
			t.Errorf("%s: not rejected by the JSON Schema", must)
		}
	}
}
