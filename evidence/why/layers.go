package why

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/bytesize"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// layer is one thing mounted (or allowed) at a path the server names.
type layer struct {
	at     string // the path the server names it by
	src    string // the host path it shows; "" for a tmpfs or the root
	rw     bool
	noexec bool
	kind   string // mount, protected, scratch, baseline, fixed-top, fixed-entry, dev
	grant  *Grant
	name   string // the protected name
	mount  *compiler.Mount
}

// covers reports whether the layer holds p. A protected name ending in
// "*" (".env*", "mcpolicy.*") stands for every top-level entry with that
// prefix.
func (l *layer) covers(p string) bool {
	if prefix, ok := strings.CutSuffix(l.at, "*"); ok && l.kind == "protected" {
		dir := path.Dir(l.at)
		return within(p, dir) && p != dir && strings.HasPrefix(path.Join(dir, firstComponent(p, dir)), prefix)
	}
	return within(p, l.at)
}

// eval answers for one plan on one backend, from the layers the backend's
// view of the plan shows the server.
type eval struct {
	p       *compiler.Plan
	m       Machine
	be      emit.Backend
	backend string // its name, as answers print it
	model   emit.PathModel
	layers  []layer
}

func newEval(p *compiler.Plan, m Machine, be emit.Backend) *eval {
	e := &eval{p: p, m: m, be: be, backend: be.Name(), model: be.PathModel()}
	for i := range p.Mounts {
		e.mountLayers(&p.Mounts[i])
	}
	e.protectedLayers()
	e.scratchLayer()
	for _, s := range be.Baseline(p) {
		l := layer{at: s.At, src: s.Source, rw: s.Write, kind: "baseline"}
		if s.Device {
			l.kind = "dev"
		}
		e.layers = append(e.layers, l)
	}
	return e
}

// hostNames reports whether the server names host paths (no remapping).
func (e *eval) hostNames() bool { return e.model != emit.MountsAtTargets }

// mountLayers adds what one mount shows: at its target where mounts are,
// at its source where the server names host paths.
func (e *eval) mountLayers(mt *compiler.Mount) {
	src := e.m.source(mt.Source)
	g := e.mountGrant(mt)
	at := mt.Target
	if e.hostNames() {
		at = src
	}
	if !mt.FixedTop() || e.model == emit.HostPathsDeepestRule {
		e.layers = append(e.layers, layer{at: at, src: src, rw: mt.Mode == compiler.ReadWrite, kind: "mount", grant: g, mount: mt})
		return
	}
	unprot := e.p.UnprotectedNames()
	if !e.m.FS {
		// Without the file system the entries present at spawn are
		// unknown: the mount as read-write, its protected names
		// read-only by name.
		e.layers = append(e.layers, layer{at: at, src: src, rw: true, kind: "mount", grant: g, mount: mt})
		for _, n := range protect.Names {
			if !slices.Contains(unprot, n.Pattern) {
				e.layers = append(e.layers, layer{at: path.Join(at, n.Pattern), kind: "protected", name: n.Pattern})
			}
		}
		return
	}
	// The launcher binds the project root read-only and every top-level
	// entry present at spawn again on top: read-write, protected ones
	// read-only.
	e.layers = append(e.layers, layer{at: at, src: src, kind: "fixed-top", grant: g, mount: mt})
	ents, _ := os.ReadDir(src)
	for _, ent := range ents {
		pat := protect.Except(ent.Name(), unprot)
		l := layer{at: path.Join(at, ent.Name()), src: filepath.Join(src, ent.Name()), rw: pat == "", kind: "fixed-entry", grant: g, mount: mt}
		if pat != "" {
			l.kind, l.name = "protected", pat
		}
		e.layers = append(e.layers, l)
	}
}

// protectedLayers adds the protected names' read-only layers: binds of
// the names present at compile time (at their targets, or at their host
// paths where rights add up: Landlock's minimal root binds them), denials
// by name at the top of every read-write mount (present or not) where the
// deepest rule decides.
func (e *eval) protectedLayers() {
	switch e.model {
	case emit.MountsAtTargets, emit.HostPathsRightsAdd:
		for _, pr := range e.p.Protected {
			at, src := pr.Target, e.m.source(pr.Source)
			if e.hostNames() {
				at = src
			}
			e.layers = append(e.layers, layer{at: at, src: src, kind: "protected", name: pr.Name})
		}
	case emit.HostPathsDeepestRule:
		unprot := e.p.UnprotectedNames()
		for _, mt := range e.p.Mounts {
			if mt.Mode != compiler.ReadWrite {
				continue
			}
			src := e.m.source(mt.Source)
			for _, n := range protect.Names {
				if !slices.Contains(unprot, n.Pattern) {
					e.layers = append(e.layers, layer{at: path.Join(src, n.Pattern), kind: "protected", name: n.Pattern})
				}
			}
		}
	}
}

// scratchLayer adds the scratch where the backend mounts it at its target.
func (e *eval) scratchLayer() {
	s := e.p.Scratch
	sm := e.be.ScratchMount()
	if s == nil || !sm.AtTarget {
		return
	}
	e.layers = append(e.layers, layer{at: s.Target, rw: true, noexec: sm.NoExec, kind: "scratch",
		grant: &Grant{Kind: string(compiler.GrantScratch), Summary: fmt.Sprintf("tmpfs %s, %s", s.Target, bytesize.Format(s.SizeBytes)), Pos: e.m.pos(s.Pos)}})
}

func (e *eval) mountGrant(mt *compiler.Mount) *Grant {
	kind := compiler.GrantMountRO
	if mt.Mode == compiler.ReadWrite {
		kind = compiler.GrantMountRW
	}
	return &Grant{Kind: string(kind), Summary: fmt.Sprintf("%s -> %s", mt.Source, mt.Target), Pos: e.m.pos(mt.Pos)}
}
