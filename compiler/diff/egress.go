package diff

import (
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// addFunc records one change (server's closure).
type addFunc func(kind string, v Verdict, pos, against position.Pos, format string, args ...any)

// egressChanges compares two allowlists entry by entry. An entry swapped
// for a wildcard that covers it is one change of that grant, widened (or
// narrowed, the other way), not an unexplained add and remove.
func egressChanges(o, n compiler.Network, add addFunc) {
	var added, removed []string
	oe, ne := o.Entries(), n.Entries()
	setDiff(ne, oe, func(h string) { added = append(added, h) })
	setDiff(oe, ne, func(h string) { removed = append(removed, h) })
	explained := map[string]bool{}

	// Narrowing first: an added entry a removed wildcard covered was
	// reachable before, so it must not count as a widening below.
	for _, w := range removed {
		if in := covered(w, added, explained); len(in) > 0 {
			add("EGRESS_NARROWED", Narrowed, entryPos(n, in[0]), entryPos(o, w), "egress %s -> %s", w, strings.Join(in, ", "))
		}
	}
	for _, w := range added {
		if in := covered(w, removed, explained); len(in) > 0 {
			add("EGRESS_WIDENED", Widened, entryPos(n, w), entryPos(o, in[0]), "egress %s -> %s (every name under %s)",
				strings.Join(in, ", "), w, strings.TrimPrefix(hostOf(w), "*."))
		}
	}
	for _, h := range added {
		if !explained[h] {
			add("EGRESS_ADDED", Widened, entryPos(n, h), o.Pos, "egress to %s allowed%s", h, note("already", h, kept(oe, ne)))
		}
	}
	for _, h := range removed {
		if !explained[h] {
			add("EGRESS_REMOVED", Narrowed, n.Pos, entryPos(o, h), "egress to %s removed%s", h, note("still", h, ne))
		}
	}
}

// covered lists the entries of hs, not yet explained, that wildcard w
// allows every name of, and marks them and w explained.
func covered(w string, hs []string, explained map[string]bool) []string {
	if explained[w] {
		return nil
	}
	var in []string
	for _, h := range hs {
		if !explained[h] && covers(w, h) {
			in = append(in, h)
		}
	}
	if len(in) > 0 {
		explained[w] = true
		for _, h := range in {
			explained[h] = true
		}
	}
	return in
}

// covers reports whether wildcard entry w allows every name entry h does:
// the same port, and h (or, for a wildcard h, its apex) strictly below
// w's apex. The egress matcher decides, so the diff agrees with the proxy.
func covers(w, h string) bool {
	rw, err := allowlist.ParseRule(w)
	if err != nil || !rw.Wildcard {
		return false
	}
	rh, err := allowlist.ParseRule(h)
	if err != nil || rh.Addr.IsValid() {
		return false
	}
	_, ok := allowlist.List{rw}.Match(strings.TrimPrefix(rh.Host, "*."), rh.Port)
	return ok
}

// note says which wildcard of ws already covers h: an added or removed
// entry that changes no reachable name should not read like one that does.
func note(when, h string, ws []string) string {
	for _, w := range ws {
		if covers(w, h) {
			return " (" + when + " allowed by " + w + ")"
		}
	}
	return ""
}

// kept lists the entries in both versions.
func kept(o, n []string) []string {
	var both []string
	in := map[string]bool{}
	for _, h := range n {
		in[h] = true
	}
	for _, h := range o {
		if in[h] {
			both = append(both, h)
		}
	}
	return both
}

// entryPos is the position of an entry in its version, or the network
// field's for plans decoded from JSON.
func entryPos(n compiler.Network, h string) position.Pos {
	for _, d := range n.Allow {
		if d.String() == h {
			return orPos(d.Pos, n.Pos)
		}
	}
	return n.Pos
}

// hostOf is the host part of an entry ("*.x.com" of "*.x.com:443").
func hostOf(entry string) string {
	if r, err := allowlist.ParseRule(entry); err == nil {
		return r.Host
	}
	return entry
}
