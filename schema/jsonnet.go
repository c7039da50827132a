package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"
	"github.com/google/go-jsonnet/toolutils"
)

// evalJsonnet renders a Jsonnet policy to JSON. Imports resolve only inside
// root: go-jsonnet's FileImporter is documented as no isolation mechanism.
func evalJsonnet(file string, src []byte, root string) ([]byte, Errors) {
	vm := jsonnet.MakeVM()
	vm.Importer(&rootedImporter{root: root, mainDir: filepath.Dir(file), cache: map[string]jsonnet.Contents{}})
	vm.ErrorFormatter.SetMaxStackTraceSize(4)
	out, err := vm.EvaluateAnonymousSnippet(file, string(src))
	if err != nil {
		return nil, Errors{jsonnetError(file, err.Error())}
	}
	return []byte(out), nil
}

// jsonnetError reads go-jsonnet's preformatted message: the first line is
// the message, the first file:line:col anywhere in it is the position.
func jsonnetError(file, msg string) *Error {
	e := &Error{Pos: Pos{File: file}}
	first := strings.TrimSpace(strings.SplitN(msg, "\n", 2)[0])
	if m := jsonnetPos().FindStringSubmatchIndex(msg); m != nil {
		line, _ := strconv.Atoi(msg[m[4]:m[5]])
		col, _ := strconv.Atoi(msg[m[6]:m[7]])
		e.Pos = Pos{File: msg[m[2]:m[3]], Line: line, Col: col}
		if m[0] == 0 { // static error: "file:line:col-col message"
			first = strings.TrimSpace(first[strings.IndexByte(first, ' ')+1:])
		}
	}
	first = strings.TrimPrefix(first, "RUNTIME ERROR: ")
	e.Msg = "Jsonnet error: " + first
	return e
}

type rootedImporter struct {
	root    string
	mainDir string // imports from the policy file itself come with importedFrom ""
	cache   map[string]jsonnet.Contents
}

func (r *rootedImporter) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	if filepath.IsAbs(importedPath) {
		return jsonnet.Contents{}, "", fmt.Errorf("absolute import %q is not allowed: imports stay inside the policy root", importedPath)
	}
	from := filepath.Dir(importedFrom)
	if importedFrom == "" {
		from = r.mainDir
	}
	found := filepath.Join(from, importedPath)
	if c, ok := r.cache[found]; ok {
		return c, found, nil
	}
	if err := r.inside(found); err != nil {
		return jsonnet.Contents{}, "", err
	}
	b, err := os.ReadFile(found)
	if err != nil {
		return jsonnet.Contents{}, "", fmt.Errorf("import %q: %w", importedPath, err)
	}
	c := jsonnet.MakeContentsRaw(b)
	r.cache[found] = c
	return c, found, nil
}

// inside refuses a path that leaves the root, also through symlinks.
func (r *rootedImporter) inside(p string) error {
	root, err := filepath.EvalSymlinks(r.root)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		real = p
	}
	if real, err = filepath.Abs(real); err != nil {
		return err
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("import %q is outside the policy root (the folder holding the policies)", p)
	}
	return nil
}

// jsonnetLocator maps a field path of the rendered JSON back to the Jsonnet
// source: the literal field whose names are the longest suffix of the path.
// Computed fields cannot be located; the file alone is reported for them.
func jsonnetLocator(file string, src []byte) func(labels []string) (Pos, bool) {
	root, err := jsonnet.SnippetToAST(file, string(src))
	if err != nil {
		return nil
	}
	type field struct {
		names []string
		pos   Pos
	}
	var fields []field
	var walk func(n ast.Node, names []string)
	walk = func(n ast.Node, names []string) {
		if n == nil {
			return
		}
		if obj, ok := n.(*ast.Object); ok {
			for _, f := range obj.Fields {
				name, ok := fieldName(f)
				if !ok {
					walk(f.Expr2, nil)
					continue
				}
				at := f.LocRange
				if f.Expr2 != nil && f.Expr2.Loc() != nil {
					at = *f.Expr2.Loc()
				}
				path := append(append([]string(nil), names...), name)
				fields = append(fields, field{path, Pos{File: file, Line: at.Begin.Line, Col: at.Begin.Column}})
				walk(f.Expr2, path)
			}
			return
		}
		if obj, ok := n.(*ast.DesugaredObject); ok { // SnippetToAST desugars
			for _, f := range obj.Fields {
				name, ok := f.Name.(*ast.LiteralString)
				if !ok {
					walk(f.Body, nil)
					continue
				}
				at := f.LocRange
				if f.Body != nil && f.Body.Loc() != nil && f.Body.Loc().Begin.Line > 0 {
					at = *f.Body.Loc()
				}
				path := append(append([]string(nil), names...), name.Value)
				fields = append(fields, field{path, Pos{File: file, Line: at.Begin.Line, Col: at.Begin.Column}})
				walk(f.Body, path)
			}
			for _, l := range obj.Locals {
				walk(l.Body, nil)
			}
			return
		}
		if arr, ok := n.(*ast.Array); ok { // list elements keep the path: indices are dropped
			for _, el := range arr.Elements {
				walk(el.Expr, names)
			}
			return
		}
		for _, c := range toolutils.Children(n) {
			walk(c, nil)
		}
	}
	walk(root, nil)
	return func(labels []string) (Pos, bool) {
		var want []string
		for _, l := range labels {
			if _, err := strconv.Atoi(l); err != nil {
				want = append(want, l)
			}
		}
		best, bestLen := Pos{}, 0
		for _, f := range fields {
			if n := commonSuffix(f.names, want); n > bestLen {
				best, bestLen = f.pos, n
			}
		}
		return best, bestLen > 0
	}
}

func fieldName(f ast.ObjectField) (string, bool) {
	switch f.Kind {
	case ast.ObjectFieldID:
		if f.Id != nil {
			return string(*f.Id), true
		}
	case ast.ObjectFieldStr, ast.ObjectFieldExpr:
		if s, ok := f.Expr1.(*ast.LiteralString); ok {
			return s.Value, true
		}
	}
	return "", false
}

// commonSuffix counts the trailing names a and b share.
func commonSuffix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}
