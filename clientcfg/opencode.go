package clientcfg

import (
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// opencode (opencode.json or opencode.jsonc in a project, and
// ~/.config/opencode/opencode.json) lists its MCP servers under a
// top-level "mcp" object:
//
//	"mcp": {
//	  "files": {"type": "local", "command": ["npx", "-y", "x"], "environment": {"K": "V"}, "enabled": false},
//	  "docs":  {"type": "remote", "url": "https://...", "headers": {"Authorization": "..."}}
//	}
//
// command is an array (the program, then its arguments), environment is
// env. VS Code's settings.json has an "mcp" key too, holding "servers"
// (and "inputs"): an "mcp" object with neither is opencode's.

// opencodeMCP reports whether the top-level "mcp" object is opencode's.
func opencodeMCP(mcp *node) bool {
	if mcp == nil || mcp.kind != kObject {
		return false
	}
	for _, k := range []string{"servers", "inputs"} {
		if v, _ := mcp.get(k); v != nil {
			return false
		}
	}
	return true
}

// opencodeSection returns opencode's "mcp" object as a servers section
// entries are read from: each entry's command array split into command and
// args, environment read as env; the other fields are kept (enabled,
// headers, url...).
func opencodeSection(mcp *node) *node {
	out := &node{kind: kObject, pos: mcp.pos}
	for _, i := range mcp.members() {
		out.keys = append(out.keys, mcp.keys[i])
		out.keyPos = append(out.keyPos, mcp.keyPos[i])
		out.vals = append(out.vals, opencodeEntry(mcp.vals[i]))
	}
	return out
}

func opencodeEntry(e *node) *node {
	if e == nil || e.kind != kObject {
		return e
	}
	out := &node{kind: kObject, pos: e.pos}
	add := func(k string, pos position.Pos, v *node) {
		out.keys = append(out.keys, k)
		out.keyPos = append(out.keyPos, pos)
		out.vals = append(out.vals, v)
	}
	for _, i := range e.members() {
		k, v := e.keys[i], e.vals[i]
		switch {
		case k == "command" && v.kind == kArray && len(v.elems) > 0:
			add("command", e.keyPos[i], v.elems[0])
			if a, _ := e.get("args"); a == nil {
				add("args", e.keyPos[i], &node{kind: kArray, pos: v.pos, elems: v.elems[1:]})
			}
		case k == "command" && v.kind == kArray: // []: no program
			add("command", e.keyPos[i], &node{kind: kString, pos: v.pos})
		case k == "environment":
			if env, _ := e.get("env"); env == nil {
				add("env", e.keyPos[i], opencodeRefs(v))
			}
		case k == "headers":
			add(k, e.keyPos[i], opencodeRefs(v))
		default:
			add(k, e.keyPos[i], v)
		}
	}
	return out
}

// opencodeEnv is opencode's reference to its own environment, {env:NAME},
// which it substitutes anywhere in the file before reading it.
var opencodeEnv = lazyre.New(`(^|[^$])\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// opencodeRefs returns an environment or headers object with each
// {env:NAME} written as the ${env:NAME} the other readers know as a
// reference (not a value written inline); positions are kept.
func opencodeRefs(n *node) *node {
	if n == nil || n.kind != kObject {
		return n
	}
	out := *n
	out.vals = make([]*node, len(n.vals))
	for i, v := range n.vals {
		out.vals[i] = v
		if v.kind == kString && opencodeEnv.MatchString(v.str) {
			c := *v
			c.str = opencodeEnv.ReplaceAllString(v.str, "${1}$${env:${2}}")
			out.vals[i] = &c
		}
	}
	return &out
}
