// Package ruleexample runs a lint rule's own examples the way `mcpolicy
// lint` reads them: a policy compiled in a scratch project, a client
// config or a manifest read by clientcfg. The registry's test proves each
// rule on its examples with it, and docs/rules.md shows what lint says of
// each bad example, severity included.
package ruleexample

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/project"
)

// files are the names an example's text is written to, by kind.
var files = map[string]string{"policy": "mcpolicy.cue", "client": "claude_desktop_config.json", "manifest": "deployment.yaml"}

// Targets writes an example into base (a fresh folder: the project in
// base/proj, the home in base/home, the example's files in them) and
// reads it as lint does.
func Targets(e lint.Example, base string) ([]*readback.Target, error) {
	root, home := filepath.Join(base, "proj"), filepath.Join(base, "home")
	for _, d := range []string{root, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	for name, content := range e.Files {
		p := filepath.Join(root, name)
		if rel, ok := strings.CutPrefix(name, "~/"); ok {
			p = filepath.Join(home, rel)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				return nil, err
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	name, ok := files[e.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown example kind %q", e.Kind)
	}
	file := filepath.Join(root, name)
	text := strings.ReplaceAll(e.Text, "${PROJECT_PARENT}", base)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return nil, err
	}
	if e.Kind != "policy" {
		ts, err := clientcfg.Read(file, home)
		if err != nil {
			return nil, fmt.Errorf("%v\n%s", err, text)
		}
		return ts, nil
	}
	proj, err := project.Discover(root)
	if err != nil {
		return nil, err
	}
	plans, err := proj.Compile(home)
	if err != nil {
		return nil, fmt.Errorf("%v\n%s", err, text)
	}
	ts := lint.PolicyTargets(plans, proj.Root, home)
	for _, t := range ts {
		t.Unbuildable = project.Problems(t.Plan)
	}
	return ts, nil
}

// Findings runs one rule on an example.
func Findings(rule string, e lint.Example, base string) ([]lint.Finding, error) {
	ts, err := Targets(e, base)
	if err != nil {
		return nil, err
	}
	return lint.Run(ts, lint.Options{Only: []string{rule}}).Findings, nil
}

// Says is what lint says of a rule's bad example, one finding a line as
// `mcpolicy lint` prints it (FILE:LINE:COL: RULE severity message), with
// the scratch folders written as the example names them: the project as
// ".", the home as "~".
func Says(r *lint.Rule) ([]string, error) {
	base, err := os.MkdirTemp("", "mcpolicy-rule-example-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	fs, err := Findings(r.ID, r.Bad, base)
	if err != nil {
		return nil, err
	}
	real, _ := filepath.EvalSymlinks(base)
	var out []string
	for _, f := range fs {
		line := fmt.Sprintf("%s:%d:%d: %s %s %s", filepath.Base(f.Pos.File), f.Pos.Line, f.Pos.Col, f.Rule, f.Level, f.Message)
		for _, b := range []string{real, base} {
			line = strings.ReplaceAll(line, filepath.Join(b, "proj"), ".")
			line = strings.ReplaceAll(line, filepath.Join(b, "home"), "~")
			line = strings.ReplaceAll(line, b, "PROJECT_PARENT")
		}
		out = append(out, line)
	}
	return out, nil
}
