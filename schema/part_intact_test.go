package schema

import (
	"testing"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
)

// TestSchemaPartDeclsIntact: every declaration schemaPart keeps is, token
// for token, the one in the whole schema. TestSchemaPart compares the
// definitions with cue.Value.Equals, which does not see a disjunct added or
// removed beside a default (*"ro" | "rw" against *"ro" | "rw" | "x"), a
// struct opened with "..." or an optional field: this compares syntax.
func TestSchemaPartDeclsIntact(t *testing.T) {
	whole, err := parser.ParseFile(schemaFile, schemaSource)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, d := range whole.Decls {
		if fd, ok := d.(*ast.Field); ok {
			name, _, _ := ast.LabelName(fd.Label)
			b, err := format.Node(fd)
			if err != nil {
				t.Fatal(err)
			}
			want[name] = append(want[name], string(b))
		}
	}
	for def := range want {
		f, err := parser.ParseFile(schemaFile, schemaPart(def))
		if err != nil {
			t.Fatalf("%s: %v", def, err)
		}
		got := map[string][]string{}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.Field:
				name, _, _ := ast.LabelName(d.Label)
				b, err := format.Node(d)
				if err != nil {
					t.Fatal(err)
				}
				got[name] = append(got[name], string(b))
			case *ast.Package:
			default:
				t.Errorf("part for %s: unexpected top-level %T", def, d)
			}
		}
		if len(got[def]) == 0 {
			t.Errorf("part for %s drops it", def)
		}
		for name, decls := range got {
			if len(decls) != len(want[name]) {
				t.Errorf("part for %s: %s has %d declarations, the schema %d", def, name, len(decls), len(want[name]))
				continue
			}
			for i := range decls {
				if decls[i] != want[name][i] {
					t.Errorf("part for %s: %s differs:\n%s\nschema:\n%s", def, name, decls[i], want[name][i])
				}
			}
		}
	}
}
