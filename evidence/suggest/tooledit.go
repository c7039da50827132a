package suggest

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"

	"github.com/mcpolicy/mcpolicy/schema"
)

// EditToolsAllow returns src (the policy file named file) with names added
// to server's tools.allow where the list is written, in its layout, every
// other byte kept. The server must have a tools section with allow
// written as a list: suggest adds to a reviewed tool surface, it does not
// make one (an absent section shows every tool).
func EditToolsAllow(file string, src []byte, server string, names []string) ([]byte, error) {
	e, root, err := parse(file, src, "add "+strings.Join(names, ", ")+" to server "+fmt.Sprintf("%q", server)+"'s tools.allow")
	if err != nil {
		return nil, err
	}
	var allow *ast.ListLit
	for _, s := range fieldsNamed(root, "servers") {
		for _, f := range fieldsNamed(s.Value, server) {
			for _, t := range fieldsNamed(f.Value, "tools") {
				for _, a := range fieldsNamed(t.Value, "allow") {
					l, ok := a.Value.(*ast.ListLit)
					if !ok || allow != nil {
						return nil, e.errorf(a, "tools.allow is not one plain list here: add %s by hand", strings.Join(names, ", "))
					}
					allow = l
				}
			}
		}
	}
	if allow == nil {
		return nil, fmt.Errorf("%s: server %q has no tools.allow list written here: add %s to it by hand", file, server, strings.Join(names, ", "))
	}
	var have []string
	for _, x := range allow.Elts {
		if _, ok := x.(*ast.Ellipsis); ok {
			return nil, e.errorf(x, "tools.allow is open (...): add %s by hand", strings.Join(names, ", "))
		}
		if b, ok := x.(*ast.BasicLit); ok && b.Kind == token.STRING {
			have = append(have, strings.Trim(b.Value, `'"`))
		}
	}
	var add []string
	for _, n := range names {
		if !slices.Contains(have, n) {
			add = append(add, n)
		}
	}
	if len(add) == 0 {
		return src, nil
	}
	if err := e.extend(allow, add); err != nil {
		return nil, err
	}
	return e.apply(), nil
}

// PatchToolsFile is EditToolsAllow, checked: the edited file must load
// (schema.LoadBytes; root bounds imports) and its server allow each name
// exactly. More than MaxEntries names are refused, as PatchFile does.
func PatchToolsFile(file string, src []byte, server string, tools []string, root string) (*Patch, error) {
	if len(tools) > MaxEntries {
		return nil, fmt.Errorf("%d tools were refused: more than one patch can be reviewed for (%d); a client calling that many may be probing the relay: read the log, and allow what the server needs by hand", len(tools), MaxEntries)
	}
	for _, n := range tools {
		if !toolName.MatchString(n) {
			return nil, fmt.Errorf("%q is not a tool name suggest allows exactly", n)
		}
	}
	out, err := EditToolsAllow(file, src, server, tools)
	if err != nil {
		return nil, err
	}
	pol, err := schema.LoadBytes(file, out, root)
	if err != nil {
		return nil, fmt.Errorf("internal error: the edited %s does not load: %v\n%s", file, err, out)
	}
	for _, s := range pol.Servers {
		if s.Name != server {
			continue
		}
		var allowed []string
		if s.Tools != nil {
			for _, a := range s.Tools.Allow {
				allowed = append(allowed, a.Pattern)
			}
		}
		for _, n := range tools {
			if !slices.Contains(allowed, n) {
				return nil, fmt.Errorf("internal error: the edited %s does not allow tool %s for %s:\n%s", file, n, server, out)
			}
		}
		return &Patch{File: file, Old: src, New: out}, nil
	}
	return nil, fmt.Errorf("internal error: the edited %s has no server %q (servers: %s)", file, server, names(pol.Servers))
}
