package lint_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
)

// TestRWCodeCache: a read-write mount holding, below its top, an
// interpreter cache, environment (by name, or by its pyvenv.cfg) or build
// output, or Python sources, is one error naming a few of them; not those
// at the top (protected), inside a protected name, or covered by a
// read-only mount; a top-level source is reported where its __pycache__
// can be created (a read-write subfolder) or is unprotected.
func TestRWCodeCache(t *testing.T) {
	files := []string{"main.py", "import util", "util.py", "x = 1", "__pycache__/util.cpython-311.pyc", "",
		".venv/lib/python3.11/site-packages/evil.pth", "import os", "node_modules/x/index.js", "",
		"pkg/util2.py", "y = 2", "pkg/__pycache__/util2.cpython-311.pyc", "", "tools/env/pyvenv.cfg", "home = /usr/bin",
		"tools/env/lib/python3.11/site-packages/a.pth", "", "web/node_modules/x/index.js", "", "crate/target/debug/app", "",
		".vscode/x.py", "", "data/in.csv", "a,b", "lib/report.py", "", "models/model.pth", ""}
	cache := "interpreter caches, environments or build outputs: "
	py := "Python sources whose __pycache__ the server can create or write (the next import runs it): "
	for _, c := range []struct {
		name, servers, want string
	}{
		{"project", `mounts: [{source: ".", target: "/w", mode: "rw"}]`,
			"read-write mount /w holds code the host runs and git does not show, writable there: " + cache + "crate/target, pkg/__pycache__, tools/env and 1 more; " + py + "lib/report.py, pkg/util2.py"},
		{"read-only project", `mounts: [{source: ".", target: "/w"}]`, ""},
		{"data only", `mounts: [{source: ".", target: "/w"}, {source: "data", target: "/w/data", mode: "rw"}]`, ""},
		{"code read-only inside", `mounts: [{source: ".", target: "/w", mode: "rw"}, {source: "pkg", target: "/w/pkg"}, {source: "tools", target: "/w/tools"}, {source: "web", target: "/w/web"}, {source: "crate", target: "/w/crate"}]`,
			"read-write mount /w holds code the host runs and git does not show, writable there: " + py + "lib/report.py"},
		{"unprotected pycache", `mounts: [{source: ".", target: "/w", mode: "rw"}, {source: "pkg", target: "/w/pkg"}, {source: "tools", target: "/w/tools"}, {source: "web", target: "/w/web"}, {source: "crate", target: "/w/crate"}, {source: "lib", target: "/w/lib"}]
	unprotect: ["__pycache__"]`,
			"read-write mount /w holds code the host runs and git does not show, writable there: " + py + "main.py"},
		{"rw subfolder, no __pycache__ at its top", `mounts: [{source: "lib", target: "/lib", mode: "rw"}]`,
			"read-write mount /lib holds code the host runs and git does not show, writable there: " + py + "report.py"},
		{"rw subfolder, its __pycache__ present", `mounts: [{source: "pkg", target: "/pkg", mode: "rw"}]`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := withProjectFiles(lint.Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\t" + c.servers + "\n}\n"}, files...)
			var got []string
			for _, f := range lint.Run(targets(t, e), lint.Options{Only: []string{"RW_CODE_CACHE"}}).Findings {
				if f.Level != "error" {
					t.Errorf("level %q, want error", f.Level)
				}
				got = append(got, f.Message)
			}
			if want := []string{c.want}; c.want == "" && len(got) != 0 || c.want != "" && !slices.Equal(got, want) {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), c.want)
			}
		})
	}
}

// TestRWCodeCacheBounded: a walk stopped at its bound before finding any
// says so (an error: nothing seen is not nothing there); the caches below
// the top are RW_CODE_CACHE's, not RW_NESTED_PROTECTED's too.
func TestRWCodeCacheBounded(t *testing.T) {
	const rw = `mounts: [{source: ".", target: "/w", mode: "rw"}]`
	run := func(t *testing.T, files []string) []string {
		t.Helper()
		e := withProjectFiles(lint.Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\t" + rw + "\n}\n"}, files...)
		var got []string
		for _, f := range lint.Run(targets(t, e), lint.Options{Only: []string{"RW_CODE_CACHE", "RW_NESTED_PROTECTED"}}).Findings {
			got = append(got, f.Rule+": "+f.Message)
		}
		return got
	}
	t.Run("stopped", func(t *testing.T) {
		defer lint.SetWalkEntries(100)()
		files := []string{"zz/pkg/a.py", ""}
		for i := 0; i < 200; i++ {
			files = append(files, fmt.Sprintf("src/f%03d", i), "")
		}
		got := run(t, files)
		if len(got) != 2 || !strings.HasPrefix(got[0], "RW_CODE_CACHE: read-write mount /w: its scan stopped at its bound after 100 entries") {
			t.Errorf("findings: %q, want one RW_CODE_CACHE saying the scan stopped", got)
		}
	})
	t.Run("one rule", func(t *testing.T) {
		got := run(t, []string{"app/.venv/pyvenv.cfg", "", "app/.envrc", "echo"})
		want := []string{"RW_CODE_CACHE: read-write mount /w holds code the host runs and git does not show, writable there: interpreter caches, environments or build outputs: app/.venv",
			"RW_NESTED_PROTECTED: read-write mount /w holds protected names below its top, writable there: app/.envrc"}
		if !slices.Equal(got, want) {
			t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
