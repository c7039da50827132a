package why

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// hostPath answers for a real host path.
func (e *eval) hostPath(v *Verdict, h string) {
	var ats []string
	seen := map[string]bool{}
	for _, l := range e.layers {
		if l.src == "" || !within(h, l.src) {
			continue
		}
		at := path.Join(l.at, rel(h, l.src))
		if !seen[at] {
			seen[at] = true
			ats = append(ats, at)
		}
	}
	sort.Strings(ats)
	deeper := false // a grant mounted at its host path inside the scratch's target
	for _, l := range e.layers {
		if l.src != "" && within(h, l.src) && e.p.Scratch != nil && len(l.at) > len(e.p.Scratch.Target) {
			deeper = true
		}
	}
	if s := e.p.Scratch; s != nil && e.hostNames() && e.be.ScratchMount().AtTarget && within(h, s.Target) && !deeper {
		// Host paths are the server's names here, but the scratch tmpfs
		// is mounted over the host's folder at its target.
		v.Stops = append(v.Stops, Stop{Rule: StopShadowed, Detail: fmt.Sprintf("the scratch tmpfs at %s hides the host's %s: the server's %s is its scratch", s.Target, h, h)})
		finish(v)
		return
	}
	if len(ats) == 0 {
		e.noGrant(v, h)
		return
	}
	for _, at := range ats {
		d := e.processPath(at)
		if !d.found {
			v.Stops = append(v.Stops, d.stops...)
			continue
		}
		if l := d.deciding; l != nil && e.model != emit.HostPathsRightsAdd && (l.src == "" && l.kind != "protected" || l.src != "" && path.Join(l.src, rel(at, l.at)) != h) {
			v.Stops = append(v.Stops, Stop{Rule: StopShadowed, Detail: fmt.Sprintf("%s is hidden by %s mounted on top", at, d.deciding.at)})
			continue
		}
		e.record(v, at, d)
	}
	e.absent(v, h)
	finish(v)
}

// record adds one reachable path's decision to the verdict.
func (e *eval) record(v *Verdict, at string, d decision) {
	if !d.read {
		v.Stops = append(v.Stops, d.stops...)
		return
	}
	v.At = append(v.At, at)
	v.Access = append(v.Access, Read)
	if d.write {
		v.Access = append(v.Access, Write)
	}
	if d.exec {
		v.Access = append(v.Access, Exec)
	}
	ls := []*layer{d.deciding}
	if e.model == emit.HostPathsRightsAdd {
		ls = d.covering
	}
	for _, l := range ls {
		switch {
		case l == nil:
		case l.grant != nil:
			v.Via = append(v.Via, *l.grant)
		case l.kind == "baseline":
			v.Via = append(v.Via, Grant{Kind: "runtime", Summary: fmt.Sprintf("runtime baseline %q: %s read-only", e.p.Runtime.Name, l.at), Pos: e.m.pos(e.p.Pos)})
		case l.kind == "protected":
			for _, c := range d.covering {
				if c.grant != nil && c.kind != "protected" && (c.rw || c.kind == "fixed-top") {
					v.Via = append(v.Via, *c.grant)
				}
			}
		case l.kind == "dev":
			v.Via = append(v.Via, Grant{Kind: "device", Summary: l.at + " (every sandbox)"})
		}
	}
	v.Stops = append(v.Stops, d.stops...)
}

// noGrant explains a host path no layer shows.
func (e *eval) noGrant(v *Verdict, h string) {
	var ms []string
	for _, mt := range e.p.Mounts {
		ms = append(ms, fmt.Sprintf("%s -> %s", mt.Source, mt.Target))
	}
	what := "no mount"
	if len(ms) > 0 {
		what += " (" + strings.Join(ms, ", ") + ")"
	}
	detail := what + " holds it"
	root := e.be.Root(e.p)
	if root.Besides != "" {
		detail += ", nor " + root.Besides
	}
	if root.Image {
		for _, b := range e.p.Runtime.ReadOnly {
			if within(h, b) {
				detail += fmt.Sprintf("; the container sees the image's own %s, never the host's (the host backends' runtime baseline %q does not apply)", b, e.p.Runtime.Name)
				break
			}
		}
	}
	v.Stops = append(v.Stops, Stop{Rule: StopNoGrant, Detail: detail})
	finish(v)
}

// absent says when h is a protected name at the top of a read-write mount
// that did not exist when the plan was compiled: it can be created.
func (e *eval) absent(v *Verdict, h string) {
	if e.model == emit.HostPathsDeepestRule {
		return // protected names are denied whether present or not
	}
	for _, mt := range e.p.Mounts {
		if mt.Mode != compiler.ReadWrite || mt.FixedTop() {
			continue
		}
		src := e.m.source(mt.Source)
		if !within(h, src) || h == src {
			continue
		}
		name := firstComponent(h, src)
		pat := protect.Except(name, e.p.UnprotectedNames())
		if pat == "" {
			continue
		}
		protected := false
		for _, pr := range e.p.Protected {
			if within(h, e.m.source(pr.Source)) {
				protected = true
			}
		}
		if !protected {
			v.Stops = append(v.Stops, Stop{Rule: StopAbsentProt, Detail: fmt.Sprintf("%s matches the protected name %s but did not exist when the plan was compiled: only names present then are bound read-only, so the server can create it (explain lists the absent names)", path.Join(mt.Target, name), pat)})
		}
	}
}
