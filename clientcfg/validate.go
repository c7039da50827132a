package clientcfg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
)

// A client file is read before it is written, and the result read again
// before it replaces the file, each as the client itself reads it: strict
// JSON for every JSON client but VS Code and Zed (JSONC). A file the client
// would not load, or of a shape mcpolicy cannot add to without guessing, is
// never touched; a result that would not load, or that lost anything, is
// never written.

// readAsClient parses a JSON client file as c's client reads it and checks
// the shape an entry is merged into: an object at the top, c.Key (when
// there) an object of servers, no key the client would read twice. A
// leading byte-order mark is read past (and kept by the writer).
func readAsClient(c *Client, file string, src []byte) (*node, error) {
	root, err := parseJSON(file, src)
	if err != nil {
		return nil, untouched(err, "")
	}
	if !c.JSONC {
		if err := hugeNumber(root, ""); err != nil {
			return nil, untouched(err, fmt.Sprintf("%s reads it as an infinity; mcpolicy cannot read it to check that the file keeps it", c.Name))
		}
		if err := strictJSON(file, src); err != nil {
			return nil, untouched(err, fmt.Sprintf("%s reads strict JSON, so it does not load this file either", c.Name))
		}
	}
	if root.kind != kObject {
		return nil, untouched(&schema.Error{Pos: root.pos, Msg: fmt.Sprintf("the top level is %s, not an object", root.kind)}, "")
	}
	if err := twice(root, ""); err != nil {
		return nil, untouched(err, "")
	}
	servers, _ := root.get(c.Key)
	if servers == nil {
		return root, nil
	}
	if servers.kind != kObject {
		return nil, untouched(&schema.Error{Pos: servers.pos, Msg: fmt.Sprintf("%q is %s, not an object of servers", c.Key, servers.kind)},
			fmt.Sprintf("%s does not read it either; make it an object ({}) or remove it, then run again", c.Name))
	}
	if err := twice(servers, c.Key+"."); err != nil {
		return nil, untouched(err, "")
	}
	return root, nil
}

// AsClient is a JSON client file as its client reads it (ReadAsClient):
// what the writer needs to know of it before it merges an entry in.
type AsClient struct{ root *node }

// ReadAsClient reads a JSON client file as c's client reads it (strict
// JSON or JSONC) and checks the shape an entry is merged into; the error
// says the file is left untouched.
func ReadAsClient(c *Client, file string, src []byte) (*AsClient, error) {
	root, err := readAsClient(c, file, src)
	if err != nil {
		return nil, err
	}
	return &AsClient{root}, nil
}

// Entry reports whether the file has c's object of servers, whether it
// holds an entry for server, and whether that entry's launch is
// mcpolicy's (Managed).
func (f *AsClient) Entry(c *Client, server string) (servers, exists, managed bool) {
	s, _ := f.root.get(c.Key)
	e, _ := s.get(server)
	return s != nil, e != nil, managedEntry(e)
}

// CheckResult reads out, the merged file, as the client will (see
// checkResult); before is src as ReadAsClient read it (nil: src is new,
// or unread).
func CheckResult(c *Client, file string, src, out []byte, server string, want map[string]any, before *AsClient) error {
	var b *node
	if before != nil {
		b = before.root
	}
	return checkResult(c, file, src, out, server, want, b)
}

// twice refuses a key written twice in obj: the client reads the last one,
// and an entry merged into the first would not be the one it starts.
func twice(obj *node, prefix string) error {
	first := map[string]position.Pos{}
	for i, k := range obj.keys {
		if p, ok := first[k]; ok {
			return &schema.Error{Pos: obj.keyPos[i], Msg: fmt.Sprintf("%s%s is written twice (first at %d:%d); the client reads only the last", prefix, k, p.Line, p.Col)}
		}
		first[k] = obj.keyPos[i]
	}
	return nil
}

// hugeNumber refuses the first number past what a 64-bit float holds
// (1e400: JavaScript reads it as Infinity, Go's decoder not at all), at
// its place, naming its key.
func hugeNumber(n *node, path string) error {
	switch n.kind {
	case kObject:
		for i, k := range n.keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if err := hugeNumber(n.vals[i], p); err != nil {
				return err
			}
		}
	case kArray:
		for i, e := range n.elems {
			if err := hugeNumber(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case kOther:
		if f, err := strconv.ParseFloat(n.str, 64); err != nil && math.IsInf(f, 0) {
			what := "the number " + n.str
			if path != "" {
				what = path + ": " + what
			}
			return &schema.Error{Pos: n.pos, Msg: what + " is out of range (a JSON number holds about ±1.8e308 at most)",
				Hint: "write a smaller number there, or the value as a string"}
		}
	}
	return nil
}

// strictJSON refuses what encoding/json refuses (a comment, a trailing
// comma), at its line:col.
func strictJSON(file string, src []byte) error {
	b := src
	if bytes.HasPrefix(b, bom) {
		b = append([]byte("   "), b[len(bom):]...)
	}
	var raw json.RawMessage // checked, not decoded: the tree is read already
	err := json.Unmarshal(b, &raw)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := int(se.Offset) - 1
		if off < 0 {
			off = 0
		}
		return &schema.Error{Pos: newLines(file, src).pos(off), Msg: "not strict JSON: " + se.Error()}
	}
	return err
}

// untouched says the file was left as it was.
func untouched(err error, why string) error {
	var se *schema.Error
	if errors.As(err, &se) {
		e := *se
		e.Msg += ": left untouched"
		if why != "" {
			e.Msg += " (" + why + ")"
		}
		return &e
	}
	return fmt.Errorf("%w: left untouched", err)
}

// checkResult reads out, the merged file, as the client will, and refuses
// it unless server's entry reads back as want (with, when it was
// mcpolicy's entry, the keys the user added to it as they were) and every
// other member of the file, and every other server, is what it was in src.
// before is src as readAsClient read it (nil: src is new, or unread).
func checkResult(c *Client, file string, src, out []byte, server string, want map[string]any, before *node) error {
	after, err := readAsClient(c, file, out)
	if err != nil {
		return fmt.Errorf("%s: mcpolicy's result would not load in %s, so it was not written: %v", file, c.Name, err)
	}
	if before == nil && len(bytes.TrimSpace(bytes.TrimPrefix(src, bom))) > 0 {
		if before, err = readAsClient(c, file, bytes.TrimPrefix(src, bom)); err != nil {
			return err
		}
	}
	lost := func(what string) error {
		return fmt.Errorf("%s: mcpolicy's result changed %s, so it was not written (a bug: please report it with the file)", file, what)
	}
	if !bytes.HasPrefix(out, bom) && bytes.HasPrefix(src, bom) {
		return lost("the byte-order mark")
	}
	got, _ := after.get(c.Key)
	entry, _ := got.get(server)
	expect, _ := jsonRound(want).(map[string]any)
	if expect == nil {
		return lost(fmt.Sprintf("the entry %q from what it meant to write", server))
	}
	if before != nil {
		// The keys the user added to mcpolicy's own entry read as they did.
		was, _ := before.get(c.Key)
		if old, _ := was.get(server); managedEntry(old) {
			for _, i := range old.members() {
				if k := old.keys[i]; !IsLaunchKey(c, k) {
					expect[k] = plain(old.vals[i])
				}
			}
		}
	}
	if !reflect.DeepEqual(plain(entry), any(expect)) {
		return lost(fmt.Sprintf("the entry %q from what it meant to write", server))
	}
	if before == nil {
		return nil
	}
	for _, i := range before.members() {
		k := before.keys[i]
		was := before.vals[i]
		now, _ := after.get(k)
		if k != c.Key {
			if !reflect.DeepEqual(plain(was), plain(now)) {
				return lost(fmt.Sprintf("%q", k))
			}
			continue
		}
		for _, j := range was.members() {
			name := was.keys[j]
			if name == server {
				continue
			}
			if other, _ := now.get(name); !reflect.DeepEqual(plain(was.vals[j]), plain(other)) {
				return lost(fmt.Sprintf("the entry %q", name))
			}
		}
	}
	return nil
}

// plain is a node as encoding/json would decode it.
func plain(n *node) any {
	if n == nil {
		return nil
	}
	switch n.kind {
	case kObject:
		m := map[string]any{}
		for _, i := range n.members() {
			m[n.keys[i]] = plain(n.vals[i])
		}
		return m
	case kArray:
		a := []any{}
		for _, e := range n.elems {
			a = append(a, plain(e))
		}
		return a
	case kString:
		return n.str
	}
	var v any
	if json.Unmarshal([]byte(n.str), &v) != nil {
		return n.str
	}
	return v
}

// jsonRound is v as it reads back from JSON.
func jsonRound(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}
