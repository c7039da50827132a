// Package diff compares two versions of a project's plans, server by
// server and grant by grant, and says of each change whether it widens or
// narrows what the server is given. Reordering, renaming a target,
// rewording and comments change no grant and produce nothing.
package diff

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/bytesize"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Verdict of a change.
type Verdict string

const (
	Widened  Verdict = "widened"
	Narrowed Verdict = "narrowed"
)

// Change is one grant that differs between the two versions.
type Change struct {
	Server  string       `json:"server"`
	Kind    string       `json:"kind"`
	Verdict Verdict      `json:"verdict"`
	What    string       `json:"what"`
	Pos     position.Pos `json:"pos"`     // in the new version
	Against position.Pos `json:"against"` // in the old version
	Waived  string       `json:"waived,omitempty"`
}

// Plans compares old and new plans; changes come sorted by server, then
// by position.
func Plans(old, new []*compiler.Plan) []Change {
	byName := func(ps []*compiler.Plan) map[string]*compiler.Plan {
		m := map[string]*compiler.Plan{}
		for _, p := range ps {
			m[p.Server] = p
		}
		return m
	}
	o, n := byName(old), byName(new)
	var cs []Change
	for name, np := range n {
		op, ok := o[name]
		if !ok {
			cs = append(cs, Change{Server: name, Kind: "SERVER_ADDED", Verdict: Widened, What: "new server: " + compiler.GrantSummary(np.Grants()), Pos: np.Pos})
			continue
		}
		cs = append(cs, server(op, np)...)
	}
	for name, op := range o {
		if _, ok := n[name]; !ok {
			cs = append(cs, Change{Server: name, Kind: "SERVER_REMOVED", Verdict: Narrowed, What: "server removed", Against: op.Pos})
		}
	}
	for i := range cs {
		if cs[i].Verdict == Widened {
			cs[i].Waived = waiver(n[cs[i].Server], cs[i].Kind)
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].Server != cs[j].Server {
			return cs[i].Server < cs[j].Server
		}
		if cs[i].Pos.Line != cs[j].Pos.Line {
			return cs[i].Pos.Line < cs[j].Pos.Line
		}
		return cs[i].Against.Line < cs[j].Against.Line
	})
	return cs
}

func waiver(p *compiler.Plan, kind string) string {
	if p == nil {
		return ""
	}
	for _, w := range p.Waivers {
		if w.Rule == kind {
			return w.Reason
		}
	}
	return ""
}

// within reports whether host path a is b or below it (same base).
func within(a, b compiler.HostPath) bool {
	if a.Base != b.Base {
		return false
	}
	return b.Rel == "." || b.Rel == "/" || a.Rel == b.Rel || strings.HasPrefix(a.Rel, strings.TrimSuffix(b.Rel, "/")+"/")
}

// server compares one server's two plans, grant by grant, in the order
// a reader meets them in explain.
func server(o, n *compiler.Plan) []Change {
	var cs []Change
	add := func(kind string, v Verdict, pos, against position.Pos, format string, args ...any) {
		cs = append(cs, Change{Server: n.Server, Kind: kind, Verdict: v, What: fmt.Sprintf(format, args...), Pos: pos, Against: against})
	}
	mountChanges(o, n, add)
	scratchChanges(o, n, add)
	env := func(e compiler.EnvGrant) (string, position.Pos) { return e.Name, e.Pos }
	diffNamed(o.Env, n.Env, env, func(name string, at position.Pos) {
		add("ENV_ADDED", Widened, orPos(at, n.Pos), position.Pos{}, "environment variable %s passed through", name)
	}, func(name string, at position.Pos) {
		add("ENV_REMOVED", Narrowed, n.Pos, orPos(at, o.Pos), "environment variable %s no longer passed", name)
	})
	setenvChanges(o, n, add)
	networkChanges(o.Network, n.Network, add)
	credentialChanges(o, n, add)
	unprot := func(u compiler.Unprotection) (string, position.Pos) { return u.Name, u.Pos }
	diffNamed(o.Unprotected, n.Unprotected, unprot, func(name string, at position.Pos) {
		add("UNPROTECT_ADDED", Widened, orPos(at, n.Pos), position.Pos{}, "protection of %s removed", name)
	}, func(name string, at position.Pos) {
		add("UNPROTECT_REMOVED", Narrowed, n.Pos, orPos(at, o.Pos), "%s protected again", name)
	})
	accept := func(a compiler.Accepted) (string, position.Pos) { return a.Name, a.Pos }
	diffNamed(o.Accept, n.Accept, accept, func(name string, at position.Pos) {
		add("DEGRADATION_ACCEPTED", Widened, orPos(at, n.Pos), position.Pos{}, "degradation %s accepted", name)
	}, func(name string, at position.Pos) {
		add("DEGRADATION_DROPPED", Narrowed, n.Pos, orPos(at, o.Pos), "degradation %s no longer accepted", name)
	})
	pack := func(k compiler.Pack) (string, position.Pos) { return k.Name, k.Pos }
	diffNamed(o.Packs, n.Packs, pack, func(name string, at position.Pos) {
		add("PACK_ADDED", Widened, orPos(at, n.Pos), position.Pos{}, "runtime pack %s added (%s)", name, packSummary(n, name))
	}, func(name string, at position.Pos) {
		add("PACK_REMOVED", Narrowed, n.Pos, orPos(at, o.Pos), "runtime pack %s removed", name)
	})
	baselineChanges(o, n, add)
	limitChanges(o, n, add)
	userChanges(o, n, add)
	toolChanges(o, n, add)
	return cs
}

// hideChanges compares a paired mount's hidden paths: one no longer
// hidden widens what the server reads; a new one narrows it.
func hideChanges(om, nm compiler.Mount, add addFunc) {
	has := func(m compiler.Mount, h string) (position.Pos, bool) {
		for i, x := range m.Hide {
			if x == h {
				if i < len(m.HidePos) {
					return m.HidePos[i], true
				}
				return m.Pos, true
			}
		}
		return position.Pos{}, false
	}
	for _, h := range om.Hide {
		if _, ok := has(nm, h); !ok {
			at, _ := has(om, h)
			add("HIDE_REMOVED", Widened, nm.Pos, at, "mount %s: %s no longer hidden", nm.Target, h)
		}
	}
	for _, h := range nm.Hide {
		if _, ok := has(om, h); !ok {
			at, _ := has(nm, h)
			add("HIDE_ADDED", Narrowed, at, om.Pos, "mount %s: %s hidden", nm.Target, h)
		}
	}
}

// mountChanges pairs the old mounts with the new: the same target is the
// same grant; a grant whose target moved but whose folder did not is the
// same grant too. A pair reports how its folder and mode changed; what
// pairs with nothing was added or removed.
func mountChanges(o, n *compiler.Plan, add addFunc) {
	matchedO, matchedN := map[int]bool{}, map[int]bool{}
	pair := func(i, j int) {
		matchedO[i], matchedN[j] = true, true
		om, nm := o.Mounts[i], n.Mounts[j]
		switch {
		case om.Source == nm.Source:
		case within(om.Source, nm.Source):
			add("MOUNT_MOVED_UP", Widened, nm.Pos, om.Pos, "mount %s moved up: %s -> %s (a parent holds more)", nm.Target, om.Source, nm.Source)
		case within(nm.Source, om.Source):
			add("MOUNT_MOVED_DOWN", Narrowed, nm.Pos, om.Pos, "mount %s moved down: %s -> %s", nm.Target, om.Source, nm.Source)
		default:
			add("MOUNT_SOURCE", Widened, nm.Pos, om.Pos, "mount %s now shows another folder: %s -> %s", nm.Target, om.Source, nm.Source)
		}
		if om.Mode == compiler.ReadOnly && nm.Mode == compiler.ReadWrite {
			add("MOUNT_RW", Widened, nm.Pos, om.Pos, "mount %s: ro -> rw", nm.Target)
		}
		if om.Mode == compiler.ReadWrite && nm.Mode == compiler.ReadOnly {
			add("MOUNT_RO", Narrowed, nm.Pos, om.Pos, "mount %s: rw -> ro", nm.Target)
		}
		hideChanges(om, nm, add)
	}
	for i, om := range o.Mounts {
		for j, nm := range n.Mounts {
			if !matchedN[j] && om.Target == nm.Target {
				pair(i, j)
				break
			}
		}
	}
	for i, om := range o.Mounts {
		for j, nm := range n.Mounts {
			if !matchedO[i] && !matchedN[j] && om.Source == nm.Source {
				pair(i, j) // a renamed target: neutral but for the mode
				break
			}
		}
	}
	for j, nm := range n.Mounts {
		if !matchedN[j] {
			add("MOUNT_ADDED", Widened, nm.Pos, position.Pos{}, "new %s mount %s -> %s", nm.Mode, nm.Source, nm.Target)
		}
	}
	for i, om := range o.Mounts {
		if !matchedO[i] {
			add("MOUNT_REMOVED", Narrowed, n.Pos, om.Pos, "mount %s -> %s removed", om.Source, om.Target)
		}
	}
}

// scratchChanges: a scratch tmpfs added or grown widens.
func scratchChanges(o, n *compiler.Plan, add addFunc) {
	switch os, ns := o.Scratch, n.Scratch; {
	case os == nil && ns != nil:
		add("SCRATCH_ADDED", Widened, ns.Pos, position.Pos{}, "new scratch tmpfs %s", bytesize.Format(ns.SizeBytes))
	case os != nil && ns == nil:
		add("SCRATCH_REMOVED", Narrowed, n.Pos, os.Pos, "scratch removed")
	case os != nil && ns.SizeBytes > os.SizeBytes:
		add("SCRATCH_GREW", Widened, ns.Pos, os.Pos, "scratch %s -> %s", bytesize.Format(os.SizeBytes), bytesize.Format(ns.SizeBytes))
	case os != nil && ns.SizeBytes < os.SizeBytes:
		add("SCRATCH_SHRANK", Narrowed, ns.Pos, os.Pos, "scratch %s -> %s", bytesize.Format(os.SizeBytes), bytesize.Format(ns.SizeBytes))
	}
	moreScratchChanges(o, n, add)
}

// moreScratchChanges: the scratch tmpfs after the first, paired by target.
func moreScratchChanges(o, n *compiler.Plan, add addFunc) {
	old := map[string]compiler.Scratch{}
	for _, s := range o.MoreScratch {
		old[s.Target] = s
	}
	for _, ns := range n.MoreScratch {
		os, ok := old[ns.Target]
		delete(old, ns.Target)
		switch {
		case !ok:
			add("SCRATCH_ADDED", Widened, ns.Pos, position.Pos{}, "new scratch tmpfs %s at %s", bytesize.Format(ns.SizeBytes), ns.Target)
		case ns.SizeBytes > os.SizeBytes:
			add("SCRATCH_GREW", Widened, ns.Pos, os.Pos, "scratch %s: %s -> %s", ns.Target, bytesize.Format(os.SizeBytes), bytesize.Format(ns.SizeBytes))
		case ns.SizeBytes < os.SizeBytes:
			add("SCRATCH_SHRANK", Narrowed, ns.Pos, os.Pos, "scratch %s: %s -> %s", ns.Target, bytesize.Format(os.SizeBytes), bytesize.Format(ns.SizeBytes))
		}
	}
	for _, os := range o.MoreScratch {
		if _, gone := old[os.Target]; gone {
			add("SCRATCH_REMOVED", Narrowed, n.Pos, os.Pos, "scratch %s removed", os.Target)
		}
	}
}

// setenvChanges: a constant value the policy sets, added, changed (both
// values shown: what the server is told decides what it does) or removed.
func setenvChanges(o, n *compiler.Plan, add addFunc) {
	old := map[string]compiler.EnvValue{}
	for _, e := range o.SetEnv {
		old[e.Name] = e
	}
	for _, e := range n.SetEnv {
		oe, ok := old[e.Name]
		switch {
		case !ok:
			add("SETENV_ADDED", Widened, orPos(e.Pos, n.Pos), position.Pos{}, "environment variable %s set to %s", e.Name, strconv.Quote(e.Value))
		case oe.Value != e.Value:
			add("SETENV_CHANGED", Widened, orPos(e.Pos, n.Pos), orPos(oe.Pos, o.Pos), "environment variable %s: %s -> %s", e.Name, strconv.Quote(oe.Value), strconv.Quote(e.Value))
		}
		delete(old, e.Name)
	}
	for _, e := range o.SetEnv {
		if _, gone := old[e.Name]; gone {
			add("SETENV_REMOVED", Narrowed, n.Pos, orPos(e.Pos, o.Pos), "environment variable %s no longer set (was %s)", e.Name, strconv.Quote(e.Value))
		}
	}
}

// networkChanges: a network opened or closed, else how the egress
// allowlist changed.
func networkChanges(o, n compiler.Network, add addFunc) {
	// Modes a policy cannot write but a read-back manifest or docker argv
	// can: "open" (any destination), "host" (the node's own namespace).
	described := func(nw compiler.Network) string {
		if e := nw.Entries(); len(e) > 0 {
			return strings.Join(e, ", ")
		}
		return nw.Mode
	}
	if o.Mode != n.Mode && n.Mode == "host" {
		add("NETWORK_OPENED", Widened, n.Pos, o.Pos, "network %s -> host (the host's own network namespace)", described(o))
	} else if o.Mode == "none" && n.Mode != "none" {
		add("NETWORK_OPENED", Widened, n.Pos, o.Pos, "network none -> %s", described(n))
	} else if o.Mode != "none" && n.Mode == "none" {
		add("NETWORK_CLOSED", Narrowed, n.Pos, o.Pos, "network -> none")
	} else {
		egressChanges(o, n, add)
	}
}

// baselineChanges: the read-only paths the runtime baseline adds or
// drops.
func baselineChanges(o, n *compiler.Plan, add addFunc) {
	var addedPaths, droppedPaths []string
	setDiff(n.Runtime.ReadOnly, o.Runtime.ReadOnly, func(p string) { addedPaths = append(addedPaths, p) })
	setDiff(o.Runtime.ReadOnly, n.Runtime.ReadOnly, func(p string) { droppedPaths = append(droppedPaths, p) })
	if len(addedPaths) > 0 {
		add("BASELINE_WIDENED", Widened, n.Pos, o.Pos, "runtime baseline %s -> %s adds %s", o.Runtime.Name, n.Runtime.Name, strings.Join(addedPaths, ", "))
	}
	if len(droppedPaths) > 0 {
		add("BASELINE_NARROWED", Narrowed, n.Pos, o.Pos, "runtime baseline %s -> %s drops %s", o.Runtime.Name, n.Runtime.Name, strings.Join(droppedPaths, ", "))
	}
}

// limitChanges: a resource limit raised or removed widens; 0 is no limit.
func limitChanges(o, n *compiler.Plan, add addFunc) {
	limit := func(what string, ov, nv int64, format func(int64) string) {
		switch {
		case ov > 0 && (nv == 0 || nv > ov):
			to := "none"
			if nv > 0 {
				to = format(nv)
			}
			add("LIMIT_RAISED", Widened, n.LimitsPos, o.LimitsPos, "%s limit %s -> %s", what, format(ov), to)
		case nv > 0 && (ov == 0 || nv < ov):
			from := "none"
			if ov > 0 {
				from = format(ov)
			}
			add("LIMIT_LOWERED", Narrowed, n.LimitsPos, o.LimitsPos, "%s limit %s -> %s", what, from, format(nv))
		}
	}
	limit("memory", o.Subtractions.MemoryBytes, n.Subtractions.MemoryBytes, bytesize.Format)
	limit("pids", o.Subtractions.Pids, n.Subtractions.Pids, func(v int64) string { return fmt.Sprint(v) })
	limit("cpus", o.Subtractions.MilliCPUs, n.Subtractions.MilliCPUs, func(v int64) string { return fmt.Sprint(float64(v) / 1000) })
}

// userChanges: becoming root, or the invoking user, widens.
func userChanges(o, n *compiler.Plan, add addFunc) {
	if !o.User.Root() && n.User.Root() {
		add("USER_ROOT", Widened, n.UserPos, o.UserPos, "user %s -> root", o.User)
	} else if o.User.Root() && !n.User.Root() {
		add("USER_NON_ROOT", Narrowed, n.UserPos, o.UserPos, "user root -> %s", n.User)
	}
	// The invoking user's uid writes what the user owns in a rw mount.
	if !o.User.Invoker && n.User.Invoker && !o.User.Root() {
		add("USER_INVOKER", Widened, n.UserPos, o.UserPos, "user %s -> the invoking user", o.User)
	} else if o.User.Invoker && !n.User.Invoker && !n.User.Root() {
		add("USER_NOT_INVOKER", Narrowed, n.UserPos, o.UserPos, "user the invoking user -> %s", n.User)
	}
}

// setDiff calls f for each element of a missing from b.
func setDiff(a, b []string, f func(string)) {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	for _, x := range a {
		if !in[x] {
			f(x)
		}
	}
}

// diffNamed calls added for each name of n's list missing from o's, then
// removed for each of o's missing from n's, with its position in the list
// that has it.
func diffNamed[E any](o, n []E, key func(E) (string, position.Pos), added, removed func(name string, at position.Pos)) {
	names := func(es []E) []string {
		ns := make([]string, len(es))
		for i, e := range es {
			ns[i], _ = key(e)
		}
		return ns
	}
	at := func(es []E, name string) position.Pos {
		for _, e := range es {
			if k, pos := key(e); k == name {
				return pos
			}
		}
		return position.Pos{}
	}
	setDiff(names(n), names(o), func(name string) { added(name, at(n, name)) })
	setDiff(names(o), names(n), func(name string) { removed(name, at(o, name)) })
}

// orPos is pos, or fallback for plans decoded from JSON, which carry none.
func orPos(pos, fallback position.Pos) position.Pos {
	if pos == (position.Pos{}) {
		return fallback
	}
	return pos
}

// packSummary is what the plan's pack named name adds, counted.
func packSummary(p *compiler.Plan, name string) string {
	for _, k := range p.Packs {
		if k.Name == name {
			_, what, _ := strings.Cut(k.Summary(), ": ")
			return what
		}
	}
	return ""
}
