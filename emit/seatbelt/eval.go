package seatbelt

import (
	"fmt"
	"regexp"
	"strings"
)

// Decision is the evaluator's answer for one operation on one path (or
// name: a sysctl, a mach service, a POSIX IPC object).
type Decision struct {
	Allow bool
	// Rule is the rule that decided: the last one that names the
	// operation and whose filters match. Nil when none does (denied).
	Rule *Node
}

// Evaluator answers from a profile's rules alone, as seatbelt decides: the
// last rule that names the operation (or a wildcard over it, or default)
// and whose filters match wins; when none matches, the operation is
// denied. It reads what mcpolicy's profiles use: literal, subpath, prefix,
// regex and path-ancestors on paths; sysctl-name, global-name and
// ipc-posix-name (with their -prefix and -regex forms) on names;
// require-all, require-any, require-not; (param ...) and string-append.
// A filter it does not know makes Decide fail rather than guess.
//
// It is a model for tests and the checker, not seatbelt: it sees one path
// as given (seatbelt resolves symlinks first), and reads path-ancestors as
// the folders strictly above the path.
type Evaluator struct {
	rules  []*Node
	params map[string]string
}

// NewEvaluator reads the allow and deny rules of forms. params are the -D
// values; a (param ...) without one is undefined, and a filter on it
// matches nothing (as seatbelt's #f).
func NewEvaluator(forms []*Node, params map[string]string) *Evaluator {
	e := &Evaluator{params: params}
	for _, f := range forms {
		if h := f.Head(); h == "allow" || h == "deny" {
			e.rules = append(e.rules, f)
		}
	}
	return e
}

// Operations on files as the kernel asks seatbelt about them.
const (
	// OpUnlink is asked for unlink(2) and rmdir(2) of a path, and for the
	// source of rename(2): a rename takes the old name away.
	OpUnlink = "file-write-unlink"
	// OpCreate is asked for a new name: creat(2), mkdir(2), the target of
	// rename(2).
	OpCreate = "file-write-create"
	// OpWrite is asked for writing a file's contents.
	OpWrite = "file-write-data"
)

// Decide answers whether op is allowed on subject (a path for file
// operations, a name for sysctl, mach and IPC operations).
func (e *Evaluator) Decide(op, subject string) (Decision, error) {
	d := Decision{}
	for _, r := range e.rules {
		ok, err := e.ruleMatches(r, op, subject)
		if err != nil {
			return Decision{}, err
		}
		if ok {
			d = Decision{Allow: r.Head() == "allow", Rule: r}
		}
	}
	return d, nil
}

// Rename answers whether rename(from, to) is allowed: the old name is
// unlinked and the new one created.
func (e *Evaluator) Rename(from, to string) (bool, error) {
	a, err := e.Decide(OpUnlink, from)
	if err != nil || !a.Allow {
		return false, err
	}
	b, err := e.Decide(OpCreate, to)
	return b.Allow, err
}

// ruleParts reads a rule's items: whether an operation it names covers
// op, and its filters (its (with ...) modifiers left out).
func ruleParts(r *Node, op string) (named bool, flts []*Node) {
	for _, it := range r.Items[1:] {
		switch {
		case it.Kind == Symbol:
			named = named || opCovers(it.Text, op)
		case it.Head() == "with":
		default:
			flts = append(flts, it)
		}
	}
	return named, flts
}

func (e *Evaluator) ruleMatches(r *Node, op, subject string) (bool, error) {
	named, flts := ruleParts(r, op)
	if !named {
		return false, nil
	}
	if len(flts) == 0 {
		return true, nil
	}
	for _, f := range flts { // several filters: any of them
		ok, err := e.filter(f, subject)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// opCovers reports whether a rule's operation name covers op: the same
// name, a wildcard over it (file-write* covers file-write-unlink) or
// default.
func opCovers(rule, op string) bool {
	if rule == op || rule == "default" {
		return true
	}
	pre, ok := strings.CutSuffix(rule, "*")
	return ok && strings.HasPrefix(op, pre)
}

func (e *Evaluator) filter(f *Node, s string) (bool, error) {
	h := f.Head()
	switch h {
	case "require-all", "require-any":
		for _, sub := range f.Items[1:] {
			ok, err := e.filter(sub, s)
			if err != nil {
				return false, err
			}
			if h == "require-any" && ok {
				return true, nil
			}
			if h == "require-all" && !ok {
				return false, nil
			}
		}
		return h == "require-all", nil
	case "require-not":
		if len(f.Items) != 2 {
			return false, fmt.Errorf("%d:%d: (require-not) takes one filter", f.Line, f.Col)
		}
		ok, err := e.filter(f.Items[1], s)
		return !ok, err
	}
	if len(f.Items) != 2 {
		return false, fmt.Errorf("%d:%d: cannot evaluate %s", f.Line, f.Col, f)
	}
	v, defined, err := e.value(f.Items[1])
	if err != nil || !defined {
		return false, err
	}
	switch h {
	case "literal", "path", "sysctl-name", "global-name", "ipc-posix-name":
		return s == v, nil
	case "subpath":
		return s == v || v == "/" || strings.HasPrefix(s, strings.TrimSuffix(v, "/")+"/"), nil
	case "prefix", "sysctl-name-prefix", "ipc-posix-name-prefix":
		return strings.HasPrefix(s, v), nil
	case "path-ancestors":
		return s != v && (s == "/" || strings.HasPrefix(v, s+"/")), nil
	case "regex", "sysctl-name-regex", "global-name-regex", "ipc-posix-name-regex":
		re, err := regexp.Compile(v)
		if err != nil {
			return false, fmt.Errorf("%d:%d: regex %q: %v", f.Line, f.Col, v, err)
		}
		return re.MatchString(s), nil
	}
	return false, fmt.Errorf("%d:%d: the evaluator cannot read the filter (%s ...)", f.Line, f.Col, h)
}

// value is a filter's argument: a string or regex, a (param ...), or a
// (string-append ...) of those. defined is false for a missing param.
func (e *Evaluator) value(n *Node) (v string, defined bool, err error) {
	switch {
	case n.Kind == String || n.Kind == Regex:
		return n.Text, true, nil
	case n.Head() == "param" && len(n.Items) == 2 && n.Items[1].Kind == String:
		v, ok := e.params[n.Items[1].Text]
		return v, ok, nil
	case n.Head() == "string-append":
		var b strings.Builder
		for _, it := range n.Items[1:] {
			s, ok, err := e.value(it)
			if err != nil || !ok {
				return "", ok, err
			}
			b.WriteString(s)
		}
		return b.String(), true, nil
	}
	return "", false, fmt.Errorf("%d:%d: the evaluator cannot read the value %s", n.Line, n.Col, n)
}

// Reach is what the checker can say of a rule on a subject no legitimate
// filter names: it never applies, it may (a filter the checker cannot read
// decides: vnode-type, extension, a value from a define), or it always does.
type Reach int

const (
	ReachNever Reach = iota
	ReachMaybe
	ReachAlways
)

// subjectFilters are the filters that test the subject of an operation:
// a file's path, or a name (sysctl, mach service, POSIX IPC object).
var subjectFilters = set("literal", "path", "subpath", "prefix", "regex", "path-ancestors",
	"sysctl-name", "sysctl-name-prefix", "sysctl-name-regex", "global-name", "global-name-regex",
	"local-name", "local-name-regex", "ipc-posix-name", "ipc-posix-name-prefix", "ipc-posix-name-regex")

// Reaches says whether rule r, alone, applies to op on subject, and which
// of its top-level filters makes it (nil when it has none). Unlike Decide
// it never fails: a filter that does not test the subject (vnode-type,
// extension, target) or whose value it cannot read may match anything,
// so a rule that names no path reaches every path.
func (e *Evaluator) Reaches(r *Node, op, subject string) (Reach, *Node) {
	named, flts := ruleParts(r, op)
	if !named {
		return ReachNever, nil
	}
	if len(flts) == 0 {
		return ReachAlways, nil
	}
	best, at := ReachNever, (*Node)(nil)
	for _, f := range flts { // several filters: any of them
		if r := e.reach(f, subject); r > best {
			best, at = r, f
		}
	}
	return best, at
}

func (e *Evaluator) reach(f *Node, s string) Reach {
	switch h := f.Head(); h {
	case "require-all", "require-any":
		lowest, highest := ReachAlways, ReachNever
		for _, sub := range f.Items[1:] {
			r := e.reach(sub, s)
			lowest, highest = min(lowest, r), max(highest, r)
		}
		if h == "require-all" {
			return lowest // all must match: the weakest decides
		}
		return highest
	case "require-not":
		if len(f.Items) != 2 {
			return ReachMaybe
		}
		return ReachAlways - e.reach(f.Items[1], s)
	default:
		if !subjectFilters[h] {
			return ReachMaybe
		}
		ok, err := e.filter(f, s)
		switch {
		case err != nil:
			return ReachMaybe
		case ok:
			return ReachAlways
		}
		return ReachNever
	}
}
