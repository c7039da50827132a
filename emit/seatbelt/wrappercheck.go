package seatbelt

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// WrapperError is why a wrapper fails CheckWrapper, at a line of it (0:
// the script as a whole).
type WrapperError struct {
	Line int
	Msg  string
}

func (e *WrapperError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

func wrapperError(line uint, format string, args ...any) error {
	return &WrapperError{Line: int(line), Msg: fmt.Sprintf(format, args...)}
}

// CheckWrapper reports why a wrapper script would hand the server variables
// of its caller's environment that the script does not name, or nil: every
// start of sandbox-exec must be `[exec] env -i WORD... sandbox-exec ...`,
// each WORD a NAME=value or the positional parameters, which then hold only
// what one top-level `set -- ${NAME+"NAME=$NAME"}...` put there before it.
// This is the shape Wrapper writes; a wrapper built before it cleared the
// environment in the shell, which bash and zsh do not do (export -p), and
// fails here. It reads the script, and runs nothing.
func CheckWrapper(src []byte) error {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(bytes.NewReader(src), "")
	if err != nil {
		return wrapperError(0, "not a POSIX shell script this reader can parse (%v)", err)
	}
	var problem error
	fail := func(pos syntax.Pos, format string, args ...any) {
		if problem == nil {
			problem = wrapperError(pos.Line(), format, args...)
		}
	}
	var starts []*syntax.CallExpr
	usesPositional := false
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || problem != nil {
			return problem == nil
		}
		args := call.Args
		for len(args) > 1 && (args[0].Lit() == "exec" || args[0].Lit() == "command") {
			args = args[1:]
		}
		name := args[0].Lit()
		switch {
		case name == "":
			fail(args[0].Pos(), "runs a command whose name is not written out (%s): what it starts is not known", printWord(args[0]))
		case name == "eval" || name == "." || name == "source":
			fail(args[0].Pos(), "runs code through %s: what it starts is not known", name)
		case path.Base(name) == path.Base(SandboxExec):
			fail(args[0].Pos(), "starts %s directly, not through %s -i: the server gets the caller's whole environment", name, Env)
		case path.Base(name) == "env":
			rest := args[1:]
			i := 0
			for i < len(rest) && strings.HasPrefix(rest[i].Lit(), "-") && !isAssignment(rest[i]) {
				i++
			}
			opts := rest[:i]
			for i < len(rest) && (isAssignment(rest[i]) || isPositional(rest[i])) {
				usesPositional = usesPositional || isPositional(rest[i])
				i++
			}
			if i == len(rest) || path.Base(rest[i].Lit()) != path.Base(SandboxExec) {
				if i < len(rest) && rest[i].Lit() == "" {
					fail(rest[i].Pos(), "passes %s to env: only NAME=value words, or the positional parameters, say which variables the server gets", printWord(rest[i]))
				}
				return true // env starting something else
			}
			if len(opts) == 0 || opts[0].Lit() != "-i" || len(opts) > 2 || len(opts) == 2 && opts[1].Lit() != "--" {
				fail(args[0].Pos(), "starts sandbox-exec through env without -i: the server gets the caller's whole environment")
			}
			starts = append(starts, call)
		}
		return true
	})
	if problem != nil {
		return problem
	}
	if len(starts) == 0 {
		return wrapperError(0, "does not start sandbox-exec through %s -i", Env)
	}
	if usesPositional {
		return checkCapture(f, starts)
	}
	return nil
}

// checkCapture: the positional parameters env -i reads were set once, at
// the top level and before every start, to granted variables only. Inside
// a function they are the function's own, so function bodies are skipped.
func checkCapture(f *syntax.File, starts []*syntax.CallExpr) error {
	var sets []*syntax.CallExpr
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			return false
		case *syntax.CallExpr:
			if len(n.Args) > 0 && (n.Args[0].Lit() == "shift" || n.Args[0].Lit() == "set" && setsPositional(n.Args[1:])) {
				sets = append(sets, n)
			}
		}
		return true
	})
	if len(sets) != 1 {
		return wrapperError(0, "the positional parameters env -i reads are set %d times (want one `set -- ${NAME+\"NAME=$NAME\"}...` at the top): which variables the server gets is not known", len(sets))
	}
	set := sets[0]
	topLevel := false
	for _, st := range f.Stmts {
		topLevel = topLevel || st.Cmd == set
	}
	if !topLevel || len(set.Args) < 2 || set.Args[1].Lit() != "--" {
		return wrapperError(set.Pos().Line(), "the positional parameters env -i reads are not set by one `set -- ...` at the top of the script")
	}
	for _, w := range set.Args[2:] {
		if m := keptVariable.FindStringSubmatch(printWord(w)); m == nil || m[1] != m[2] || m[1] != m[3] {
			return wrapperError(w.Pos().Line(), "%s is not a granted variable kept by name (${NAME+\"NAME=$NAME\"})", printWord(w))
		}
	}
	for _, s := range starts {
		if s.Pos().Offset() < set.Pos().Offset() {
			return wrapperError(s.Pos().Line(), "sandbox-exec is started before the variables it gets are kept")
		}
	}
	return nil
}

var keptVariable = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\+"([A-Za-z_][A-Za-z0-9_]*)=\$([A-Za-z_][A-Za-z0-9_]*)"\}$`)

// setsPositional: set with an operand, or --, replaces the positional
// parameters; set -eu changes options only.
func setsPositional(args []*syntax.Word) bool {
	for _, a := range args {
		if l := a.Lit(); l == "" || l == "--" || !strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "+") {
			return true
		}
	}
	return false
}

// isAssignment: a word that starts with NAME= written out.
func isAssignment(w *syntax.Word) bool {
	if len(w.Parts) == 0 {
		return false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return false
	}
	name, _, found := strings.Cut(l.Value, "=")
	return found && identifier.MatchString(name)
}

// isPositional: "$@", or ${1+"$@"}, which is the same, and empty, not an
// error, in bash 3.2 under set -u.
func isPositional(w *syntax.Word) bool {
	s := printWord(w)
	return s == positional || s == `"$@"`
}

func printWord(w *syntax.Word) string {
	var b bytes.Buffer
	syntax.NewPrinter().Print(&b, w)
	return b.String()
}
