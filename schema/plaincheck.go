package schema

import (
	"math/big"
	"regexp"
	"sync"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// The plain check: #Policy as Go data (zplaintypes.go, generated from
// policy.cue by TestGeneratedPlainTypes), against which plain data is
// checked without compiling the schema or evaluating CUE. It answers
// "fits" only where it is sure, for the few forms the schema uses (string
// literals and patterns, numbers and their bounds, booleans, lists, closed structs,
// disjunctions); anything else is "not sure", and CUE decides. Compiling
// the schema and validating with CUE was most of a one-server build's own
// work (issue #17). The differential tests hold its "fits" to CUE's.

// plainType is one constraint of the schema: a value fits it when it fits
// one of Alts (a disjunction, each alternative a conjunction).
type plainType struct {
	Alts    []plainAlt
	Default bool // one alternative is marked default (*): a regular field may be absent
}

// plainAlt is one alternative of a disjunction.
type plainAlt struct {
	Kind    string       // "string", "int", "number", "bool", "list" or "struct"; "_": any value (never sure)
	Const   []string     // string: the value it must be (each of them)
	Match   []string     // string: regular expressions (RE2, as CUE's =~) it must match
	NoMatch []string     // string: regular expressions it must not match (!~)
	Not     []string     // string: values it must not be (!=)
	Bounds  []plainBound // int, number: every bound holds
	Elem    *plainType   // list: the type of every element; nil: any (never sure)
	MinLen  int          // list: at least this many elements ([_, ...])
	Fields  []plainField // struct: its fields; the struct is closed
	Pattern *plainType   // struct: [string]: T, for every other field
	Key     *plainType   // struct: [#Name]: T, the names Pattern takes (nil: any)
}

// plainBound is a bound on a number: Op is ">", ">=", "<" or "<=", N a
// decimal literal.
type plainBound struct {
	Op, N string
}

// plainField is one field of a struct type.
type plainField struct {
	Name     string
	Optional bool // name?: may be absent
	Required bool // name!: must be present
	Type     plainType
}

// fitsPlain reports whether the top-level declarations of a plain policy
// file surely fit #Policy; false is "not sure", not "invalid".
func fitsPlain(decls []ast.Decl) bool {
	return plainPolicyType.fitsStruct(decls)
}

func (t *plainType) fits(e ast.Expr) bool {
	for i := range t.Alts {
		if t.Alts[i].fits(e) {
			return true
		}
	}
	return false
}

// fitsStruct is fits for the declarations of a struct (or a file).
func (t *plainType) fitsStruct(decls []ast.Decl) bool {
	for i := range t.Alts {
		if t.Alts[i].Kind == "struct" && t.Alts[i].fitsFields(decls) {
			return true
		}
	}
	return false
}

// absentOK reports whether a regular field of type t may be left out: its
// value is then its default, an empty open list or a struct whose own
// fields may be left out, all concrete.
func (t *plainType) absentOK() bool {
	if t.Default {
		return true
	}
	if len(t.Alts) != 1 {
		return false
	}
	a := &t.Alts[0]
	switch a.Kind {
	case "list":
		return a.MinLen == 0
	case "struct":
		for i := range a.Fields {
			f := &a.Fields[i]
			if f.Required || !f.Optional && !f.Type.absentOK() {
				return false
			}
		}
		return true
	}
	return false
}

func (a *plainAlt) fits(e ast.Expr) bool {
	switch a.Kind {
	case "string":
		l, ok := e.(*ast.BasicLit)
		if !ok {
			return false
		}
		s, ok := unquoteString(l)
		return ok && a.fitsString(s)
	case "int", "number":
		l, ok := e.(*ast.BasicLit)
		if !ok || !(l.Kind == token.INT || a.Kind == "number" && l.Kind == token.FLOAT) || !decimal(l.Value, a.Kind == "number") {
			return false
		}
		return a.fitsBounds(l.Value)
	case "bool":
		l, ok := e.(*ast.BasicLit)
		return ok && (l.Kind == token.TRUE || l.Kind == token.FALSE)
	case "list":
		l, ok := e.(*ast.ListLit)
		if !ok || len(l.Elts) < a.MinLen || a.Elem == nil {
			return false
		}
		for _, x := range l.Elts {
			if !a.Elem.fits(x) { // an ellipsis or a comprehension fits no type
				return false
			}
		}
		return true
	case "struct":
		elts := structElts(e) // nil for anything but a struct literal; {} is no declarations
		return elts != nil && a.fitsFields(elts)
	}
	return false
}

func (a *plainAlt) fitsString(s string) bool {
	for _, c := range a.Const {
		if s != c {
			return false
		}
	}
	for _, n := range a.Not {
		if s == n {
			return false
		}
	}
	for _, re := range a.Match {
		if !plainRegexp(re).MatchString(s) {
			return false
		}
	}
	for _, re := range a.NoMatch {
		if plainRegexp(re).MatchString(s) {
			return false
		}
	}
	return true
}

// fitsBounds compares a decimal literal with each bound, exactly: a
// float64 would round 1024.0000000000001 to 1024.
func (a *plainAlt) fitsBounds(lit string) bool {
	if len(a.Bounds) == 0 {
		return true
	}
	x, ok := new(big.Rat).SetString(lit)
	if !ok {
		return false
	}
	for _, b := range a.Bounds {
		n, ok := new(big.Rat).SetString(b.N)
		if !ok {
			return false
		}
		c := x.Cmp(n)
		switch b.Op {
		case ">":
			ok = c > 0
		case ">=":
			ok = c >= 0
		case "<":
			ok = c < 0
		case "<=":
			ok = c <= 0
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
	return true
}

// fitsFields checks a closed struct: every field it declares, none it
// does not (unless Pattern takes it), the required ones present and the
// regular ones present or absentOK.
func (a *plainAlt) fitsFields(decls []ast.Decl) bool {
	fields, names, ok := plainFields(decls)
	if !ok {
		return false
	}
	for _, name := range names {
		f := a.field(name)
		if f == nil && (a.Pattern == nil || a.Key != nil && !a.Key.fitsName(name)) {
			return false
		}
		if f != nil && !f.Type.fits(fields[name].Value) || a.Pattern != nil && (a.Key == nil || a.Key.fitsName(name)) && !a.Pattern.fits(fields[name].Value) {
			return false
		}
	}
	for i := range a.Fields {
		f := &a.Fields[i]
		if fields[f.Name] != nil || f.Optional {
			continue
		}
		if f.Required || !f.Type.absentOK() {
			return false
		}
	}
	return true
}

// fitsName reports whether a field's name fits a pattern's key type.
func (t *plainType) fitsName(name string) bool {
	for i := range t.Alts {
		if t.Alts[i].Kind == "string" && t.Alts[i].fitsString(name) {
			return true
		}
	}
	return false
}

func (a *plainAlt) field(name string) *plainField {
	for i := range a.Fields {
		if a.Fields[i].Name == name {
			return &a.Fields[i]
		}
	}
	return nil
}

var plainRegexps sync.Map // pattern -> *regexp.Regexp

// plainRegexp compiles a pattern of the schema on first use: most
// policies reach few of them.
func plainRegexp(re string) *regexp.Regexp {
	if r, ok := plainRegexps.Load(re); ok {
		return r.(*regexp.Regexp)
	}
	r, _ := plainRegexps.LoadOrStore(re, regexp.MustCompile(re))
	return r.(*regexp.Regexp)
}
