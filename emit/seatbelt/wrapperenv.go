package seatbelt

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
)

// Env starts sandbox-exec with an environment made from nothing (env -i):
// clearing the caller's in the shell cannot be done portably (export -p
// lists nothing under bash, and no shell can unset a variable whose name is
// not an identifier: npm's per-registry tokens, AWS-SESSION).
const Env = "/usr/bin/env"

// positional is the word that expands to the granted NAME=value pairs the
// wrapper kept in its positional parameters: one word each, none when there
// are none (not even under set -u in bash 3.2).
const positional = `${1+"$@"}`

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fixedEnv is the environment the wrapper always gives the server, as
// lines of shell words NAME=value: PATH (see SearchPath), HOME (the
// scratch folder, else /var/empty) and TMPDIR (the scratch folder), then,
// with an egress allowlist, the proxy variables, and the policy's setenv
// values (which replace PATH, HOME or TMPDIR when they name one). A grant
// of one of these names does not replace it.
func fixedEnv(p *compiler.Plan) (names, lines []string, err error) {
	var words []string
	add := func(name, value string) error {
		v, err := quoteSh(value)
		if err != nil {
			return err
		}
		names, words = append(names, name), append(words, name+"="+v)
		return nil
	}
	if err := add("PATH", strings.Join(SearchPath(p.Runtime.Name), ":")); err != nil {
		return nil, nil, err
	}
	if p.Scratch != nil {
		names, words = append(names, "HOME", "TMPDIR"), append(words, `HOME="$SCRATCH"`, `TMPDIR="$SCRATCH"`)
	} else if err := add("HOME", "/var/empty"); err != nil {
		return nil, nil, err
	}
	lines = append(lines, strings.Join(words, " "))
	if p.Network.Mode == "allowlist" {
		words = nil
		for _, e := range sandbox.ProxyEnv(p.Network.ProxyPort) {
			if err := add(e[0], e[1]); err != nil {
				return nil, nil, err
			}
		}
		lines = append(lines, strings.Join(words, " "))
	}
	if len(p.SetEnv) > 0 { // the policy's constants, last: env -i lets them win
		words = nil
		for _, e := range p.SetEnv {
			if err := add(e.Name, e.Value); err != nil {
				return nil, nil, err
			}
		}
		lines = append(lines, strings.Join(words, " "))
	}
	return names, lines, nil
}

// grantedEnv returns the lines that keep the granted variables the caller
// sets, as NAME=value in the positional parameters, before the script sets
// any variable of its own (a grant may share a name with one: SCRATCH,
// PROJECT_ROOT), and the word that passes them to env -i. The values are
// never spelled in the script: a value is data, whatever it holds.
func grantedEnv(p *compiler.Plan) (capture, word string, err error) {
	fixed, _, err := fixedEnv(p)
	if err != nil {
		return "", "", err
	}
	var b strings.Builder
	b.WriteString("# The server's environment is made from nothing (env -i, at the end): the fixed\n" +
		"# variables given there, and the granted ones the caller sets, kept here in place\n" +
		"# of this script's arguments, before it sets any variable of its own. A granted\n" +
		"# variable the caller leaves unset stays unset.\n" +
		"set --")
	for _, name := range p.EnvNames() {
		if !identifier.MatchString(name) {
			return "", "", fmt.Errorf("env grant %q is not a variable name", name)
		}
		if slices.Contains(fixed, name) {
			continue // the wrapper sets it
		}
		fmt.Fprintf(&b, " \\\n  ${%s+\"%s=$%s\"}", name, name, name)
	}
	b.WriteString("\n")
	return b.String(), positional, nil
}
