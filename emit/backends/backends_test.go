package backends

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/schema"
)

// TestRegistry: names are unique, and a backend that runs another's
// artefacts names one that builds its own.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range All() {
		if seen[b.Name()] {
			t.Errorf("backend %q is registered twice", b.Name())
		}
		seen[b.Name()] = true
		base, err := Lookup(b.Builds())
		if err != nil || base.Builds() != base.Name() {
			t.Errorf("backend %q runs %q's artefacts, which is not a backend that builds its own", b.Name(), b.Builds())
		}
	}
	if _, err := Lookup("firejail"); err == nil || !strings.Contains(err.Error(), "unknown backend") {
		t.Errorf("Lookup of an unknown backend: %v", err)
	}
}

// TestCompilerAgrees: the compiler, which imports no emitter, names the
// default backends as plain data; they must be the registry's.
func TestCompilerAgrees(t *testing.T) {
	for _, name := range append(append([]string{compiler.ImageBackend, compiler.NoNetnsBackend}, compiler.ImageBackends...), compiler.DefaultHostBackends...) {
		if b, err := Lookup(name); err != nil || b.Builds() != name {
			t.Errorf("the compiler names backend %q, which the registry does not build: %v", name, err)
		}
	}
}

// TestSchemaAgrees: a policy may list exactly the backends that build
// their own artefacts.
func TestSchemaAgrees(t *testing.T) {
	m := regexp.MustCompile(`backends\?: \[\.\.\.\(([^)]*)\)\]`).FindStringSubmatch(string(schema.Source()))
	if m == nil {
		t.Fatal("no backends enum in the schema")
	}
	var inSchema []string
	for _, q := range strings.Split(m[1], "|") {
		inSchema = append(inSchema, strings.Trim(strings.TrimSpace(q), `"`))
	}
	var built []string
	for _, b := range All() {
		if b.Builds() == b.Name() {
			built = append(built, b.Name())
		}
	}
	slices.Sort(inSchema)
	slices.Sort(built)
	if !slices.Equal(inSchema, built) {
		t.Errorf("the schema allows backends %v, the registry builds %v", inSchema, built)
	}
}
