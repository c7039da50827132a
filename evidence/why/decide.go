package why

import (
	"fmt"
	"path"

	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// decision is what one path the server names gives.
type decision struct {
	found       bool // some layer covers it
	read, write bool
	exec        bool
	deciding    *layer   // the layer that decides (where the deepest decides)
	covering    []*layer // every covering layer (where rights add up)
	stops       []Stop
}

// processPath decides a path as the server names it on this backend.
func (e *eval) processPath(p string) decision {
	var d decision
	var best *layer
	for i := range e.layers {
		l := &e.layers[i]
		if l.covers(p) {
			d.covering = append(d.covering, l)
			if best == nil || len(l.at) > len(best.at) || len(l.at) == len(best.at) && outranks(l, best) {
				best = l
			}
		}
	}
	if best == nil {
		return e.uncovered(p)
	}
	d.found, d.deciding = true, best
	if best.kind == "fixed-top" && p != best.at {
		// An entry below a fixed top level that no layer binds: it did
		// not exist at spawn, and cannot be created.
		d.found = false
		d.stops = append(d.stops, Stop{Rule: StopFixedTop, Pos: best.grant.Pos,
			Detail: fmt.Sprintf("%s is a read-write mount of the project root: its top level is fixed at launch (mcpolicy-launch binds the root read-only and each entry present then on top), so %s, absent then, cannot be created", best.at, path.Join(best.at, firstComponent(p, best.at)))})
		return d
	}
	if e.model == emit.HostPathsRightsAdd {
		// The rules' rights add up, but a read-only mount of the
		// minimal root (a fixed top level, a protected path) refuses.
		d.read = true
		for _, l := range d.covering {
			d.write = d.write || l.rw
			d.exec = d.exec || !l.noexec
		}
		d.write = d.write && best.kind != "protected" && best.kind != "fixed-top"
		if !d.write {
			d.stops = append(d.stops, e.roStop(best, p))
		}
		return d
	}
	d.read, d.write, d.exec = true, best.rw, !best.noexec
	if !d.write {
		d.stops = append(d.stops, e.roStop(best, p))
	}
	if best.noexec {
		d.stops = append(d.stops, Stop{Rule: StopNoExec, Detail: "the scratch tmpfs is mounted noexec"})
	}
	return d
}

// outranks reports whether l, at the same place as other, is the one the
// server meets: a protected name's read-only bind, or else a policy's own
// mount over a fixed top level's entry (bwrap binds it later; the engine
// launcher leaves the entry to it).
func outranks(l, other *layer) bool {
	return l.kind == "protected" || l.kind == "mount" && other.kind == "fixed-entry"
}

func (e *eval) roStop(l *layer, p string) Stop {
	switch l.kind {
	case "protected":
		name := firstComponent(p, path.Dir(l.at))
		if name != l.name {
			name += " (" + l.name + ")"
		}
		return Stop{Rule: StopProtected, Detail: fmt.Sprintf("%s is a protected name: read-only inside read-write mounts, as a whole (%s); unprotect: [%q] would make it writable (a counted grant)", name, reason(l.name), l.name)}
	case "fixed-top":
		return Stop{Rule: StopFixedTop, Pos: l.grant.Pos, Detail: fmt.Sprintf("the top level of %s is fixed at launch: no entry can be created, removed or renamed there", l.at)}
	case "baseline":
		return Stop{Rule: StopReadOnly, Detail: fmt.Sprintf("the runtime baseline %q is read-only", e.p.Runtime.Name)}
	case "dev":
		return Stop{Rule: StopReadOnly, Detail: "a device bound read-only"}
	case "mount":
		return Stop{Rule: StopReadOnly, Pos: l.grant.Pos, Detail: fmt.Sprintf("mount %s is read-only", l.mount.Target)}
	}
	return Stop{Rule: StopReadOnly, Detail: "read-only"}
}

func reason(pattern string) string {
	for _, n := range protect.Names {
		if n.Pattern == pattern {
			return n.Reason
		}
	}
	return pattern
}

// uncovered is a path no layer holds.
func (e *eval) uncovered(p string) decision {
	var d decision
	ancestor := p == "/"
	for _, l := range e.layers {
		if within(l.at, p) {
			ancestor = true
		}
	}
	root := e.be.Root(e.p)
	switch {
	case ancestor && !e.hostNames():
		d.found, d.read = true, true
		d.stops = append(d.stops, Stop{Rule: StopRoot, Detail: p + " is a folder of the sandbox's read-only root, on the way to a mount"})
	case ancestor && root.OnTheWay != "":
		d.stops = append(d.stops, Stop{Rule: StopNotGranted, Detail: p + " " + root.OnTheWay})
	case root.Image:
		d.stops = append(d.stops, Stop{Rule: StopImage, Detail: root.Absent})
	default:
		d.stops = append(d.stops, Stop{Rule: StopNoGrant, Detail: root.Absent})
	}
	return d
}
