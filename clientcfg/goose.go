package clientcfg

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
	"go.yaml.in/yaml/v3"
)

// Goose (~/.config/goose/config.yaml) lists its MCP servers under a
// top-level "extensions:" map, each
//
//	github:
//	  type: stdio
//	  cmd: npx
//	  args: [-y, "@modelcontextprotocol/server-github"]
//	  envs: {GITHUB_TOKEN: ...}
//	  env_keys: [GITHUB_TOKEN]
//	  enabled: true
//	  timeout: 300
//
// type sse or streamable_http with uri: is a remote server; type builtin
// (and platform, frontend) is Goose's own, not a server to lint. The YAML
// is read into the same tree as JSON and TOML, with the positions of the
// file, and each extension into the shape entries are read in (cmd is
// command, envs env, env_keys env_vars, uri url).

// parseYAML reads a YAML document into a tree. An alias is read as a copy
// of its anchor's node, so nested aliases (a "billion laughs" file of a
// few hundred bytes) multiply: the copies are counted, and a file whose
// aliases expand past maxAliasNodes is refused at the alias that passes it.
func parseYAML(file string, src []byte) (*node, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&doc); err != nil {
		return nil, yamlError(file, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &node{kind: kObject, pos: position.Pos{File: file, Line: 1, Col: 1}}, nil
	}
	y := &yamlTree{file: file}
	n := y.from(doc.Content[0], 0, false)
	if y.err != nil {
		return nil, y.err
	}
	return n, nil
}

// maxAliasNodes bounds the nodes YAML aliases expand to in one file.
const maxAliasNodes = 10000

// yamlTree reads yaml nodes into a tree, counting what aliases expand to.
type yamlTree struct {
	file    string
	aliased int          // nodes read through an alias
	at      position.Pos // the alias being read
	err     error
}

var yamlLine = lazyre.New(`^yaml: line (\d+): (.*)$`)

// yamlError places a YAML syntax error at its line (yaml.v3 gives no
// column: 1).
func yamlError(file string, err error) error {
	e := &schema.Error{Pos: position.Pos{File: file, Line: 1, Col: 1}, Msg: "not valid YAML: " + err.Error()}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		e.Pos.Line, _ = strconv.Atoi(m[1])
		e.Msg = "not valid YAML: " + m[2]
	}
	return e
}

func (yt *yamlTree) from(y *yaml.Node, depth int, aliased bool) *node {
	n := &node{pos: position.Pos{File: yt.file, Line: y.Line, Col: y.Column}}
	if yt.err != nil {
		return n
	}
	if aliased {
		if yt.aliased++; yt.aliased > maxAliasNodes {
			yt.err = &schema.Error{Pos: yt.at, Msg: fmt.Sprintf("YAML aliases expand past %d nodes: not read"+
				"; hint: a client config needs no aliases (*name) nested in aliases; write the entries out", maxAliasNodes)}
			return n
		}
	}
	if y.Kind == yaml.AliasNode && y.Alias != nil && depth < 32 {
		if !aliased {
			yt.at = n.pos
		}
		a := yt.from(y.Alias, depth+1, true)
		a.pos = n.pos
		return a
	}
	switch y.Kind {
	case yaml.MappingNode:
		n.kind = kObject
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			n.keys = append(n.keys, k.Value)
			n.keyPos = append(n.keyPos, position.Pos{File: yt.file, Line: k.Line, Col: k.Column})
			n.vals = append(n.vals, yt.from(v, depth+1, aliased))
		}
	case yaml.SequenceNode:
		n.kind = kArray
		for _, c := range y.Content {
			n.elems = append(n.elems, yt.from(c, depth+1, aliased))
		}
	default:
		n.kind, n.str = kOther, y.Value
		if y.Tag == "!!str" || y.ShortTag() == "!!str" {
			n.kind = kString
		}
	}
	return n
}

// notClientYAML is the error for a YAML file given as a client config
// that is neither Goose's nor a Kubernetes manifest.
func notClientYAML(root *node) error {
	pos := root.pos
	if pos.Line == 0 {
		pos.Line, pos.Col = 1, 1
	}
	if root.kind == kObject && len(root.keys) > 0 {
		pos = root.keyPos[0]
	}
	return &schema.Error{Pos: pos, Msg: "not a client config lint reads (Goose's extensions:) nor a Kubernetes manifest (kind: Pod...): no server to lint" +
		"; hint: a Goose config lists its servers under a top-level \"extensions:\" map; a manifest goes to --manifest"}
}

// gooseSection returns Goose's extensions as a servers section entries
// are read from: each stdio or remote extension in the shared shape, the
// others (builtin, platform, frontend) left out with a note.
func (t *tolerance) gooseSection(ext *node) *node {
	if ext == nil || ext.kind != kObject {
		return ext
	}
	out := &node{kind: kObject, pos: ext.pos}
	for _, i := range ext.members() {
		name, e := ext.keys[i], ext.vals[i]
		typ := ""
		if e.kind == kObject {
			if tn, _ := e.get("type"); tn != nil {
				typ = tn.str
			}
		}
		switch typ {
		case "builtin", "platform", "frontend", "inline_python":
			t.noteIf(ext.keyPos[i], "a Goose %s extension (%s), not an MCP server it starts from this file: not linted", typ, name)
			continue
		}
		out.keys = append(out.keys, name)
		out.keyPos = append(out.keyPos, ext.keyPos[i])
		out.vals = append(out.vals, gooseEntry(e))
	}
	return out
}

// gooseEntry renames an extension's fields to the shared shape (cmd:
// command, envs: env, env_keys: env_vars, uri: url); the others are kept.
func gooseEntry(e *node) *node {
	if e == nil || e.kind != kObject {
		return e
	}
	rename := map[string]string{"cmd": "command", "envs": "env", "env_keys": "env_vars", "uri": "url"}
	out := &node{kind: kObject, pos: e.pos}
	for _, i := range e.members() {
		k := e.keys[i]
		if r, ok := rename[k]; ok {
			if v, _ := e.get(r); v != nil { // written both ways: the shared key is read
				continue
			}
			k = r
		}
		out.keys = append(out.keys, k)
		out.keyPos = append(out.keyPos, e.keyPos[i])
		out.vals = append(out.vals, e.vals[i])
	}
	return out
}
