package schema

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// yamlChecks reads a YAML policy with the parser CUE's YAML reader is
// built on, and refuses, at a line and column, what that reader takes
// silently or reports with a line at most:
//   - a file that is only "---" (no content: the file is empty);
//   - a second document: CUE's reader made a list of the two, and printed
//     the schema it did not unify with;
//   - a top level that is not a mapping;
//   - "<<" merge keys: CUE's reader lets a "<<" written after a key
//     replace it, where YAML says the key written in the mapping wins (a
//     reviewer reads `mode: ro`, a later `<<: {mode: rw}` compiles rw);
//   - a tag other than the core ones (!!str, !!int, !!float, !!bool,
//     !!null, !!map, !!seq): !!binary hides a value in base64, and a
//     custom tag (!include) reads as if it did something;
//   - an alias to an anchor not defined before it, an alias inside the
//     value it repeats, and aliases that expand to more than
//     maxAliasValues values (a billion-laughs file).
//
// Anchors and aliases are otherwise allowed: `b: *a` says in the file
// that b is a's value, which a reviewer reads there.
//
// A syntax error is left to CUE's reader, which reports it at its line.
// Columns are the parser's, in characters, as CUE's reader reports them.
func yamlChecks(file string, src []byte) Errors {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return Errors{emptyError(file)}
		}
		if m := unknownAnchorMsg().FindStringSubmatch(err.Error()); m != nil {
			return Errors{unknownAlias(file, src, m[1])}
		}
		return nil
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return Errors{{Pos: Pos{File: file, Line: next.Line, Col: next.Column},
			Msg:  "a second YAML document starts here: a policy is one document",
			Hint: `delete the "---" and what follows, or give the second policy a file of its own (a project's mcpolicy.d/ holds several)`}}
	} else if err != io.EOF {
		return nil // a syntax error further on: CUE's reader reports it
	}
	if len(doc.Content) != 1 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" && root.Value == "" && root.Style == 0 {
		return Errors{emptyError(file)} // a "---" and nothing else
	}
	if target := deref(root); target.Kind != yaml.MappingNode {
		return Errors{topLevel(Pos{File: file, Line: root.Line, Col: root.Column}, yamlKind(target))}
	}
	c := yamlChecker{file: file, expanded: map[*yaml.Node]int{}}
	c.walk(root)
	return c.errs
}

// maxAliasValues bounds the values aliases expand to. CUE's reader stops
// at 50,000 nodes it makes, at a line; this count, which also counts
// mapping keys, reaches the bound first and names the alias.
const maxAliasValues = 50_000

// maxYAMLProblems bounds the problems yamlChecks reports: a 4 MiB file
// of tags is one mistake repeated, not half a million messages.
const maxYAMLProblems = 20

type yamlChecker struct {
	file     string
	path     []string // quoted labels and "[i]" indices, down to the node walked
	errs     Errors
	aliased  int                // values the aliases met so far expand to
	expanded map[*yaml.Node]int // values a node expands to; -1 while it is being counted
	stopped  bool               // aliases already refused: stop counting
}

func (c *yamlChecker) add(n *yaml.Node, msg, hint string) {
	if len(c.errs) < maxYAMLProblems {
		c.errs = append(c.errs, &Error{Pos: Pos{File: c.file, Line: n.Line, Col: n.Column}, Path: displayLabels(c.path), Msg: msg, Hint: hint})
	}
}

// walk visits each node once, in document order, not through aliases.
func (c *yamlChecker) walk(n *yaml.Node) {
	if len(c.errs) >= maxYAMLProblems {
		return
	}
	if n.Style&yaml.TaggedStyle != 0 && !coreTags[n.ShortTag()] && !isMergeKey(n) {
		c.add(n, fmt.Sprintf("the YAML tag %s is not allowed in a policy", n.Tag),
			"a policy holds strings, numbers, true or false, lists and mappings as written: delete the tag (quote a value to keep it a string)")
	}
	switch n.Kind {
	case yaml.AliasNode:
		c.alias(n)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if isMergeKey(k) {
				c.add(k, `a "<<" merge key: refused`,
					"write each key out: CUE's YAML reader lets a merged key override one written beside it, so the policy would not say what it compiles to")
			}
			c.walk(k)
			c.path = append(c.path, quoteLabel(deref(k).Value))
			c.walk(v)
			c.path = c.path[:len(c.path)-1]
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			c.path = append(c.path, "["+strconv.Itoa(i)+"]")
			c.walk(e)
			c.path = c.path[:len(c.path)-1]
		}
	}
}

// coreTags are the tags a policy may write: each names what the value
// is read as anyway, or makes a number or a word a string.
var coreTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true, "!!map": true, "!!seq": true}

// isMergeKey is a "<<" key as CUE's reader takes it.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && (k.ShortTag() == "!!merge" || k.Value == "<<" && (k.Style == 0 || k.Tag == "!"))
}

// alias counts what an alias expands to, and refuses one that makes the
// aliases of the file expand past maxAliasValues, or that repeats a
// value holding it.
func (c *yamlChecker) alias(n *yaml.Node) {
	if c.stopped {
		return
	}
	size, cycle := c.expand(n)
	switch {
	case cycle != nil:
		c.stopped = true
		c.add(cycle, fmt.Sprintf("the YAML alias *%s is inside the value anchored &%s: it would repeat without end", cycle.Value, cycle.Value),
			"an alias repeats a value written before it, outside it")
	case c.aliased+size > maxAliasValues:
		c.stopped = true
		c.add(n, fmt.Sprintf("YAML aliases expand to more than %d values here", maxAliasValues),
			"a policy is data a reviewer reads: write the values out, or share parts with Jsonnet")
	default:
		c.aliased += size
	}
}

// expand is the number of values a node stands for, its aliases
// expanded (an alias counts one more), saturated past maxAliasValues;
// cycle is an alias inside the value it refers to.
func (c *yamlChecker) expand(n *yaml.Node) (size int, cycle *yaml.Node) {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1, nil
		}
		if c.expanded[n.Alias] == -1 {
			return 0, n
		}
		s, cyc := c.expand(n.Alias)
		return min(1+s, maxAliasValues+1), cyc
	}
	if s, ok := c.expanded[n]; ok && s >= 0 {
		return s, nil
	}
	c.expanded[n] = -1
	size = 1
	for _, ch := range n.Content {
		s, cyc := c.expand(ch)
		if cyc != nil {
			return 0, cyc
		}
		size = min(size+s, maxAliasValues+1)
	}
	c.expanded[n] = size
	return size, nil
}

// deref is the node an alias stands for, or the node itself.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// yamlKind names the kind of a top-level YAML value in words.
func yamlKind(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.ShortTag() == "!!null":
		return "null"
	case n.ShortTag() == "!!str":
		return fmt.Sprintf("a string (%s)", short(strconv.Quote(n.Value)))
	case n.ShortTag() == "!!bool":
		return n.Value
	case n.ShortTag() == "!!int" || n.ShortTag() == "!!float":
		return fmt.Sprintf("a number (%s)", short(n.Value))
	}
	return "a " + n.ShortTag() + " value"
}

// Compiled on first use: every mcpolicy process pays package init, few use it.
var unknownAnchorMsg = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`unknown anchor '([^']*)' referenced`) })

// unknownAlias is the error for an alias to an anchor not defined before
// it. The parser names the anchor, not where: the alias is found by
// parsing the file again with each text that may be an alias ("*name"
// where a value may start) turned into a plain word of the same length;
// the first such word of the name that parses as a plain value, where
// the text was, is the alias.
func unknownAlias(file string, src []byte, name string) *Error {
	e := &Error{Pos: Pos{File: file}, Msg: fmt.Sprintf("the YAML alias *%s has no anchor &%s before it", name, name),
		Hint: fmt.Sprintf("an alias repeats a value anchored earlier in the file: write &%s before the value to repeat, or write the value out", name)}
	word := append([]byte(nil), src...)
	type at struct{ line, col int }
	mine := map[at]bool{}
	line, col := 1, 1 // in characters, as the parser counts
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '*' && (i == 0 || bytes.IndexByte([]byte(" \t\n\r[{,"), src[i-1]) >= 0) {
			j := i + 1
			for j < len(src) && isAnchorChar(src[j]) {
				j++
			}
			if j > i+1 {
				word[i] = 'A'
				if string(src[i+1:j]) == name {
					mine[at{line, col}] = true
				}
			}
		}
		switch {
		case c == '\n':
			line, col = line+1, 1
		case c < 0x80 || c >= 0xc0: // not a UTF-8 continuation byte
			col++
		}
	}
	var doc yaml.Node
	if yaml.Unmarshal(word, &doc) != nil {
		return e // no position rather than a wrong one
	}
	var found *yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if found != nil {
			return
		}
		if n.Kind == yaml.ScalarNode && n.Style == 0 && mine[at{n.Line, n.Column}] && n.Value == "A"+name {
			found = n
			return
		}
		for _, ch := range n.Content {
			walk(ch)
		}
	}
	walk(&doc)
	if found != nil {
		e.Pos.Line, e.Pos.Col = found.Line, found.Column
	}
	return e
}

// isAnchorChar is a byte the parser takes in an anchor or alias name.
func isAnchorChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-'
}
