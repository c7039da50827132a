package exposure

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
)

// ServerDelta is how one server's exposure changes between two versions.
type ServerDelta struct {
	Server string `json:"server"`
	Old    int    `json:"old"`   // 0 where the server does not exist
	New    int    `json:"new"`   // 0 where the server does not exist
	Delta  int    `json:"delta"` // New - Old
	// Added are the terms of the new version the old one lacks, Removed the
	// reverse, each in its version's grant order. A term is matched by its
	// kind, refinement, summary and weight: a renamed mount target shows as
	// one removed and one added term of the same weight.
	Added   []Term `json:"added"`
	Removed []Term `json:"removed"`
}

// Delta compares one server's two versions; either may be nil (a server
// added or removed).
func Delta(old, new *compiler.Plan) ServerDelta {
	var eo, en Exposure
	if old != nil {
		eo = Score(old)
	}
	if new != nil {
		en = Score(new)
	}
	d := ServerDelta{Server: en.Server, Old: eo.Total, New: en.Total, Delta: en.Total - eo.Total}
	if d.Server == "" {
		d.Server = eo.Server
	}
	d.Added, d.Removed = minus(en.Terms, eo.Terms), minus(eo.Terms, en.Terms)
	return d
}

// Deltas compares two versions of a project's plans, server by server
// (matched by name, as diff does), sorted by server name; every server of
// either version is listed, changed or not.
func Deltas(old, new []*compiler.Plan) []ServerDelta {
	o, n := map[string]*compiler.Plan{}, map[string]*compiler.Plan{}
	var names []string
	for _, p := range old {
		o[p.Server] = p
		names = append(names, p.Server)
	}
	for _, p := range new {
		if _, ok := o[p.Server]; !ok {
			names = append(names, p.Server)
		}
		n[p.Server] = p
	}
	sort.Strings(names)
	ds := make([]ServerDelta, 0, len(names))
	for _, name := range names {
		ds = append(ds, Delta(o[name], n[name]))
	}
	return ds
}

type termKey struct {
	kind                compiler.GrantKind
	refinement, summary string
	weight              int
}

func key(t Term) termKey { return termKey{t.Kind, t.Refinement, t.Summary, t.Weight} }

// minus returns the terms of a that b lacks, as multisets, in a's order.
func minus(a, b []Term) []Term {
	left := map[termKey]int{}
	for _, t := range b {
		left[key(t)]++
	}
	out := []Term{}
	for _, t := range a {
		if k := key(t); left[k] > 0 {
			left[k]--
			continue
		}
		out = append(out, t)
	}
	return out
}

// Line is "code-index: exposure 13 -> 43 (+30)"; an unchanged score is
// "code-index: exposure 13 (unchanged)".
func (d ServerDelta) Line() string {
	if d.Delta == 0 {
		return fmt.Sprintf("%s: exposure %d (unchanged)", d.Server, d.New)
	}
	return fmt.Sprintf("%s: exposure %d -> %d (%+d)", d.Server, d.Old, d.New, d.Delta)
}

// ExplainDelta renders the line, then each added term (+weight) and each
// removed one (-weight), with its position in its own version.
func ExplainDelta(d ServerDelta) string {
	var b strings.Builder
	b.WriteString(d.Line() + "\n")
	for _, t := range d.Added {
		fmt.Fprintf(&b, "  %+d  %s  %s  (%s)\n", t.Weight, t.Label(), t.Summary, t.Pos)
	}
	for _, t := range d.Removed {
		fmt.Fprintf(&b, "  %+d  %s  %s  (was %s)\n", -t.Weight, t.Label(), t.Summary, t.Pos)
	}
	return b.String()
}
