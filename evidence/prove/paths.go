package prove

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/protect"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// Where a path is, and what the plan says of it, computed from the plan
// alone: a row whose expectation the plan cannot give is shown, never
// counted, and a denial is only ever expected of a path outside every
// grant.

// place is one path as both kinds of backend see it.
type place struct {
	host   string // Landlock's view: host paths
	target string // bwrap's, docker's and podman's view: sandbox paths
}

// sandboxOwn are paths every sandbox has of its own (not the host's): the
// kernel's views, the device nodes, the files an engine writes for a
// container.
var sandboxOwn = []string{"/proc", "/dev", "/sys", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

type planView struct {
	p *compiler.Plan
	m compiler.Machine
}

func (v planView) source(i int) string { return v.m.Resolve(v.p.Mounts[i].Source) }

// byTarget is the deepest mount whose target holds t (-1: none): what
// bwrap and the engines show there.
func (v planView) byTarget(t string) int {
	best := -1
	for i, mt := range v.p.Mounts {
		if within(t, mt.Target) && (best < 0 || len(mt.Target) > len(v.p.Mounts[best].Target)) {
			best = i
		}
	}
	return best
}

// bySource is the deepest mount whose host source holds h (-1: none):
// what Landlock's ruleset grants there.
func (v planView) bySource(h string) int {
	best := -1
	for i := range v.p.Mounts {
		if s := v.source(i); filepath.IsAbs(s) && within(h, s) && (best < 0 || len(s) > len(v.source(best))) {
			best = i
		}
	}
	return best
}

// locate places a path given either way: below a mount target it is a
// sandbox path, below a mount source a host path; anywhere else it is the
// same path in both views.
func (v planView) locate(path string) place {
	path = filepath.Clean(path)
	if i := v.byTarget(path); i >= 0 {
		rel, _ := filepath.Rel(v.p.Mounts[i].Target, path)
		return place{host: filepath.Join(v.source(i), rel), target: path}
	}
	if i := v.bySource(path); i >= 0 {
		rel, _ := filepath.Rel(v.source(i), path)
		return place{host: path, target: filepath.Join(v.p.Mounts[i].Target, rel)}
	}
	return place{host: path, target: path}
}

// consistent reports whether both views of pc show the same file: a host
// path below a mount source may be hidden in the sandbox by a deeper
// mount, and a sandbox path may lie below another grant on the host.
func (v planView) consistent(pc place) bool {
	iT, iH := v.byTarget(pc.target), v.bySource(pc.host)
	if iT < 0 || iH < 0 {
		return iT < 0 && iH < 0 && pc.host == pc.target
	}
	relT, _ := filepath.Rel(v.p.Mounts[iT].Target, pc.target)
	relH, _ := filepath.Rel(v.source(iH), pc.host)
	return filepath.Join(v.source(iT), relT) == pc.host && filepath.Join(v.p.Mounts[iH].Target, relH) == pc.target
}

// grantOf names what makes path reachable in some backend's view, or ""
// when it lies outside every grant: a mount (its host source, for
// Landlock, or its target, for the others), the scratch, the runtime
// baseline, a sandbox's own files. A listing also reaches the folders a
// sandbox makes to hold its mount points.
func (v planView) grantOf(path string, op probe.Op) string {
	path = filepath.Clean(path)
	holds := func(at string) bool { return op == probe.List && within(at, path) }
	for i, mt := range v.p.Mounts {
		src := v.source(i)
		if filepath.IsAbs(src) && within(path, src) {
			return fmt.Sprintf("mount %s -> %s holds it", mt.Source.Placeholder(), mt.Target)
		}
		if within(path, mt.Target) || holds(mt.Target) {
			return fmt.Sprintf("it is the sandbox path of mount %s -> %s, or holds it", mt.Source.Placeholder(), mt.Target)
		}
	}
	if s := v.p.Scratch; s != nil && (within(path, s.Target) || holds(s.Target)) {
		return "the scratch " + s.Target + " holds it"
	}
	for _, b := range v.p.Runtime.ReadOnly {
		if within(path, b) || holds(b) {
			return fmt.Sprintf("runtime %q's baseline %s holds it", v.p.Runtime.Name, b)
		}
	}
	for _, s := range sandboxOwn {
		if within(path, s) || holds(s) {
			return "a sandbox's own " + s + " is there"
		}
	}
	return ""
}

// readExpect is what the plan says of reading (or listing) a path.
func (v planView) readExpect(pc place, op probe.Op) (expect, why string) {
	iT, iH := v.byTarget(pc.target), v.bySource(pc.host)
	if iT < 0 && iH < 0 {
		if g := v.grantOf(pc.host, op); g != "" {
			return "", "not outside every grant: " + g
		}
		if g := v.grantOf(pc.target, op); g != "" {
			return "", "not outside every grant: " + g
		}
		return "denied", "outside every grant"
	}
	if !v.consistent(pc) {
		return "", "the sandbox and the host show different files here (a mount hides another)"
	}
	fi, err := os.Lstat(pc.host)
	switch {
	case err != nil:
		return "", "not on the host: there is nothing to read"
	case fi.Mode()&os.ModeSymlink != 0:
		return "", "a symbolic link: where it leads is not the plan's to say"
	}
	return "allowed", "mount " + v.p.Mounts[iT].Target + " holds it"
}

// writeExpect is what the plan says of writing a path (creating it,
// changing it or removing it), under both views; when they differ, the
// plan gives no single answer and the row is shown only.
func (v planView) writeExpect(pc place) (expect, why string) {
	eT, wT := v.writeIn(v.byTarget(pc.target), pc.target, true)
	eH, wH := v.writeIn(v.bySource(pc.host), pc.host, false)
	if eT != eH || (eT == "allowed" && !v.consistent(pc)) {
		return "", "the sandbox and the host backends answer differently here (" + wT + "; " + wH + ")"
	}
	return eT, wT
}

func (v planView) writeIn(i int, path string, sandbox bool) (string, string) {
	if i < 0 {
		if s := v.p.Scratch; s != nil && within(path, s.Target) {
			return "", "the scratch " + s.Target + ": the sandbox's own, never the host's"
		}
		return "denied", "outside every read-write grant"
	}
	mt := v.p.Mounts[i]
	root := mt.Target
	if !sandbox {
		root = v.source(i)
	}
	if mt.Mode != compiler.ReadWrite {
		return "denied", "mount " + mt.Target + " is read-only"
	}
	for _, pr := range v.p.Protected {
		at := pr.Target
		if !sandbox {
			at = v.m.Resolve(pr.Source)
		}
		if within(path, at) {
			return "denied", "protected " + pr.Name + " stays read-only"
		}
	}
	rel, _ := filepath.Rel(root, path)
	if top := strings.Split(rel, string(filepath.Separator))[0]; mt.FixedTop() && top != "." {
		if n := protect.Except(top, v.p.UnprotectedNames()); n != "" {
			return "denied", "protected " + n + " stays read-only"
		}
		if _, err := os.Lstat(filepath.Join(v.source(i), top)); err != nil {
			return "denied", "a new top-level name: the launcher fixes " + mt.Target + "'s top level"
		}
	}
	return "allowed", "mount " + mt.Target + " is read-write"
}

// writeProbe is the probe's stand-in for writing pc: opening an existing
// file for writing (nothing is written), or creating (and removing) a new
// name — pc itself, or, when its folder does not exist yet, a fresh name
// in the deepest folder that does.
func writeProbe(pc place, fresh string) (probe.Op, place) {
	fi, err := os.Lstat(pc.host)
	switch {
	case err == nil && fi.Mode().IsRegular():
		return probe.Write, pc
	case err == nil && fi.IsDir():
		return probe.Create, place{filepath.Join(pc.host, fresh), filepath.Join(pc.target, fresh)}
	case err == nil:
		return probe.Write, pc // a link or a device: opened as the server would
	}
	h, t := pc.host, pc.target
	for {
		if _, err := os.Lstat(filepath.Dir(h)); err == nil || filepath.Dir(h) == h {
			break
		}
		h, t = filepath.Dir(h), filepath.Dir(t)
	}
	if h != pc.host {
		return probe.Create, place{filepath.Join(filepath.Dir(h), fresh), filepath.Join(filepath.Dir(t), fresh)}
	}
	return probe.Create, pc
}

// firstMissing is the shallowest folder or file on the way to path that
// does not exist (path itself when its folder exists, "" when path
// exists): what a write there would create.
func firstMissing(path string) string {
	if _, err := os.Lstat(path); err == nil {
		return ""
	}
	for {
		parent := filepath.Dir(path)
		if _, err := os.Lstat(parent); err == nil || parent == path {
			return path
		}
		path = parent
	}
}
