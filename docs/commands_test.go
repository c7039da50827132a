package docs_test

import (
	"bytes"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/cmd/mcpolicy/cli"
	"mvdan.cc/sh/v3/syntax"
)

// actionsExprRe: a GitHub Actions expression, ${{ ... }}, which is no shell.
var actionsExprRe = regexp.MustCompile(`\$\{\{[^}]*\}\}`)

// TestShownCommandsParse covers the commands the docs show without their
// output, which TestDocCommands cannot run (installs, engines, a Mac, CI
// steps): every mcpolicy command line in an sh block, or in a `run:` step
// of a yaml block, must name a subcommand and flags mcpolicy has. Each is
// parsed as shell (mvdan.cc/sh), and run with --help put before its "--"
// (if any): cobra then checks the subcommand and every flag, prints the
// help and runs nothing. A word with an expansion ("$HOME/x", $(...)) is
// passed as the placeholder X.
func TestShownCommandsParse(t *testing.T) {
	n := 0
	for _, b := range readBlocks(t) {
		var src string
		switch b.lang {
		case "sh":
			src = strings.Join(b.body, "\n")
		case "yaml":
			for _, l := range b.body {
				if _, cmd, ok := strings.Cut(l, "run: "); ok {
					src += actionsExprRe.ReplaceAllString(cmd, "X") + "\n"
				}
			}
		default:
			continue
		}
		f, err := syntax.NewParser().Parse(strings.NewReader(src), b.loc())
		if err != nil {
			t.Errorf("%s: not shell: %v", b.loc(), err)
			continue
		}
		syntax.Walk(f, func(node syntax.Node) bool {
			call, ok := node.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			words := make([]string, len(call.Args))
			for i, w := range call.Args {
				words[i] = literal(w)
			}
			if path.Base(words[0]) != "mcpolicy" {
				return true
			}
			n++
			args := words[1:]
			dash := len(args)
			for i, a := range args {
				if a == "--" {
					dash = i
					break
				}
			}
			args = append(append(append([]string(nil), args[:dash]...), "--help"), args[dash:]...)
			t.Logf("%s: mcpolicy %s", b.loc(), strings.Join(words[1:], " "))
			var out, errb bytes.Buffer
			if code := cli.Run(args, &out, &errb); code != 0 {
				t.Errorf("%s:%d: mcpolicy %s: exit %d: %s", b.file, b.line+int(call.Pos().Line()),
					strings.Join(words[1:], " "), code, strings.TrimSpace(errb.String()))
			}
			return true
		})
	}
	if n == 0 {
		t.Error("no mcpolicy command found in sh or yaml blocks")
	}
}

// literal is a word's text with its quotes removed, or X when it expands
// something.
func literal(w *syntax.Word) string {
	var sb strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			sb.WriteString(p.Value)
		case *syntax.SglQuoted:
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "X"
				}
				sb.WriteString(l.Value)
			}
		default:
			return "X"
		}
	}
	return sb.String()
}
