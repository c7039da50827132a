package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// homeGrant is what a server that can write a file a policy reads would
// write there: its next launch would get the home folder read-write.
const homeGrant = `[{source: '~', target: '/home', mode: 'rw'}]`

// importFixture is a project whose unprotected files (lib/, outside the
// root) hold homeGrant, as a confined server with `.` read-write could
// have written them; its protected policy libraries grant /lib read-only.
func importFixture(t *testing.T) (root string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "proj")
	files := map[string]string{
		"outside.libsonnet":                          homeGrant,
		"proj/lib/grants.libsonnet":                  homeGrant,
		"proj/lib/x.txt":                             "~",
		"proj/mcpolicy.libsonnet":                    `[{source: '.', target: '/lib', mode: 'ro'}]`,
		"proj/mcpolicy.d/lib.libsonnet":              `[{source: '.', target: '/lib', mode: 'ro'}]`,
		"proj/mcpolicy.d/sub/deep.libsonnet":         `[{source: '.', target: '/lib', mode: 'ro'}]`,
		"proj/mcpolicy.d/chain.libsonnet":            `import 'sub/deep.libsonnet'`,
		"proj/mcpolicy.d/nested.libsonnet":           `import '../lib/grants.libsonnet'`,
		"proj/mcpolicy.d/nested-importstr.libsonnet": "[{source: importstr '../lib/x.txt', target: '/home', mode: 'rw'}]",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"proj/mcpolicy.d/link.libsonnet":     "../lib/grants.libsonnet",
		"proj/mcpolicy.d/linkdir":            "../lib",
		"proj/mcpolicy.d/link-out.libsonnet": "../../outside.libsonnet",
		"proj/mcpolicy.d/link-abs.libsonnet": filepath.Join(root, "lib", "grants.libsonnet"),
		"proj/mcpolicy.d/link-in.libsonnet":  "sub/deep.libsonnet",
		"proj/lib/to-protected.libsonnet":    "../mcpolicy.d/lib.libsonnet",
		"proj/libdir":                        "mcpolicy.d/sub",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Skipf("no symlinks here: %v", err)
		}
	}
	return root
}

// TestJsonnetImportsReadOnlyProtectedPolicyFiles: import, importstr and
// importbin read only files below mcpolicy.d/ and top-level mcpolicy.*
// files, the ones no server can write; anything else, a symlink to it
// included, is refused where it is imported, with a hint.
func TestJsonnetImportsReadOnlyProtectedPolicyFiles(t *testing.T) {
	root := importFixture(t)
	const refused = "a server with write access there could change the policy"
	cases := []struct {
		name string
		file string // the policy, relative to root
		expr string // the policy's mounts, from line 1 column 11
		want []string
		ok   bool
	}{
		{name: "library under mcpolicy.d", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/lib.libsonnet'`, ok: true},
		{name: "library in a folder under mcpolicy.d", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/sub/deep.libsonnet'`, ok: true},
		{name: "top-level mcpolicy.* library", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.libsonnet'`, ok: true},
		{name: "library importing its neighbour", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/chain.libsonnet'`, ok: true},
		{name: "symlink inside mcpolicy.d", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/link-in.libsonnet'`, ok: true},
		{name: "policy under mcpolicy.d importing its neighbour", file: "mcpolicy.d/extra.jsonnet", expr: `import 'lib.libsonnet'`, ok: true},

		{name: "unprotected library", file: "mcpolicy.jsonnet", expr: `import 'lib/grants.libsonnet'`, want: []string{
			`mcpolicy.jsonnet:1:11: Jsonnet error: import "lib/grants.libsonnet" refused: lib/grants.libsonnet is not a protected policy file (under mcpolicy.d/, or a top-level mcpolicy.* file), and ` + refused,
			`hint: move it under mcpolicy.d/ (e.g. mcpolicy.d/lib/grants.libsonnet) and import it from there`}},
		{name: "unprotected file with a policy extension", file: "mcpolicy.jsonnet", expr: `import 'grants.json'`, want: []string{
			`import "grants.json" refused: grants.json is not a protected policy file`, refused,
			`hint: move it under mcpolicy.d/ (e.g. mcpolicy.d/lib/grants.json) and import it from there`}},
		{name: "importstr of an unprotected file", file: "mcpolicy.jsonnet", expr: `[{source: importstr 'lib/x.txt', target: '/home', mode: 'rw'}]`, want: []string{
			`mcpolicy.jsonnet:1:21: Jsonnet error: import "lib/x.txt" refused: lib/x.txt is not a protected policy file`, refused, `mcpolicy.d/lib/x.txt`}},
		{name: "importbin of an unprotected file", file: "mcpolicy.jsonnet", expr: `[{source: std.char((importbin 'lib/x.txt')[0]), target: '/home', mode: 'rw'}]`, want: []string{
			`mcpolicy.jsonnet:1:31: Jsonnet error: import "lib/x.txt" refused`, refused}},
		{name: "policy under mcpolicy.d importing an unprotected file", file: "mcpolicy.d/extra.jsonnet", expr: `import '../lib/grants.libsonnet'`, want: []string{
			`extra.jsonnet:1:11: Jsonnet error: import "../lib/grants.libsonnet" refused: lib/grants.libsonnet is not a protected policy file`, refused}},
		{name: "library importing an unprotected file", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/nested.libsonnet'`, want: []string{
			`nested.libsonnet:1:1: Jsonnet error: import "../lib/grants.libsonnet" refused`, refused, `mcpolicy.d/lib/grants.libsonnet`}},
		{name: "library importstr of an unprotected file", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/nested-importstr.libsonnet'`, want: []string{
			`nested-importstr.libsonnet:1:11: Jsonnet error: import "../lib/x.txt" refused`, refused}},
		{name: "unprotected symlink to a protected file", file: "mcpolicy.jsonnet", expr: `import 'lib/to-protected.libsonnet'`, want: []string{
			`mcpolicy.jsonnet:1:11: Jsonnet error: import "lib/to-protected.libsonnet" refused: lib/to-protected.libsonnet is, or passes through, a symlink outside the protected policy files (under mcpolicy.d/, or a top-level mcpolicy.* file) to mcpolicy.d/lib.libsonnet, and a server with write access there could point it at another one`,
			`hint: import mcpolicy.d/lib.libsonnet by its own path`}},
		{name: "unprotected folder symlink to a protected folder", file: "mcpolicy.jsonnet", expr: `import 'libdir/deep.libsonnet'`, want: []string{
			`import "libdir/deep.libsonnet" refused: libdir/deep.libsonnet is, or passes through, a symlink outside the protected policy files`}},
		{name: "symlink under mcpolicy.d to an unprotected file", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/link.libsonnet'`, want: []string{
			`mcpolicy.jsonnet:1:11: Jsonnet error: import "mcpolicy.d/link.libsonnet" refused: it resolves through a symlink to lib/grants.libsonnet, which is not a protected policy file`,
			refused, `hint: replace the symlink by the file itself, under mcpolicy.d/`}},
		{name: "absolute symlink under mcpolicy.d to an unprotected file", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/link-abs.libsonnet'`, want: []string{
			`import "mcpolicy.d/link-abs.libsonnet" refused: it resolves through a symlink to lib/grants.libsonnet`, refused}},
		{name: "folder symlink under mcpolicy.d to an unprotected folder", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/linkdir/grants.libsonnet'`, want: []string{
			`import "mcpolicy.d/linkdir/grants.libsonnet" refused: it resolves through a symlink to lib/grants.libsonnet`, refused}},
		{name: "symlink under mcpolicy.d out of the root", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/link-out.libsonnet'`, want: []string{
			`import "mcpolicy.d/link-out.libsonnet" refused: it is outside the policy root`, refused}},
		{name: "../ escape", file: "mcpolicy.jsonnet", expr: `import '../outside.libsonnet'`, want: []string{
			`mcpolicy.jsonnet:1:11: Jsonnet error: import "../outside.libsonnet" refused: it is outside the policy root (the folder holding the policies), and ` + refused,
			`hint: copy it under mcpolicy.d/ (e.g. mcpolicy.d/outside.libsonnet)`}},
		{name: "../ escape through mcpolicy.d", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/../../outside.libsonnet'`, want: []string{
			`import "mcpolicy.d/../../outside.libsonnet" refused: it is outside the policy root`}},
		{name: "../ back into the root, unprotected", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/../lib/grants.libsonnet'`, want: []string{
			`import "mcpolicy.d/../lib/grants.libsonnet" refused: lib/grants.libsonnet is not a protected policy file`}},
		{name: "absolute path", file: "mcpolicy.jsonnet", expr: `import '` + filepath.Join(root, "lib", "grants.libsonnet") + `'`, want: []string{
			`mcpolicy.jsonnet:1:11: Jsonnet error: import "` + filepath.Join(root, "lib", "grants.libsonnet") + `" refused: an absolute import is not a protected policy file`, refused}},
		{name: "absolute path to a protected file", file: "mcpolicy.jsonnet", expr: `import '` + filepath.Join(root, "mcpolicy.d", "lib.libsonnet") + `'`, want: []string{
			`refused: an absolute import is not a protected policy file`}},
		{name: "missing unprotected file", file: "mcpolicy.jsonnet", expr: `import 'lib/missing.libsonnet'`, want: []string{
			`import "lib/missing.libsonnet" refused: lib/missing.libsonnet is not a protected policy file`}},
		{name: "missing protected file", file: "mcpolicy.jsonnet", expr: `import 'mcpolicy.d/missing.libsonnet'`, want: []string{
			`import "mcpolicy.d/missing.libsonnet": `, "no such file"}},
		{name: "the policy folder itself", file: "mcpolicy.jsonnet", expr: `importstr 'mcpolicy.d'`, want: []string{
			`import "mcpolicy.d": `, "not a regular file (a folder)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(root, filepath.FromSlash(c.file))
			src := "local m = " + c.expr + ";\n{version: 'v1', servers: {a: {image: 'x:1', mounts: m}}}\n"
			if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(f)
			p, err := Load(f, root)
			if c.ok {
				if err != nil {
					t.Fatalf("%s: %v", c.expr, err)
				}
				if m := p.Servers[0].Mounts; len(m) != 1 || m[0].Target != "/lib" {
					t.Fatalf("%s: mounts %+v, want the library's /lib", c.expr, m)
				}
				return
			}
			if err == nil {
				t.Fatalf("%s: loaded, with mounts %+v; want the import refused", c.expr, p.Servers[0].Mounts)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error\n%v\nwant it to contain\n%s", c.expr, err, w)
				}
			}
		})
	}
}

// TestPolicyImportNamesAreProtected: what the importer reads must be what
// package protect keeps read-only at the top of a read-write mount.
func TestPolicyImportNamesAreProtected(t *testing.T) {
	for _, rel := range []string{"mcpolicy.d/lib.libsonnet", "mcpolicy.d/a/b.libsonnet", "mcpolicy.libsonnet", "mcpolicy.grants.libsonnet"} {
		if !protectedPolicyPath(filepath.FromSlash(rel)) {
			t.Errorf("%s: not importable", rel)
		}
		if top := strings.Split(rel, "/")[0]; protect.Match(top) == "" {
			t.Errorf("%s is importable, but package protect does not protect %s", rel, top)
		}
	}
	for _, rel := range []string{"lib/grants.libsonnet", "grants.libsonnet", "mcpolicy", "sub/mcpolicy.d/x.libsonnet", "sub/mcpolicy.libsonnet", "../mcpolicy.d/x", "x/../../mcpolicy.d/x", ".git/config"} {
		if protectedPolicyPath(filepath.FromSlash(rel)) {
			t.Errorf("%s: importable", rel)
		}
	}
}

// TestPoliciesReadNoOtherFile: CUE, JSON and YAML policies have no way
// to read another file. The file they would read holds the home grant a
// server could have written there; the load must fail, or succeed
// without it.
func TestPoliciesReadNoOtherFile(t *testing.T) {
	root := t.TempDir()
	for name, content := range map[string]string{
		"x.json":             `[{"source": "~", "target": "/home", "mode": "rw"}]`,
		"x.yaml":             "- {source: '~', target: /home, mode: rw}\n",
		"cue.mod/module.cue": "module: \"example.com/p@v0\"\nlanguage: version: \"v0.17.0\"\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		file, src string
		want      string // in the error, if not empty
	}{
		// CUE's file embedding, in a module (cue.mod above) as it wants.
		{"mcpolicy.cue", "@extern(embed)\npackage p\n\nversion: \"v1\"\nservers: a: {image: \"x:1\", mounts: _ @embed(file=\"x.json\")}\n",
			"mcpolicy.cue:1:1: @extern attributes are not supported in policy files: @embed would read files a server may be able to write"},
		{"mcpolicy.cue", "@extern(embed)\npackage p\n\nversion: \"v1\"\nservers: a: {image: \"x:1\", mounts: _ @embed(glob=\"*.yaml\")}\n",
			"@extern attributes are not supported"},
		{"mcpolicy.cue", "@extern(embed)\n\nversion: \"v1\"\nservers: a: {image: \"x:1\", mounts: _ @embed(file=\"x.json\")}\n",
			"@extern attributes are not supported"},
		// Without @extern, @embed is an attribute like any other.
		{"mcpolicy.cue", "version: \"v1\"\nservers: a: {image: \"x:1\", mounts: [] @embed(file=\"x.json\")}\n", ""},
		{"mcpolicy.cue", "import \"example.com/p/x\"\n\nversion: \"v1\"\nservers: a: {image: \"x:1\", mounts: x.m}\n",
			"imports are not supported in policy files"},
		// YAML has no include; a tag that would be one is refused.
		{"mcpolicy.yaml", "version: v1\nservers:\n  a:\n    image: x:1\n    mounts: !include x.yaml\n", `mcpolicy.yaml:5:13: servers.a.mounts: the YAML tag !include is not allowed in a policy`},
		{"mcpolicy.yaml", "version: v1\nservers:\n  a:\n    image: x:1\n    mounts: !!include x.yaml\n", `mcpolicy.yaml:5:13: servers.a.mounts: the YAML tag !!include is not allowed`},
		// JSON has no include; a JSON Schema $ref is data.
		{"mcpolicy.json", `{"version": "v1", "servers": {"a": {"image": "x:1", "mounts": {"$ref": "x.json"}}}}`, "servers.a.mounts"},
	}
	for _, c := range cases {
		f := filepath.Join(root, c.file)
		if err := os.WriteFile(f, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Load(f, root)
		os.Remove(f)
		if err == nil {
			for _, m := range p.Servers[0].Mounts {
				if m.Source == "~" {
					t.Errorf("%s\n%s: read the other file: mounts %+v", c.file, c.src, p.Servers[0].Mounts)
				}
			}
			if c.want != "" {
				t.Errorf("%s\n%s: loaded; want an error with %q", c.file, c.src, c.want)
			}
			continue
		}
		if c.want == "" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n%s: error\n%v\nwant %q", c.file, c.src, err, c.want)
		}
	}
}
