package schema

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"github.com/mcpolicy/mcpolicy/internal/editdist"
)

// convertCUEError turns CUE's validation errors into one Error per field,
// with the position in the user's file and the schema's @expect sentence.
func convertCUEError(err error, file string, data, policyDef cue.Value, locate func([]string) (Pos, bool)) Errors {
	var errs Errors
	seen := map[string]bool{}
	for _, e := range cueerrors.Errors(err) {
		elems := e.Path()
		if len(elems) > 0 && elems[0] == "#Policy" {
			elems = elems[1:]
		}
		f, args := e.Msg()
		raw := fmt.Sprintf(f, args...)
		if strings.HasSuffix(raw, "errors in empty disjunction:") {
			continue // a header; the disjuncts' own errors follow
		}
		display := displayPath(elems)
		if seen[display] {
			continue
		}
		seen[display] = true
		d := describe(elems, display, raw, file, e, data, policyDef)
		if locate != nil {
			d.Pos = Pos{File: file}
			if pos, ok := locate(elems); ok {
				d.Pos = pos
			}
		}
		errs = append(errs, d)
	}
	if len(errs) == 0 {
		errs = Errors{{Pos: Pos{File: file}, Msg: err.Error()}}
	}
	return errs
}

func describe(elems []string, display, raw, file string, e cueerrors.Error, data, policyDef cue.Value) *Error {
	out := &Error{Path: display, Pos: errorPos(elems, file, e, data)}
	got := data.LookupPath(dataPath(elems))
	expect := expectAt(policyDef, elems)

	switch {
	case raw == "field not allowed":
		name := unquote(elems[len(elems)-1])
		out.Msg = fmt.Sprintf("unknown field %q", name)
		allowed := fieldNames(schemaValue(policyDef, elems[:len(elems)-1]))
		if len(elems) > 1 && unquote(elems[len(elems)-2]) == "setenv" {
			out.Msg = fmt.Sprintf("%q is not an environment variable name", name)
			out.Hint = "setenv's names are letters, digits and _, not starting with a digit, e.g. GOFLAGS"
		} else if len(elems) > 1 && unquote(elems[len(elems)-2]) == "credentials" {
			out.Msg = fmt.Sprintf("%q is not an environment variable name", name)
			out.Hint = "credentials are keyed by the variable the server reads: letters, digits and _, not starting with a digit, e.g. GITHUB_TOKEN"
		} else if toolsArgsKey(elems) == 1 {
			out.Msg = fmt.Sprintf("%q is not a tool name or glob", name)
			out.Hint = "args' keys are the tools' names (or globs): 1 to 128 letters, digits, '_', '-', '.', and * ? [...], e.g. args: read_file: path: {under: [\"/workspace\"]}"
		} else if toolsArgsKey(elems) == 2 {
			out.Msg = fmt.Sprintf("%q is not an argument name", name)
			out.Hint = `write args: TOOL: ARG: {...}, ARG as the tool's input schema names it, e.g. path`
		} else if best := closest(name, allowed); best != "" {
			out.Hint = fmt.Sprintf("did you mean %q? allowed here: %s", best, strings.Join(allowed, ", "))
		} else if len(allowed) > 0 {
			out.Hint = "allowed here: " + strings.Join(allowed, ", ")
		}
	case !got.Exists() || strings.HasPrefix(raw, "incomplete value"):
		out.Msg = "required field is missing"
		if expect != "" {
			out.Msg += ": must be " + expect
		}
	case got.Err() != nil:
		// The user's own data conflicts (a CUE field declared twice with
		// two values): its value is no value to show.
		out.Msg = raw
		if strings.HasPrefix(raw, "conflicting values") {
			out.Hint = conflictHint
		}
	case expect == "" && wrongKind(policyDef, elems, got):
		out.Msg, out.Hint = kindMessage(policyDef, elems, got)
	case expect != "":
		out.Msg = "must be " + expect
		if got.IsConcrete() {
			out.Msg += fmt.Sprintf(" (got %s)", short(fmt.Sprint(got)))
		}
	default:
		out.Msg = raw
	}
	return out
}

// toolsArgsKey is 1 when elems end in a tools section's args.TOOL, 2 for
// args.TOOL.ARG, 0 otherwise.
func toolsArgsKey(elems []string) int {
	for k := 1; k <= 2; k++ {
		if n := len(elems); n >= k+2 && unquote(elems[n-k-1]) == "args" && unquote(elems[n-k-2]) == "tools" {
			return k
		}
	}
	return 0
}

// wrongKind reports whether a value is of none of the kinds the schema
// allows at its path (a list where an object goes, null for a server):
// CUE's message then prints the schema's whole struct.
func wrongKind(policyDef cue.Value, elems []string, got cue.Value) bool {
	want := schemaValue(policyDef, elems).IncompleteKind()
	return want != cue.BottomKind && got.IncompleteKind()&want == 0
}

// kindMessage says what kind of value goes at a path, and what was
// given, in words.
func kindMessage(policyDef cue.Value, elems []string, got cue.Value) (msg, hint string) {
	switch {
	case len(elems) == 1 && unquote(elems[0]) == "servers":
		return "must be an object (a mapping) from server names to servers, not " + kindOf(got),
			`each server is an entry under servers, by its name: servers: {NAME: {command: [...]}}`
	case len(elems) == 2 && unquote(elems[0]) == "servers":
		return "a server must be an object (a mapping) with at least command or image, not " + kindOf(got),
			`e.g. {command: ["npx", "-y", "some-server"]} or {image: "name:tag"}`
	}
	return "must be " + kindWords(schemaValue(policyDef, elems).IncompleteKind()) + ", not " + kindOf(got), ""
}

// errorPos prefers a position CUE reports in the user's file, then the value
// at the path, then its nearest ancestor that exists.
func errorPos(elems []string, file string, e cueerrors.Error, data cue.Value) Pos {
	for _, p := range cueerrors.Positions(e) {
		if p.IsValid() && p.Filename() != schemaFile {
			return posOf(p, file)
		}
	}
	for n := len(elems); n >= 0; n-- {
		v := data.LookupPath(dataPath(elems[:n]))
		if v.Exists() && v.Pos().IsValid() {
			return posOf(v.Pos(), file)
		}
	}
	return Pos{File: file}
}

func dataPath(elems []string) cue.Path {
	sels := make([]cue.Selector, 0, len(elems))
	for _, el := range elems {
		if i, err := strconv.Atoi(el); err == nil {
			sels = append(sels, cue.Index(i))
		} else {
			sels = append(sels, cue.Str(unquote(el)))
		}
	}
	return cue.MakePath(sels...)
}

// schemaValue walks the schema along a data path: list indices become "any
// element" and server names "any field".
func schemaValue(v cue.Value, elems []string) cue.Value {
	for _, el := range elems {
		v = oneOf(v, el)
		if _, err := strconv.Atoi(el); err == nil {
			v = v.LookupPath(cue.MakePath(cue.AnyIndex))
			continue
		}
		name := unquote(el)
		next := v.LookupPath(cue.MakePath(cue.Str(name)))
		if !next.Exists() {
			next = v.LookupPath(cue.MakePath(cue.Str(name).Optional()))
		}
		if !next.Exists() {
			next = v.LookupPath(cue.MakePath(cue.AnyString))
		}
		v = next
	}
	return v
}

// oneOf is, of a disjunction (scratch: one or a list), the disjunct that
// the next path element walks into: a list for an index, else a struct.
func oneOf(v cue.Value, el string) cue.Value {
	op, args := v.Expr()
	if op != cue.OrOp {
		return v
	}
	want := cue.StructKind
	if _, err := strconv.Atoi(el); err == nil {
		want = cue.ListKind
	}
	for _, a := range args {
		if a.IncompleteKind()&want != 0 {
			return a
		}
	}
	return v
}

// expectAt returns the @expect sentence for a field; a list element without
// its own takes the list's.
func expectAt(policyDef cue.Value, elems []string) string {
	for n := len(elems); n > 0; n-- {
		v := schemaValue(policyDef, elems[:n])
		attr := v.Attribute("expect")
		if s, err := attr.String(0); err == nil && s != "" {
			return s
		}
		if _, err := strconv.Atoi(elems[n-1]); err != nil {
			break // only climb out of list elements
		}
	}
	return ""
}

func fieldNames(v cue.Value) []string {
	var names []string
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil
	}
	for it.Next() {
		names = append(names, strings.TrimSuffix(it.Selector().String(), "?"))
	}
	sort.Strings(names)
	return names
}

// displayPath renders a path like servers."code-index".mounts[0].mode.
func displayPath(elems []string) string {
	var b strings.Builder
	for i, el := range elems {
		if _, err := strconv.Atoi(el); err == nil {
			b.WriteString("[" + el + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(quoteLabel(unquote(el)))
	}
	return b.String()
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// closest returns the allowed name nearest to a typo, if it is near enough.
func closest(name string, allowed []string) string {
	best, bestD := "", len(name)/2+2
	for _, a := range allowed {
		if d := editdist.Distance(name, a); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}
