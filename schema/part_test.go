package schema

import (
	"bytes"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"
)

// TestSchemaPart: schemaPart, which reads the schema as text, keeps what
// the syntax tree says each definition reaches and blanks the rest; the
// part compiles, and the definition in it is the one in the whole schema.
func TestSchemaPart(t *testing.T) {
	f, err := parser.ParseFile(schemaFile, schemaSource)
	if err != nil {
		t.Fatal(err)
	}
	decls := map[string][]*ast.Field{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.Field); ok {
			name, _, err := ast.LabelName(fd.Label)
			if err != nil {
				t.Fatal(err)
			}
			decls[name] = append(decls[name], fd)
		}
	}
	whole := cuecontext.New().CompileBytes(schemaSource, cue.Filename(schemaFile))
	for def := range decls {
		keep := map[string]bool{def: true}
		for todo := []string{def}; len(todo) > 0; {
			name := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			for _, fd := range decls[name] {
				ast.Walk(fd.Value, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok && decls[id.Name] != nil && !keep[id.Name] {
						keep[id.Name] = true
						todo = append(todo, id.Name)
					}
					return true
				}, nil)
			}
		}
		part := schemaPart(def)
		if len(part) != len(schemaSource) || bytes.Count(part, []byte("\n")) != bytes.Count(schemaSource, []byte("\n")) {
			t.Fatalf("%s: the part does not keep every position", def)
		}
		for name, fds := range decls {
			for _, fd := range fds {
				// Comments go; a declaration kept starts with its label.
				got := string(part[fd.Pos().Offset():fd.End().Offset()])
				if kept := strings.HasPrefix(got, name+":"); kept != keep[name] {
					t.Errorf("part for %s: %s kept=%v, want %v", def, name, kept, keep[name])
				}
			}
		}
		pf, err := parser.ParseFile(schemaFile, part, parser.ParseComments)
		if err != nil {
			t.Fatalf("part for %s: %v", def, err)
		}
		if len(ast.Comments(pf)) > 0 {
			t.Errorf("part for %s keeps comments", def)
		}
		v := cuecontext.New().CompileBytes(part, cue.Filename(schemaFile))
		if err := v.Err(); err != nil {
			t.Fatalf("part for %s: %v", def, err)
		}
		path := cue.MakePath(cue.Def(def))
		if got, want := v.LookupPath(path), whole.LookupPath(path); !got.Equals(want) || got.Validate() != nil {
			t.Errorf("part for %s: %v\nwant %v", def, got, want)
		}
	}
}
