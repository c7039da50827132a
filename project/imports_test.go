package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJsonnetLibraryAServerCanWriteIsRefused is the red team's case: a
// Jsonnet policy grants the project read-write and imports a library the
// server can therefore rewrite, as it did, with a home folder grant. The
// build must refuse the import, not compile the grant. Moved under
// mcpolicy.d/, the library is read, and not taken for a policy itself.
func TestJsonnetLibraryAServerCanWriteIsRefused(t *testing.T) {
	write := func(root, name, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const grants = `[{source: '.', target: '/w', mode: 'rw'}, {source: '~', target: '/home', mode: 'rw'}]`
	policy := func(lib string) string {
		return "local g = import '" + lib + "';\n{version: 'v1', servers: {a: {command: ['true'], backends: ['bwrap'], mounts: g}}}\n"
	}
	home := t.TempDir()

	root := t.TempDir()
	write(root, "mcpolicy.jsonnet", policy("lib/grants.libsonnet"))
	write(root, "lib/grants.libsonnet", grants)
	proj, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := proj.Compile(home)
	if err == nil {
		t.Fatalf("compiled %d plans; want the import of lib/grants.libsonnet refused", len(plans))
	}
	for _, want := range []string{
		"mcpolicy.jsonnet:1:11: Jsonnet error: import \"lib/grants.libsonnet\" refused",
		"a server with write access there could change the policy",
		"hint: move it under mcpolicy.d/ (e.g. mcpolicy.d/lib/grants.libsonnet)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\nwant it to contain %q", err, want)
		}
	}

	root = t.TempDir()
	write(root, "mcpolicy.jsonnet", policy("mcpolicy.d/lib/grants.libsonnet"))
	write(root, "mcpolicy.d/lib/grants.libsonnet", grants)
	write(root, "mcpolicy.d/more.libsonnet", grants)
	proj, err = Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(proj.Files) != 1 || filepath.Base(proj.Files[0]) != "mcpolicy.jsonnet" {
		t.Errorf("policy files %q, want mcpolicy.jsonnet alone: a library is no policy", proj.Files)
	}
	pols, err := proj.Load()
	if err != nil {
		t.Fatal(err)
	}
	if m := pols[0].Servers[0].Mounts; len(m) != 2 {
		t.Errorf("mounts %+v, want the library's two", m)
	}
}
