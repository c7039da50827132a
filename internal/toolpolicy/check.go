package toolpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Refusal is why a tool may not be shown or called: the rule that decides
// (Field, the policy path that says it, and Rule, its pattern when it has
// one) and a Reason that names rules, never the argument's value, so it
// can go in a log.
type Refusal struct {
	Tool   string
	Arg    string // empty when the tool itself is refused
	Field  string
	Rule   string // the deny or allow pattern, empty for an argument constraint
	Reason string
}

// Message is the refusal as a client reads it, naming the policy file and
// the field: `mcpolicy: tool "x" is denied by FILE FIELD ("x*")`.
func (r *Refusal) Message(policyFile string) string {
	where := strings.TrimSpace(policyFile + " " + r.Field)
	switch {
	case r.Arg != "":
		return fmt.Sprintf("mcpolicy: argument %q of tool %q is refused by %s: %s", r.Arg, r.Tool, where, r.Reason)
	case r.Rule != "":
		return fmt.Sprintf("mcpolicy: tool %q is %s by %s (%q)", r.Tool, r.Reason, where, r.Rule)
	default:
		return fmt.Sprintf("mcpolicy: tool %q is refused by %s: %s", r.Tool, where, r.Reason)
	}
}

// Visible reports whether a client may see and call the tool name: an
// Allow rule matches it and no Deny rule does.
func (p *Policy) Visible(name string) bool { return p.Hidden(name) == nil }

// Hidden is the refusal that keeps name from the client, nil when Visible.
// A Deny rule wins over every Allow rule; a name no Allow rule matches is
// refused by the allow list as a whole; with a Pin, a name the pin does not
// hold is refused by the pin (a new tool is not part of the reviewed
// surface).
func (p *Policy) Hidden(name string) *Refusal {
	if r := p.Denied(name); r != nil {
		return r
	}
	if p.Pin != nil && !slices.ContainsFunc(p.Pin.Tools, func(t PinnedTool) bool { return t.Name == name }) {
		return &Refusal{Tool: name, Field: p.PinField(), Reason: "not in the pinned tools/list (run `mcpolicy pin " + p.Server + "` to review it)"}
	}
	return nil
}

// Denied is Hidden without the pin: the refusal of the allow and deny
// lists alone, nil when they let name through.
func (p *Policy) Denied(name string) *Refusal {
	for _, r := range p.Deny {
		if globMatch(r.Pattern, name, true) {
			return &Refusal{Tool: name, Field: r.Field, Rule: r.Pattern, Reason: "denied"}
		}
	}
	allowed := slices.ContainsFunc(p.Allow, func(r Rule) bool { return globMatch(r.Pattern, name, false) })
	if !allowed {
		return &Refusal{Tool: name, Field: p.section() + ".allow", Reason: "not allowed: no entry of allow matches it"}
	}
	return nil
}

// PinField is the policy path of the pin: servers.NAME.tools.pin.
func (p *Policy) PinField() string { return p.section() + ".pin" }

// OnPinChangeField is the policy path of onPinChange.
func (p *Policy) OnPinChangeField() string { return p.section() + ".onPinChange" }

// section is the policy path of the tools section, from the fields the
// compiler wrote (servers.NAME.tools.allow[0] -> servers.NAME.tools), so a
// server name that needed quoting stays quoted as the compiler did it.
func (p *Policy) section() string {
	for _, rs := range [][]Rule{p.Allow, p.Deny} {
		for _, r := range rs {
			for _, suffix := range []string{".allow[", ".deny["} {
				if i := strings.LastIndex(r.Field, suffix); i > 0 {
					return r.Field[:i]
				}
			}
		}
	}
	return "servers." + p.Server + ".tools"
}

// CheckCall decides a tools/call: nil when the tool is Visible and every
// constraint on its arguments holds. args is the call's "arguments" as
// sent: absent (nil or null) or a JSON object; an object naming a key
// twice is refused, since the server may read either value.
func (p *Policy) CheckCall(name string, args json.RawMessage) *Refusal {
	if r := p.Hidden(name); r != nil {
		return r
	}
	rules := p.argRules(name)
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.Arg
	}
	a, err := ObjectKeys(args, names...)
	if err != nil {
		return &Refusal{Tool: name, Field: p.section(), Reason: "arguments: " + err.Error()}
	}
	for _, r := range rules {
		v, ok := a[r.Arg]
		if !ok {
			continue
		}
		if reason := r.check(v); reason != "" {
			return &Refusal{Tool: name, Arg: r.Arg, Field: r.Field, Reason: reason}
		}
	}
	return nil
}

func (p *Policy) argRules(name string) []ArgRule {
	var out []ArgRule
	for _, r := range p.Args {
		if globMatch(r.Tool, name, true) {
			out = append(out, r)
		}
	}
	return out
}

// check is the reason v breaks r, empty when it holds. Reasons name the
// rule, never v: they go in the launch log.
func (r ArgRule) check(v json.RawMessage) string {
	if r.MaxBytes > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil || int64(c.Len()) > r.MaxBytes {
			return fmt.Sprintf("longer than maxBytes %d", r.MaxBytes)
		}
	}
	if len(r.Under) == 0 && r.Pattern == "" && len(r.Enum) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "not a string"
	}
	if len(r.Under) > 0 {
		if reason := r.checkUnder(s); reason != "" {
			return reason
		}
	}
	if r.Pattern != "" {
		re, err := anchored(r.Pattern)
		if err != nil || !re.MatchString(s) {
			return fmt.Sprintf("does not match pattern %q", r.Pattern)
		}
	}
	if len(r.Enum) > 0 && !slices.Contains(r.Enum, s) {
		return fmt.Sprintf("not one of enum %q", r.Enum)
	}
	return ""
}

// checkUnder holds a path argument under one of r.Under, lexically: the
// relay does not see the sandbox's files, so a symlink inside a grant that
// points out of it is the kernel's to refuse, as every other open is. A
// relative path is made absolute against Workdir (the server's working
// folder in the sandbox); without one it is refused.
func (r ArgRule) checkUnder(s string) string {
	outside := fmt.Sprintf("not under %q", r.Under)
	switch {
	case strings.ContainsRune(s, 0):
		return "holds a NUL byte"
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	case s == "":
		return "empty, " + outside
	case strings.HasPrefix(s, "~"):
		// Servers expand it (the filesystem server does) to a home folder
		// the relay cannot see: refused rather than read as a file name.
		return "starts with ~, which a server may read as a home folder, " + outside
	case len(s) >= 5 && strings.EqualFold(s[:5], "file:"):
		// A file: URL names an absolute path that servers which take URLs
		// read; joined to the workdir it would look like a name under it.
		return "a file: URL, which a server may read as the path it names, " + outside
	case !path.IsAbs(s) && r.Workdir == "":
		return "a relative path and the rule has no workdir, " + outside
	case !path.IsAbs(s):
		s = path.Join(r.Workdir, s)
	}
	s = path.Clean(s)
	for _, u := range r.Under {
		u = path.Clean(u)
		if !path.IsAbs(u) {
			continue
		}
		if s == u || u == "/" || strings.HasPrefix(s, u+"/") {
			return ""
		}
	}
	return outside
}

var patterns sync.Map // pattern -> *regexp.Regexp or error

// anchored compiles pattern to match a whole string, once per pattern.
func anchored(pattern string) (*regexp.Regexp, error) {
	if v, ok := patterns.Load(pattern); ok {
		if re, ok := v.(*regexp.Regexp); ok {
			return re, nil
		}
		return nil, v.(error)
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		patterns.Store(pattern, err)
		return nil, err
	}
	patterns.Store(pattern, re)
	return re, nil
}

// ObjectKeys decodes one JSON object into its members, refusing a key
// named twice (parsers disagree on which one wins) and anything after the
// object. Empty input and null are an empty object. Go's encoding/json,
// which some MCP servers and clients decode with, matches keys without
// case ("Name" and "ſ" for "s" too): so two keys that fold alike are
// refused as one named twice, and so is a key that folds like one of
// known but is spelled otherwise, which such a parser reads as that one
// while the relay would not.
func ObjectKeys(raw json.RawMessage, known ...string) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]json.RawMessage{}, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	folded := map[string]string{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		k, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("a key that is not a string")
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("key %q is named twice", k)
		}
		f := FoldKey(k)
		if other, dup := folded[f]; dup {
			return nil, fmt.Errorf("keys %q and %q are one key to a parser that ignores case", other, k)
		}
		folded[f] = k
		for _, n := range known {
			if k != n && f == FoldKey(n) {
				return nil, fmt.Errorf("key %q is %q to a parser that ignores case", k, n)
			}
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return out, nil
}

// FoldKey is k as Go's encoding/json compares keys: two keys it matches
// to one struct field have the same FoldKey.
func FoldKey(k string) string {
	b := make([]byte, 0, len(k))
	for _, r := range k {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b = append(b, byte(r))
			continue
		}
		b = utf8.AppendRune(b, foldRune(r))
	}
	return string(b)
}

// foldRune is the smallest rune of r's fold set, as encoding/json's.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
