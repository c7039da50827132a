package why_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/emit/registry"
)

// nameLiterals are the string literals of why that spell a backend's name
// as a word, each with why it may: none picks a backend.
var nameLiterals = map[string]string{
	"landlock-not-granted": "a Stop rule's name, part of why's JSON output",
}

// TestNoBackendNames: why asks each backend what it makes of a plan
// (emit.View) through the registry, so none of its code names one: no
// emitter package or the backend table is imported (their identifiers,
// such as bwrap.Backend or docker.PodmanBackend, are how a backend is
// named in Go), and no string literal spells a backend's name as a word.
func TestNoBackendNames(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for _, n := range registry.Names() {
		words = append(words, regexp.QuoteMeta(n))
	}
	word := regexp.MustCompile(`(?i)\b(` + strings.Join(words, "|") + `)\b`)
	const mod = "github.com/mcpolicy/mcpolicy/"
	fset := token.NewFileSet()
	checked := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			emitter := strings.HasPrefix(path, mod+"emit/") && path != mod+"emit/registry"
			if emitter || path == mod+"internal/backendtraits" {
				t.Errorf("%s: imports %s: why reaches backends through emit/registry and emit.View, never by name", fset.Position(imp.Pos()), path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if _, ok := n.(*ast.ImportSpec); ok {
				return false // checked above
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			if _, ok := nameLiterals[s]; !ok && word.MatchString(s) {
				t.Errorf("%s: the literal %s names the backend %q: ask the backend's emit.View instead", fset.Position(lit.Pos()), lit.Value, word.FindString(s))
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no Go file of package why checked")
	}
}
