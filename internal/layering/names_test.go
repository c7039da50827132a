package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// namesAllowed are the folders whose code may name a backend: the
// emitters themselves, the registry, the table of names and the artefact
// contract (which names formats). Everyone else reaches a backend through
// emit/registry and asks it what it runs in (emit.Backend's Runtime).
var namesAllowed = []string{
	"emit/bwrap", "emit/docker", "emit/landlock", "emit/seatbelt", "emit/kubernetes",
	"emit/registry", "internal/backendtraits", "internal/artefact",
}

// backendNames are, per package that declares them, the identifiers
// that name one backend: its name, its program, its registry value.
var backendNames = map[string][]string{
	"emit/bwrap":             {"Backend", "Program", "Bwrap"},
	"emit/docker":            {"Backend", "PodmanBackend", "Docker", "Podman"},
	"emit/landlock":          {"Backend", "Landlock"},
	"emit/seatbelt":          {"Backend", "SandboxExec", "Seatbelt"},
	"emit/kubernetes":        {"Backend", "Kubernetes"},
	"internal/backendtraits": {"Bwrap", "Landlock", "Docker", "Podman", "Seatbelt", "Kubernetes"},
}

// allowedNames are the names the tree still spells outside namesAllowed,
// "file: package.Identifier" each with its reason. The list only shrinks:
// a name gone from the tree must go from here too.
var allowedNames = map[string]string{
	// Below the emitters the table is the only way to a backend: the
	// compiler and the schema import no emitter (TestLayering).
	"compiler/explain.go: backendtraits.Seatbelt":           "what a plan run on seatbelt gets (no capabilities to drop, the invoker's ids) is the compiler's explanation; it imports no emitter",
	"compiler/grants.go: backendtraits.Seatbelt":            "a plan run on seatbelt runs as the invoker: a grant the compiler lists; it imports no emitter",
	"compiler/lint/rules.go: backendtraits.Bwrap":           "rule examples: hand-written client entries that run bwrap",
	"compiler/lint/rules.go: backendtraits.Docker":          "rule examples: hand-written client entries that run docker",
	"compiler/readback/readback.go: backendtraits.Seatbelt": "the seatbelt checker's finding kind is spelled as the backend",
	"schema/zplaintypes.go: backendtraits.Bwrap":            "generated from the schema's backends enum",
	"schema/zplaintypes.go: backendtraits.Docker":           "generated from the schema's backends enum",
	"schema/zplaintypes.go: backendtraits.Kubernetes":       "generated from the schema's backends enum",
	"schema/zplaintypes.go: backendtraits.Landlock":         "generated from the schema's backends enum",
	"schema/zplaintypes.go: backendtraits.Podman":           "generated from the schema's backends enum",
	"clientcfg/importer/host.go: backendtraits.Bwrap":       "import writes a policy's backends: an egress allowlist on a host-run server names the one host backend that filters destinations",
	"schema/zplaintypes.go: backendtraits.Seatbelt":         "generated from the schema's backends enum",
}

// TestNoBackendNames: outside the emitters, the registry, the table and
// the artefact contract, no non-test code names a backend: run, prove,
// doctor, the client readers and the rest loop over emit/registry and
// dispatch on the kind of sandbox a backend declares, so a new backend is
// a package under emit/ and a line in the registry and the table.
func TestNoBackendNames(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no module root above the layering package: %v", err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, file)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if file == root {
				return nil
			}
			if base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || allowedFolder(rel) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(file, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, use := range namesIn(f) {
			key := rel + ": " + use.name
			seen[key] = true
			if _, ok := allowedNames[key]; !ok {
				t.Errorf("%s: %s names a backend: loop over emit/registry and ask its Runtime", fset.Position(use.pos), use.name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for key := range allowedNames {
		if !seen[key] {
			gone = append(gone, key)
		}
	}
	sort.Strings(gone)
	for _, key := range gone {
		t.Errorf("%s is no longer in the tree: remove it from allowedNames", key)
	}
}

// allowedFolder reports whether rel, a slash path from the module root,
// is one of namesAllowed or below one.
func allowedFolder(rel string) bool {
	for _, a := range namesAllowed {
		if rel == a || strings.HasPrefix(rel, a+"/") {
			return true
		}
	}
	return false
}

type nameUse struct {
	name string // package.Identifier, the package as its path's last element
	pos  token.Pos
}

// namesIn finds the selector expressions of f that name a backend through
// the package that declares the name, whatever f imports it as.
func namesIn(f *ast.File) []nameUse {
	names := map[string][]string{} // f's name for a package -> its backend names
	short := map[string]string{}   // f's name for it -> the path's last element
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		rel, ok := strings.CutPrefix(p, mod)
		if !ok || backendNames[rel] == nil {
			continue
		}
		local := path.Base(rel)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		names[local], short[local] = backendNames[rel], path.Base(rel)
	}
	var out []nameUse
	if len(names) == 0 {
		return nil
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		for _, name := range names[x.Name] {
			if sel.Sel.Name == name {
				out = append(out, nameUse{short[x.Name] + "." + name, sel.Pos()})
			}
		}
		return true
	})
	return out
}
