package backendtraits

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTable: names are unique, a backend runs the artefacts of one that
// builds its own and of the same kind, and the defaults are today's.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range table {
		if seen[b.name] {
			t.Errorf("backend %q is in the table twice", b.name)
		}
		seen[b.name] = true
		base, ok := lookup(b.builds)
		if !ok || base.builds != base.name || base.image != b.image {
			t.Errorf("backend %q runs %q's artefacts, which is not a backend of its kind that builds its own", b.name, b.builds)
		}
	}
	if got := ImageDefaults(); !slices.Equal(got, []string{Docker}) {
		t.Errorf("ImageDefaults() = %v", got)
	}
	if got := HostDefaults(); !slices.Equal(got, []string{Bwrap, Landlock}) {
		t.Errorf("HostDefaults() = %v", got)
	}
	if RunsImage("firejail") || NoNetns("firejail") || Program("firejail") != "" || Builds("firejail") != "" {
		t.Error("an unknown name has traits")
	}
}

// literalsAllowed are the folders whose non-test Go files may spell a
// backend's name or program as a string literal: this table, and test
// infrastructure that names the entries it writes.
var literalsAllowed = []string{"internal/backendtraits", "clientcfg/clientcfgtest"}

// TestNoLiteralNames: outside the table, code names a backend (or the
// program that starts one) by its constant, so that grep finds the names
// as string literals only here, in tests and in docs. Comments and longer
// strings that contain a name do not count.
func TestNoLiteralNames(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no module root above the backend package: %v", err)
	}
	names := map[string]bool{}
	for _, n := range append(Names(), Programs()...) {
		names[n] = true
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if path != root && (base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || slices.Contains(literalsAllowed, rel)) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
					t.Errorf("%s: %s: use package backendtraits' constant (or Program)", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
