package schema

import (
	yaml "go.yaml.in/yaml/v3"
)

// mergeKeys refuses YAML merge keys ("<<"). CUE's YAML reader (v0.17.1)
// lets a "<<" written after a key replace it, where YAML says the key
// written in the mapping wins: a reviewer reads `mode: ro`, and a later
// `<<: {mode: rw}` compiles rw. A policy is reviewed as written, so it
// must say each key itself.
func mergeKeys(file string, src []byte) Errors {
	var doc yaml.Node
	if yaml.Unmarshal(src, &doc) != nil {
		return nil // CUE's reader reports the syntax error, positioned
	}
	var errs Errors
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0) {
					errs = append(errs, &Error{Pos: Pos{File: file, Line: k.Line, Col: k.Column},
						Msg:  `a "<<" merge key: refused`,
						Hint: "write each key out: CUE's YAML reader lets a merged key override one written beside it, so the policy would not say what it compiles to"})
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	return errs
}
