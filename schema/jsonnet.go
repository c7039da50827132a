package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/go-jsonnet"
)

// evalJsonnet renders a Jsonnet policy to JSON. Imports resolve only inside
// root: go-jsonnet's FileImporter is documented as no isolation mechanism.
func evalJsonnet(file string, src []byte, root string) ([]byte, Errors) {
	vm := jsonnet.MakeVM()
	vm.Importer(&rootedImporter{root: root, cache: map[string]jsonnet.Contents{}})
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
	if m := jsonnetPos.FindStringSubmatchIndex(msg); m != nil {
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
	root  string
	cache map[string]jsonnet.Contents
}

func (r *rootedImporter) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	if filepath.IsAbs(importedPath) {
		return jsonnet.Contents{}, "", fmt.Errorf("absolute import %q is not allowed: imports stay inside the policy root", importedPath)
	}
	found := filepath.Join(filepath.Dir(importedFrom), importedPath)
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
		real, err = filepath.Abs(p)
		if err != nil {
			return err
		}
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("import %q is outside the policy root %s", p, "(the folder holding the policies)")
	}
	return nil
}
