package schema

import (
	"strconv"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// duplicateServers reports a server name declared more than once. CUE would
// merge the two declarations; a reviewer must see every grant in one place.
func duplicateServers(file string, n ast.Node) Errors {
	var decls []ast.Decl
	switch n := n.(type) {
	case *ast.File:
		decls = n.Decls
	case *ast.StructLit:
		decls = n.Elts
	}
	seen := map[string]token.Pos{}
	var errs Errors
	for _, d := range decls {
		f, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		if name, _, _ := labelName(f.Label); name != "servers" {
			continue
		}
		s, ok := f.Value.(*ast.StructLit)
		if !ok {
			continue
		}
		for _, e := range s.Elts {
			sf, ok := e.(*ast.Field)
			if !ok {
				continue
			}
			name, _, ok := labelName(sf.Label) // as CUE reads it: raw, escaped and unnormalised spellings are one name
			if !ok {
				continue
			}
			if first, dup := seen[name]; dup {
				errs = append(errs, DuplicateServer(posOf(sf.Pos(), file), name, posOf(first, file)))
				continue
			}
			seen[name] = sf.Pos()
		}
	}
	return errs
}

// DuplicateServer is the error for a server name declared twice, in one
// file or across the files of a project.
func DuplicateServer(at Pos, name string, first Pos) *Error {
	return &Error{Pos: at, Path: FieldPath("servers", name), Msg: "server declared twice (first at " + first.String() + ")",
		Hint: "declare each server once, so a reviewer sees all of its grants together"}
}

// duplicateKeys reports a key written twice in one object of a JSON or
// YAML policy, at the second, with the first's position. JSON readers
// keep the last, CUE's unifies the two: equal values passed unseen and
// different ones printed "_|_ // conflicting values" at a list element.
// Either way a reviewer reads one value and the other may decide. (In
// CUE a field declared twice is the language's unification, and only a
// server declared twice is refused: duplicateServers.)
func duplicateKeys(file string, src []byte, n ast.Node) Errors {
	var errs Errors
	var path []string // quoted labels and "[i]" indices, down to the value walked
	var walkValue func(x ast.Expr)
	walkFields := func(decls []ast.Decl) {
		seen := map[string]token.Pos{}
		for _, d := range decls {
			f, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			name, _, ok := labelName(f.Label)
			if !ok {
				continue
			}
			at := keyPos(f.Label, src)
			if first, dup := seen[name]; dup {
				if len(path) == 1 && path[0] == "servers" {
					errs = append(errs, DuplicateServer(posOf(at, file), name, posOf(first, file)))
				} else {
					p := posOf(first, file)
					errs = append(errs, &Error{Pos: posOf(at, file), Path: displayLabels(append(path, quoteLabel(name))),
						Msg:  "key declared twice (first at " + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col) + ")",
						Hint: "write each key once: the readers of a policy keep one of the two, and a reviewer may read the other"})
				}
				continue
			}
			seen[name] = at
			path = append(path, quoteLabel(name))
			walkValue(f.Value)
			path = path[:len(path)-1]
		}
	}
	walkValue = func(x ast.Expr) {
		switch x := x.(type) {
		case *ast.StructLit:
			walkFields(x.Elts)
		case *ast.ListLit:
			for i, e := range x.Elts {
				path = append(path, "["+strconv.Itoa(i)+"]")
				walkValue(e)
				path = path[:len(path)-1]
			}
		}
	}
	switch n := n.(type) {
	case *ast.File:
		walkFields(n.Decls)
	case ast.Expr:
		walkValue(n)
	}
	return errs
}

// displayLabels joins a path of quoted labels (quoteLabel) and "[i]"
// indices the way errors show it: servers."code-index".mounts[0].mode. A
// quoted label never starts with "[".
func displayLabels(labels []string) string {
	var b []byte
	for i, l := range labels {
		if i > 0 && l[0] != '[' {
			b = append(b, '.')
		}
		b = append(b, l...)
	}
	return string(b)
}

// keyPos is where a key starts. CUE's JSON reader turns a key that is an
// identifier ("version") into one, placed after its opening quote.
func keyPos(l ast.Label, src []byte) token.Pos {
	p := l.Pos()
	if _, ident := l.(*ast.Ident); ident && p.IsValid() {
		if o := p.Offset(); o > 0 && o <= len(src) && src[o-1] == '"' {
			return p.Add(-1)
		}
	}
	return p
}
