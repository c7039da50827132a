// Package diff compares two versions of a project's plans, server by
// server and grant by grant, and says of each change whether it widens or
// narrows what the server is given. Reordering, renaming a target,
// rewording and comments change no grant and produce nothing.
package diff

import (
	"fmt"

	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/schema"
)

// Verdict of a change.
type Verdict string

const (
	Widened  Verdict = "widened"
	Narrowed Verdict = "narrowed"
)

// Kinds of change. A policy can waive a widening by its kind, like a lint
// rule: waive: [{rule: "MOUNT_RW", reason: "..."}].
var Kinds = []string{
	"SERVER_ADDED", "MOUNT_ADDED", "MOUNT_RW", "MOUNT_MOVED_UP", "MOUNT_SOURCE", "SCRATCH_ADDED", "SCRATCH_GREW",
	"ENV_ADDED", "NETWORK_OPENED", "EGRESS_ADDED", "EGRESS_WIDENED", "UNPROTECT_ADDED", "LIMIT_RAISED", "USER_ROOT", "USER_INVOKER",
	"DEGRADATION_ACCEPTED", "BASELINE_WIDENED",
	// narrowing kinds, never waived
	"SERVER_REMOVED", "MOUNT_REMOVED", "MOUNT_RO", "MOUNT_MOVED_DOWN", "SCRATCH_REMOVED", "SCRATCH_SHRANK",
	"ENV_REMOVED", "NETWORK_CLOSED", "EGRESS_REMOVED", "EGRESS_NARROWED", "UNPROTECT_REMOVED", "LIMIT_LOWERED", "USER_NON_ROOT", "USER_NOT_INVOKER",
	"DEGRADATION_DROPPED", "BASELINE_NARROWED",
}

// IsKind reports whether id names a change kind.
func IsKind(id string) bool {
	for _, k := range Kinds {
		if k == id {
			return true
		}
	}
	return false
}

// Change is one grant that differs between the two versions.
type Change struct {
	Server  string     `json:"server"`
	Kind    string     `json:"kind"`
	Verdict Verdict    `json:"verdict"`
	What    string     `json:"what"`
	Pos     schema.Pos `json:"pos"`     // in the new version
	Against schema.Pos `json:"against"` // in the old version
	Waived  string     `json:"waived,omitempty"`
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

func server(o, n *compiler.Plan) []Change {
	var cs []Change
	add := func(kind string, v Verdict, pos, against schema.Pos, format string, args ...any) {
		cs = append(cs, Change{Server: n.Server, Kind: kind, Verdict: v, What: fmt.Sprintf(format, args...), Pos: pos, Against: against})
	}

	// Mounts: the same target is the same grant; a grant whose target moved
	// but whose folder did not is the same grant too.
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
			add("MOUNT_ADDED", Widened, nm.Pos, schema.Pos{}, "new %s mount %s -> %s", nm.Mode, nm.Source, nm.Target)
		}
	}
	for i, om := range o.Mounts {
		if !matchedO[i] {
			add("MOUNT_REMOVED", Narrowed, n.Pos, om.Pos, "mount %s -> %s removed", om.Source, om.Target)
		}
	}

	switch os, ns := o.Scratch, n.Scratch; {
	case os == nil && ns != nil:
		add("SCRATCH_ADDED", Widened, ns.Pos, schema.Pos{}, "new scratch tmpfs %s", compiler.FormatSize(ns.SizeBytes))
	case os != nil && ns == nil:
		add("SCRATCH_REMOVED", Narrowed, n.Pos, os.Pos, "scratch removed")
	case os != nil && ns.SizeBytes > os.SizeBytes:
		add("SCRATCH_GREW", Widened, ns.Pos, os.Pos, "scratch %s -> %s", compiler.FormatSize(os.SizeBytes), compiler.FormatSize(ns.SizeBytes))
	case os != nil && ns.SizeBytes < os.SizeBytes:
		add("SCRATCH_SHRANK", Narrowed, ns.Pos, os.Pos, "scratch %s -> %s", compiler.FormatSize(os.SizeBytes), compiler.FormatSize(ns.SizeBytes))
	}

	setDiff(n.Env, o.Env, func(name string) {
		add("ENV_ADDED", Widened, posOf(n.Env, n.EnvPos, name, n.Pos), schema.Pos{}, "environment variable %s passed through", name)
	})
	setDiff(o.Env, n.Env, func(name string) {
		add("ENV_REMOVED", Narrowed, n.Pos, posOf(o.Env, o.EnvPos, name, o.Pos), "environment variable %s no longer passed", name)
	})

	if o.Network.Mode == "none" && n.Network.Mode != "none" {
		add("NETWORK_OPENED", Widened, n.Network.Pos, o.Network.Pos, "network none -> %s", strings.Join(n.Network.Allow, ", "))
	} else if o.Network.Mode != "none" && n.Network.Mode == "none" {
		add("NETWORK_CLOSED", Narrowed, n.Network.Pos, o.Network.Pos, "network -> none")
	} else {
		egressChanges(o.Network, n.Network, add)
	}

	setDiff(n.Unprotected, o.Unprotected, func(name string) {
		add("UNPROTECT_ADDED", Widened, posOf(n.Unprotected, n.UnprotPos, name, n.Pos), schema.Pos{}, "protection of %s removed", name)
	})
	setDiff(o.Unprotected, n.Unprotected, func(name string) {
		add("UNPROTECT_REMOVED", Narrowed, n.Pos, posOf(o.Unprotected, o.UnprotPos, name, o.Pos), "%s protected again", name)
	})
	setDiff(n.Accept, o.Accept, func(name string) {
		add("DEGRADATION_ACCEPTED", Widened, posOf(n.Accept, n.AcceptPos, name, n.Pos), schema.Pos{}, "degradation %s accepted", name)
	})
	setDiff(o.Accept, n.Accept, func(name string) {
		add("DEGRADATION_DROPPED", Narrowed, n.Pos, posOf(o.Accept, o.AcceptPos, name, o.Pos), "degradation %s no longer accepted", name)
	})
	var addedPaths, droppedPaths []string
	setDiff(n.Runtime.ReadOnly, o.Runtime.ReadOnly, func(p string) { addedPaths = append(addedPaths, p) })
	setDiff(o.Runtime.ReadOnly, n.Runtime.ReadOnly, func(p string) { droppedPaths = append(droppedPaths, p) })
	if len(addedPaths) > 0 {
		add("BASELINE_WIDENED", Widened, n.Pos, o.Pos, "runtime baseline %s -> %s adds %s", o.Runtime.Name, n.Runtime.Name, strings.Join(addedPaths, ", "))
	}
	if len(droppedPaths) > 0 {
		add("BASELINE_NARROWED", Narrowed, n.Pos, o.Pos, "runtime baseline %s -> %s drops %s", o.Runtime.Name, n.Runtime.Name, strings.Join(droppedPaths, ", "))
	}

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
	limit("memory", o.Subtractions.MemoryBytes, n.Subtractions.MemoryBytes, compiler.FormatSize)
	limit("pids", o.Subtractions.Pids, n.Subtractions.Pids, func(v int64) string { return fmt.Sprint(v) })
	limit("cpus", o.Subtractions.MilliCPUs, n.Subtractions.MilliCPUs, func(v int64) string { return fmt.Sprint(float64(v) / 1000) })

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
	return cs
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

func posOf(names []string, pos []schema.Pos, name string, fallback schema.Pos) schema.Pos {
	for i, n := range names {
		if n == name && i < len(pos) {
			return pos[i]
		}
	}
	return fallback
}
