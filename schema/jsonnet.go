package schema

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"
	"github.com/google/go-jsonnet/toolutils"

	"github.com/mcpolicy/mcpolicy/internal/hostfile"
)

// evalJsonnet renders a Jsonnet policy to JSON. Its imports read only
// protected policy files (see policyImporter); go-jsonnet's FileImporter
// is documented as no isolation mechanism.
func evalJsonnet(file string, src []byte, root string) ([]byte, Errors) {
	imp := &policyImporter{root: root, mainDir: filepath.Dir(file), cache: map[string]jsonnet.Contents{}}
	vm := jsonnet.MakeVM()
	vm.Importer(imp)
	vm.ErrorFormatter.SetMaxStackTraceSize(4)
	vm.MaxStack = jsonnetMaxStack
	if e := tooDeep(file, src); e != nil {
		return nil, Errors{e}
	}
	out, stopped, err := evalBounded(vm, file, string(src))
	if stopped != nil {
		return nil, Errors{stopped}
	}
	if err == nil && len(out) > jsonnetMaxOutput {
		return nil, Errors{{Pos: Pos{File: file}, Msg: fmt.Sprintf("Jsonnet error: the policy renders to %d bytes of JSON, more than the %d bytes a policy may", len(out), jsonnetMaxOutput),
			Hint: jsonnetLimitHint}}
	}
	if err != nil && imp.notText != nil {
		return nil, Errors{imp.notText}
	}
	if err != nil {
		e := jsonnetError(file, err.Error())
		// A refused import: go-jsonnet's message gives the position of
		// the import, the importer the hint.
		if r := imp.refused; r != nil && strings.Contains(err.Error(), r.Msg) {
			e.Msg, e.Hint = "Jsonnet error: "+r.Msg, r.Hint
		}
		return nil, Errors{e}
	}
	return []byte(out), nil
}

// Limits of a Jsonnet evaluation. go-jsonnet has none but its stack: a
// comprehension grew to 570 MB and went on, a function doubling a string
// ran on, and a policy is data a person reviews, rendered in
// milliseconds (500 servers: about 30 ms).
const (
	// jsonnetMaxStack is go-jsonnet's default: deep enough for any
	// policy, and 10,000 nested brackets stop at it.
	jsonnetMaxStack = 500
	// jsonnetTimeout bounds the time of an evaluation: over thirty times
	// the largest policy's, and the commands answer within 2 s.
	jsonnetTimeout = time.Second
	// jsonnetMaxHeap bounds the heap an evaluation may add.
	jsonnetMaxHeap = 128 << 20
)

// jsonnetMaxOutput bounds the JSON a policy renders to: what a policy
// file may hold, as the rendered JSON is one. (A variable: a test lowers
// it rather than render megabytes on a loaded machine.)
var jsonnetMaxOutput = MaxPolicySize

const jsonnetLimitHint = "a policy renders to data a reviewer can read: look for a recursion or a comprehension that does not end, or that grows much faster than intended"

// evalBounded evaluates a snippet within jsonnetTimeout and
// jsonnetMaxHeap. go-jsonnet cannot be interrupted: an evaluation that
// goes over is left running, the error returned, and the command exits
// with it (no mcpolicy process reads a policy and stays).
func evalBounded(vm *jsonnet.VM, file, src string) (string, *Error, error) {
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	base := heapBytes()
	go func() {
		out, err := vm.EvaluateAnonymousSnippet(file, src)
		done <- result{out, err}
	}()
	deadline := time.NewTimer(jsonnetTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return r.out, nil, r.err
		case <-deadline.C:
			return "", &Error{Pos: Pos{File: file}, Msg: fmt.Sprintf("Jsonnet error: evaluation stopped after %v, the most a policy may take", jsonnetTimeout),
				Hint: jsonnetLimitHint}, nil
		case <-tick.C:
			if heapBytes()-base > jsonnetMaxHeap {
				return "", &Error{Pos: Pos{File: file}, Msg: fmt.Sprintf("Jsonnet error: evaluation stopped at %d MiB of memory, the most a policy may use", jsonnetMaxHeap>>20),
					Hint: jsonnetLimitHint}, nil
			}
		}
	}
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// heapBytes is the memory of the heap's objects, live or not yet swept.
func heapBytes() int64 {
	metrics.Read(heapSample)
	return int64(heapSample[0].Value.Uint64())
}

// jsonnetMaxNesting bounds how deep brackets nest in a Jsonnet source:
// a policy nests a few levels; go-jsonnet's parser recurses once per
// level, and 10,000 levels took 1.2 GB before an error with no position.
const jsonnetMaxNesting = 100

// tooDeep reports the first bracket of a Jsonnet source nested deeper
// than jsonnetMaxNesting, at its line and column. Strings, text blocks
// and comments are skipped.
func tooDeep(file string, src []byte) *Error {
	depth := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		skipTo := func(end string) {
			for i++; i < len(src) && !bytes.HasPrefix(src[i:], []byte(end)); i++ {
				if src[i] == '\\' && (end == `"` || end == "'") {
					i++
				}
			}
			i += len(end) - 1
		}
		switch {
		case c == '"' || c == '\'':
			skipTo(string(c))
		case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
			skipTo("\n")
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			i++
			skipTo("*/")
		case c == '|' && bytes.HasPrefix(src[i:], []byte("|||")):
			i += 2
			skipTo("|||")
		case c == '(' || c == '[' || c == '{':
			if depth++; depth > jsonnetMaxNesting {
				line := bytes.Count(src[:i], []byte("\n")) + 1
				col := i - bytes.LastIndexByte(src[:i], '\n') // in bytes
				return &Error{Pos: Pos{File: file, Line: line, Col: col}, Msg: fmt.Sprintf("Jsonnet error: brackets nested more than %d deep", jsonnetMaxNesting),
					Hint: "a policy nests a few levels: look for brackets left open"}
			}
		case c == ')' || c == ']' || c == '}':
			depth--
		}
	}
	return nil
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

// policyDir is the folder of policy files at a project's top
// (project.PolicyDir; schema cannot import project).
const policyDir = "mcpolicy.d"

// policyImporter reads what a Jsonnet policy imports (import, importstr
// and importbin all come here), and only protected policy files: a file
// below mcpolicy.d/ at the top of root, or a top-level file of root whose
// name starts with "mcpolicy." (package protect keeps both read-only at
// the top of every read-write mount). Any other file may be one a
// confined server can write, and what it writes there would decide its
// next confinement.
//
// The decision is made on the file's real path, every symlink resolved: a
// link under mcpolicy.d/ to an unprotected file is refused. No component
// of an accepted real path below root can be swapped by a server (they
// are all protected), and the file read is checked to be the one that
// was resolved, not a symlink put there since.
type policyImporter struct {
	root    string
	mainDir string // imports from the policy file itself come with importedFrom ""
	cache   map[string]jsonnet.Contents
	refused *Error // the first import refused; evalJsonnet adds its position
	notText *Error // the first import that is not text, at its byte
}

func (r *policyImporter) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	from := filepath.Dir(importedFrom)
	if importedFrom == "" {
		from = r.mainDir
	}
	found := filepath.Join(from, importedPath)
	if c, ok := r.cache[found]; ok {
		return c, found, nil
	}
	real, refused, err := r.resolve(importedPath, found)
	if refused != nil {
		if r.refused == nil {
			r.refused = refused
		}
		return jsonnet.Contents{}, "", errors.New(refused.Msg)
	}
	if err != nil {
		return jsonnet.Contents{}, "", fmt.Errorf("import %q: %w", importedPath, err)
	}
	b, err := readResolved(real)
	if err != nil {
		return jsonnet.Contents{}, "", fmt.Errorf("import %q: %w", importedPath, err)
	}
	// An imported file is held to a policy file's rule: go-jsonnet read a
	// byte that is not UTF-8 as U+FFFD, and could not lex a byte order
	// mark.
	b = trimBOM(b)
	if e := badText(found, b); e != nil {
		if r.notText == nil {
			r.notText = e
		}
		return jsonnet.Contents{}, "", errors.New(e.Error())
	}
	c := jsonnet.MakeContentsRaw(b)
	r.cache[found] = c
	return c, found, nil
}

// resolve returns the real path of an import found at found, or why it
// is refused (Msg and Hint; no position).
func (r *policyImporter) resolve(importedPath, found string) (real string, refused *Error, err error) {
	why := "a server with write access there could change the policy"
	if filepath.IsAbs(importedPath) {
		return "", &Error{Msg: fmt.Sprintf("import %q refused: an absolute import is not a protected policy file, and %s", importedPath, why),
			Hint: fmt.Sprintf("copy it under %s/ (e.g. %s) and import it by a relative path", policyDir, libraryPath(filepath.Base(importedPath)))}, nil
	}
	root, err := filepath.Abs(r.root)
	if err != nil {
		return "", nil, err
	}
	abs, err := filepath.Abs(found)
	if err != nil {
		return "", nil, err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", nil, err
	}
	lexical, lerr := filepath.Rel(root, abs)
	real, err = filepath.EvalSymlinks(abs)
	if err != nil {
		if lerr == nil && protectedPolicyPath(lexical) {
			return "", nil, err // a protected name that does not exist
		}
		real = abs // refused below, existing or not
	}
	rel, rerr := filepath.Rel(realRoot, real)
	if lerr != nil || escapes(lexical) {
		lexical = rel
	}
	switch {
	case rerr != nil || escapes(rel):
		return "", &Error{Msg: fmt.Sprintf("import %q refused: it is outside the policy root (the folder holding the policies), and %s", importedPath, why),
			Hint: fmt.Sprintf("copy it under %s/ (e.g. %s) and import it from there", policyDir, libraryPath(filepath.Base(importedPath)))}, nil
	case !protectedPolicyPath(rel) && rel != lexical:
		return "", &Error{Msg: fmt.Sprintf("import %q refused: it resolves through a symlink to %s, which is not a protected policy file (under %s/, or a top-level mcpolicy.* file), and %s",
			importedPath, filepath.ToSlash(rel), policyDir, why),
			Hint: fmt.Sprintf("replace the symlink by the file itself, under %s/", policyDir)}, nil
	case !protectedPolicyPath(rel):
		return "", &Error{Msg: fmt.Sprintf("import %q refused: %s is not a protected policy file (under %s/, or a top-level mcpolicy.* file), and %s",
			importedPath, filepath.ToSlash(rel), policyDir, why),
			Hint: fmt.Sprintf("move it under %s/ (e.g. %s) and import it from there%s", policyDir, libraryPath(rel), libraryNote(rel))}, nil
	case !protectedPolicyPath(lexical):
		// A link outside the protected names into them: a server that can
		// write the link picks which policy file is read.
		return "", &Error{Msg: fmt.Sprintf("import %q refused: %s is, or passes through, a symlink outside the protected policy files (under %s/, or a top-level mcpolicy.* file) to %s, and a server with write access there could point it at another one",
			importedPath, filepath.ToSlash(lexical), policyDir, filepath.ToSlash(rel)),
			Hint: fmt.Sprintf("import %s by its own path", filepath.ToSlash(rel))}, nil
	}
	return real, nil, nil
}

// libraryPath is where the hint suggests moving an imported file, relative
// to the policy root: below mcpolicy.d/, in lib/ if the file would
// otherwise be read as a policy of its own (a file directly in
// mcpolicy.d/ with a policy extension is one).
func libraryPath(rel string) string {
	rel = filepath.ToSlash(rel)
	if !strings.Contains(rel, "/") && isPolicyExt(rel) {
		rel = "lib/" + rel
	}
	return policyDir + "/" + rel
}

func libraryNote(rel string) string {
	if strings.ToLower(filepath.Ext(rel)) == ".libsonnet" {
		return "; a .libsonnet file there is not read as a policy itself"
	}
	return ""
}

func isPolicyExt(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, e := range Extensions {
		if ext == e {
			return true
		}
	}
	return false
}

// protectedPolicyPath reports whether a path relative to the policy root
// names a protected policy file: below mcpolicy.d/, or a top-level
// mcpolicy.* (protect's "mcpolicy.d" and "mcpolicy.*").
func protectedPolicyPath(rel string) bool {
	if escapes(rel) || filepath.IsAbs(rel) {
		return false
	}
	parts := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	if len(parts) > 1 {
		return parts[0] == policyDir
	}
	return strings.HasPrefix(parts[0], "mcpolicy.")
}

func escapes(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// readResolved reads a regular file at a path whose symlinks were resolved,
// refusing it if the path has become a symlink since.
func readResolved(real string) ([]byte, error) {
	f, opened, err := hostfile.OpenRegular(real) // a FIFO there does not hold the import
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if now, err := os.Lstat(real); err != nil || !os.SameFile(opened, now) {
		return nil, fmt.Errorf("%s changed while it was read", real)
	}
	if opened.Size() > MaxPolicySize {
		return nil, fmt.Errorf("%s: %w", real, errTooLarge)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxPolicySize+1))
	if err == nil && len(b) > MaxPolicySize {
		err = fmt.Errorf("%s: %w", real, errTooLarge)
	}
	return b, err
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
