package schema

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
)

// firstToken returns the byte offset of the first thing a policy source
// says: past white space and the format's comments (YAML #, CUE //,
// Jsonnet //, # and /* */; JSON has none). ok is false when there is
// none: the file is empty as far as its reader goes.
func firstToken(ext string, src []byte) (at int, ok bool) {
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' && (ext == ".yaml" || ext == ".yml" || isJsonnetExt(ext)),
			c == '/' && bytes.HasPrefix(src[i:], []byte("//")) && (ext == ".cue" || isJsonnetExt(ext)):
			if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(src)
			}
		case c == '/' && bytes.HasPrefix(src[i:], []byte("/*")) && isJsonnetExt(ext):
			j := bytes.Index(src[i+2:], []byte("*/"))
			if j < 0 {
				return i, true // an unclosed comment: the parser says so
			}
			i += 2 + j + 2
		default:
			return i, true
		}
	}
	return 0, false
}

func isJsonnetExt(ext string) bool { return ext == ".jsonnet" || ext == ".libsonnet" }

// emptyPolicy reports a policy file that holds nothing but white space
// and comments. Readers took it for an empty object ("version: required
// field is missing", with no line) or an early end of input.
func emptyPolicy(file string, src []byte) *Error {
	ext := strings.ToLower(filepath.Ext(file))
	if _, ok := firstToken(ext, src); ok {
		return nil
	}
	return emptyError(file)
}

func emptyError(file string) *Error {
	example := `version: "v1" and servers: {}`
	switch strings.ToLower(filepath.Ext(file)) {
	case ".json":
		example = `{"version": "v1", "servers": {}}`
	case ".yaml", ".yml":
		example = `"version: v1" on one line and "servers: {}" on the next`
	case ".jsonnet", ".libsonnet":
		example = `{version: "v1", servers: {}}`
	}
	return &Error{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: `the file is empty: a policy needs version: "v1" and servers`,
		Hint: "the smallest policy is " + example + "; then one entry under servers for each MCP server"}
}

// topLevel reports a policy whose top level is not an object: a list, a
// string, a number or null. CUE printed the whole schema it did not
// unify with.
func topLevel(at Pos, got string) *Error {
	return &Error{Pos: at, Msg: "the top level must be an object (a mapping) with version and servers, not " + got,
		Hint: `a policy is one object: version: "v1" and servers, each server an entry under servers by its name`}
}

// rootKind is topLevel for a policy's value, when it is not a struct.
// pos is where its top-level value starts.
func rootKind(file string, src []byte, data cue.Value) *Error {
	if data.IncompleteKind() == cue.StructKind {
		return nil
	}
	pos := posOf(data.Pos(), file)
	if isJsonnet(file) || pos.Line == 0 {
		// The value's position is in the rendered JSON: the top level of
		// the source is its first token.
		at, _ := firstToken(strings.ToLower(filepath.Ext(file)), src)
		pos = offsetPos(file, src, at)
	}
	return topLevel(pos, kindOf(data))
}

// offsetPos is the line and column (in bytes) of a byte offset.
func offsetPos(file string, src []byte, at int) Pos {
	line := bytes.Count(src[:at], []byte("\n")) + 1
	col := at - bytes.LastIndexByte(src[:at], '\n') // in bytes
	return Pos{File: file, Line: line, Col: col}
}

// kindOf names the kind of a value in words, with the value when it is
// short: "null", "a list", `a string ("x")`.
func kindOf(v cue.Value) string {
	switch k := v.IncompleteKind(); {
	case k == cue.NullKind:
		return "null"
	case k == cue.ListKind:
		return "a list"
	case k == cue.StructKind:
		return "an object (a mapping)"
	case k == cue.StringKind:
		if s, err := v.String(); err == nil {
			return fmt.Sprintf("a string (%s)", short(fmt.Sprintf("%q", s)))
		}
		return "a string"
	case k == cue.BoolKind:
		if b, err := v.Bool(); err == nil {
			return fmt.Sprint(b)
		}
		return "true or false"
	case k&cue.NumberKind != 0 && k&^cue.NumberKind == 0:
		return fmt.Sprintf("a number (%s)", short(fmt.Sprint(v)))
	}
	return short(fmt.Sprint(v))
}

// kindWords names the kinds a schema value allows, in words.
func kindWords(k cue.Kind) string {
	var w []string
	if k&cue.StructKind != 0 {
		w = append(w, "an object (a mapping)")
	}
	if k&cue.ListKind != 0 {
		w = append(w, "a list")
	}
	if k&cue.StringKind != 0 {
		w = append(w, "a string")
	}
	switch {
	case k&cue.NumberKind == cue.IntKind:
		w = append(w, "a whole number")
	case k&cue.NumberKind != 0:
		w = append(w, "a number")
	}
	if k&cue.BoolKind != 0 {
		w = append(w, "true or false")
	}
	if k&cue.NullKind != 0 {
		w = append(w, "null")
	}
	return strings.Join(w, " or ")
}

// hasData reports whether a CUE file declares anything beyond its
// package clause and comments.
func hasData(f *ast.File) bool {
	for _, d := range f.Decls {
		switch d.(type) {
		case *ast.Package, *ast.CommentGroup:
		default:
			return true
		}
	}
	return false
}
