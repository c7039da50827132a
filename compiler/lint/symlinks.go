package lint

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"cuelang.org/go/cue/literal"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/credstore"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
)

// How a plan's backends show the host to the server: some (landlock,
// seatbelt) grant each folder at its host path; the others (bwrap, the
// engines, kubernetes) show each mount at its target, so a relative link resolves against the
// sandbox's paths, not the host's.
type views struct {
	hostPaths []string // backends that keep host paths
	remapped  bool     // some backend shows mounts at their targets
}

func planViews(p *compiler.Plan) views {
	var v views
	for _, b := range p.Backends {
		if backendtraits.HostPaths(b) {
			v.hostPaths = append(v.hostPaths, b)
		} else {
			v.remapped = true
		}
	}
	if len(v.hostPaths) == 0 {
		v.remapped = true // a client entry's docker or bwrap, or the default
	}
	return v
}

// sandboxMount is a mount as the server sees it: its target with ~/
// spelt as the home it becomes at spawn.
type sandboxMount struct {
	host, target string
	m            compiler.Mount
}

func sandboxMounts(t *readback.Target) []sandboxMount {
	var out []sandboxMount
	for _, m := range mounts(t) {
		target := m.Target
		if rest, ok := strings.CutPrefix(target, "~/"); ok && t.Home != "" {
			target = path.Join(filepath.ToSlash(t.Home), rest)
		}
		out = append(out, sandboxMount{m.Host, target, m.Mount})
	}
	return out
}

// resolveIn is the host path the sandbox path p shows under the deepest
// mount whose target holds it.
func resolveIn(ms []sandboxMount, p string) (string, bool) {
	best := -1
	for i, m := range ms {
		if within(p, m.target) && (best < 0 || len(m.target) > len(ms[best].target)) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, ms[best].target), "/")
	return filepath.Join(ms[best].host, filepath.FromSlash(rel)), true
}

// hop is one link's own step: where its text points on the host and in
// the sandbox (its folder there joined with the text; ".." stops at /).
type hop struct {
	link
	host, sandbox string
	abs           bool
}

// checkSymlinks walks each granted folder of this machine (bounded, once
// per run: walk.go) for symlinks that do not resolve in the sandbox: on a
// host-path backend, those whose target lies outside every grant; where
// mounts stand at their targets, those whose text, read from the link's
// sandbox folder, leads to a path no mount shows as the host target. It
// names the exact read-only mount that makes them resolve: the smallest
// folder holding their targets, at the sandbox path the links lead to. A
// mount that holds the targets at another target does not quiet it: the
// finding names that mount and the target it needs. A target whose paths
// are not this machine's is not walked: its folders are not here.
func checkSymlinks(t *readback.Target, o Options, report reportFn) {
	if t.Plan == nil {
		return
	}
	v := planViews(t.Plan)
	ms := sandboxMounts(t)
	granted := func(p string) bool {
		for _, m := range ms {
			if within(p, m.host) {
				return true
			}
		}
		return false
	}
	for _, m := range ms {
		dir, ok := onMachine(t, m.host)
		if !ok {
			continue
		}
		w := o.fs.symlinks(dir)
		var bad, direct []hop
		for _, l := range w.links {
			h := hop{link: l, abs: filepath.IsAbs(l.text)}
			h.host = filepath.Clean(filepath.Join(filepath.Dir(filepath.Join(dir, l.rel)), l.text))
			if h.abs {
				h.host = filepath.Clean(l.text)
			}
			h.sandbox = filepath.ToSlash(h.host)
			ok, hopOK := true, true
			if len(v.hostPaths) > 0 {
				ok = granted(l.real)
				hopOK = granted(h.host)
			}
			if v.remapped {
				if !h.abs {
					h.sandbox = path.Join(path.Dir(path.Join(m.target, l.rel)), filepath.ToSlash(l.text))
				}
				x, shown := resolveIn(ms, h.sandbox)
				same := shown && x == h.host
				if !same && shown {
					real, err := o.fs.evalSymlinks(x)
					ok = ok && err == nil && real == l.real
				} else {
					ok = ok && same
				}
				hopOK = hopOK && same
			}
			if ok {
				continue
			}
			bad = append(bad, h)
			if !hopOK { // its own step fails; else it leads to a link that is reported itself
				direct = append(direct, h)
			}
		}
		if len(bad) == 0 {
			continue
		}
		more := ""
		if w.partial {
			more = " (the scan stopped at its bound: there may be more)"
		}
		report(m.m.Pos, "%s", symlinkMessage(t, v, m.m.Target, ms, bad, direct, more))
	}
}

// symlinkMessage says which links dangle and, per group of links that one
// mount serves, the mount that makes them resolve.
func symlinkMessage(t *readback.Target, v views, in string, ms []sandboxMount, bad, direct []hop, more string) string {
	sort.Slice(bad, func(i, j int) bool { return bad[i].rel < bad[j].rel })
	held := false // some link's target is granted: it dangles for where it is shown
	for _, h := range direct {
		if _, m := holder(ms, h.host); m != nil {
			held = true
		}
	}
	if len(direct) == 0 { // chains of links whose next link is not walked
		var targets []string
		for _, h := range bad {
			targets = append(targets, h.real)
		}
		grant := commonDir(targets)
		if why := tooWide(t, grant); why != "" {
			return fmt.Sprintf("%d symlink(s) in %s resolve outside every grant and will dangle (e.g. %s -> %s)%s; the folder that holds their targets, %s, is %s: no grant is suggested for that",
				len(bad), in, bad[0].rel, bad[0].real, more, grant, why)
		}
		return fmt.Sprintf("%d symlink(s) in %s resolve outside every grant and will dangle (e.g. %s -> %s)%s; the smallest read-only grant that holds them is %s, which adds a grant",
			len(bad), in, bad[0].rel, bad[0].real, more, grant)
	}
	var head string
	if held {
		e := direct[0]
		head = fmt.Sprintf("%d symlink(s) in %s dangle in the sandbox (e.g. %s -> %s, which is %s there)%s", len(bad), in, e.rel, e.text, e.sandbox, more)
	} else {
		head = fmt.Sprintf("%d symlink(s) in %s resolve outside every grant and will dangle (e.g. %s -> %s)%s", len(bad), in, bad[0].rel, bad[0].real, more)
	}
	var clauses []string
	for _, g := range groupHops(direct) {
		clauses = append(clauses, g.clause(t, v, ms))
	}
	return head + "; " + strings.Join(clauses, "; ")
}

// hopGroup are links one mount serves: their targets are the same
// distance below hostTop on the host as below sandboxTop in the sandbox.
type hopGroup struct {
	hostTop, sandboxTop string
	hops                []hop
}

func groupHops(hs []hop) []*hopGroup {
	var gs []*hopGroup
	by := map[[2]string]*hopGroup{}
	for _, h := range hs {
		hp, sp := h.host, h.sandbox
		for hp != "/" && sp != "/" && filepath.Base(hp) == path.Base(sp) {
			hp, sp = filepath.Dir(hp), path.Dir(sp)
		}
		k := [2]string{hp, sp}
		if by[k] == nil {
			by[k] = &hopGroup{hostTop: hp, sandboxTop: sp}
			gs = append(gs, by[k])
		}
		by[k].hops = append(by[k].hops, h)
	}
	return gs
}

// sandboxAt is the sandbox path of host path p (below g.hostTop).
func (g *hopGroup) sandboxAt(p string) string {
	rel, _ := filepath.Rel(g.hostTop, p)
	return path.Join(g.sandboxTop, filepath.ToSlash(rel))
}

func (g *hopGroup) clause(t *readback.Target, v views, ms []sandboxMount) string {
	var targets []string
	abs := true
	for _, h := range g.hops {
		targets = append(targets, h.host)
		abs = abs && h.abs
	}
	store := storeDir(targets)
	if !within(store, g.hostTop) {
		store = g.hostTop
	}
	target := g.sandboxAt(store)
	if why := tooWide(t, store); why != "" {
		// Links a server planted may lead anywhere: no line for a
		// mount that would hand it the home.
		return fmt.Sprintf("they lead to %s (e.g. %s -> %s), which is %s: no mount line is written for that; remove the links, or mount the folders they need one by one", store, g.hops[0].rel, g.hops[0].text, why)
	}
	if unmountable(target) {
		return fmt.Sprintf("they lead to %s in the sandbox, where no mount can stand (their ../ climb to /): mount %s at a deeper target, or at its host path", g.sandboxAt(g.hops[0].host), g.hops[0].host)
	}
	line := fmt.Sprintf(`{source: %s, target: %s, mode: "ro"}`, cueq(sourceText(t, store)), cueq(showTarget(t, ms, target)))
	note := ""
	switch {
	case !v.remapped:
		note = fmt.Sprintf(" (%s %s host paths: the target is the host path itself)", strings.Join(v.hostPaths, " and "), verb(len(v.hostPaths)))
	case abs:
		note = " (absolute links: the target is the host path itself)"
	}
	if hm, m := holder(ms, store); m != nil && v.remapped {
		need := ""
		if len(v.hostPaths) > 0 && note == "" { // the line is for the others alone
			note = fmt.Sprintf(" (%s %s host paths: the links resolve there already)", strings.Join(v.hostPaths, " and "), verb(len(v.hostPaths)))
		}
		if within(hm, g.hostTop) && !unmountable(g.sandboxAt(hm)) {
			need = fmt.Sprintf("give it target %s, or ", cueq(showTarget(t, ms, g.sandboxAt(hm))))
		}
		return fmt.Sprintf("mount %s (%s) holds their targets, but they lead to %s in the sandbox: %sthe read-only mount that makes them resolve is %s%s",
			m.Target, m.Source, g.sandboxAt(g.hops[0].host), need, line, note)
	}
	return fmt.Sprintf("the read-only mount that makes them resolve is %s%s, which adds a grant", line, note)
}

func verb(n int) string {
	if n > 1 {
		return "show"
	}
	return "shows"
}

// holder is the deepest mount whose host folder holds p, and that folder.
func holder(ms []sandboxMount, p string) (string, *compiler.Mount) {
	best := -1
	for i, m := range ms {
		if within(p, m.host) && (best < 0 || len(m.host) > len(ms[best].host)) {
			best = i
		}
	}
	if best < 0 {
		return "", nil
	}
	return ms[best].host, &ms[best].m
}

// unmountable: no mount may stand at p (the compiler refuses these targets).
func unmountable(p string) bool {
	for _, s := range []string{"/proc", "/sys", "/dev"} {
		if within(p, s) {
			return true
		}
	}
	return p == "/" || p == "."
}

// storeDir is the smallest folder holding every target: one folder
// target is its own, but a package in a node_modules folder (pnpm's
// .pnpm/NAME@VERSION/node_modules/NAME, a scope's @s/NAME) brings that
// node_modules, where Node finds the package's own dependencies from its
// real path.
func storeDir(targets []string) string {
	uniq := map[string]bool{}
	var ps []string
	for _, p := range targets {
		if !uniq[p] {
			uniq[p] = true
			ps = append(ps, p)
		}
	}
	if len(ps) > 1 {
		return commonDir(ps)
	}
	p := ps[0]
	parent := filepath.Dir(p)
	if strings.HasPrefix(filepath.Base(parent), "@") {
		parent = filepath.Dir(parent)
	}
	if filepath.Base(parent) == "node_modules" {
		return parent
	}
	return p
}

// sourceText writes a host folder as a policy's source: relative to the
// policy file's folder inside the project, ~/ in the home, else absolute.
func sourceText(t *readback.Target, host string) string {
	if t.ProjectRoot != "" {
		root := filepath.Clean(t.ProjectRoot)
		if within(host, root) {
			dir := root
			if t.Plan != nil && t.Plan.PolicyFile != "" {
				dir = filepath.Join(root, filepath.Dir(filepath.FromSlash(t.Plan.PolicyFile)))
			}
			if rel, err := filepath.Rel(dir, host); err == nil {
				return filepath.ToSlash(rel)
			}
		}
	}
	if t.Home != "" {
		home := filepath.Clean(t.Home)
		if within(host, home) && host != home {
			rel, _ := filepath.Rel(home, host)
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(host)
}

// showTarget writes a sandbox path as a target: ~/ when the plan's
// targets are in the home.
func showTarget(t *readback.Target, ms []sandboxMount, p string) string {
	if t.Home == "" {
		return p
	}
	home := filepath.ToSlash(filepath.Clean(t.Home))
	for _, m := range ms {
		if strings.HasPrefix(m.m.Target, "~/") && within(p, home) && p != home {
			return "~/" + strings.TrimPrefix(p, home+"/")
		}
	}
	return p
}

// farmParent says, of mount m above the project root (MOUNT_PARENT),
// whether it was moved up for a symlink farm: links below the project
// lead into it outside the project, to targets no narrower mount holds
// (the workspace's .pnpm store of a package's node_modules). Then it
// says so in diff's words (MOUNT_MOVED_UP) and writes the two narrower
// mounts, at the paths they have under m's target, so every path the
// server sees, and every link, stays as it was.
func farmParent(t *readback.Target, o Options, root string, ms []sandboxMount, i int) (string, bool) {
	m := ms[i]
	var via, hosts []string
	for _, l := range o.fs.symlinks(root).links {
		host := filepath.Clean(l.text)
		if !filepath.IsAbs(l.text) {
			host = filepath.Clean(filepath.Join(filepath.Dir(filepath.Join(root, l.rel)), l.text))
		}
		if !within(host, m.host) || within(host, root) {
			continue
		}
		narrower := false
		for j, n := range ms {
			narrower = narrower || j != i && len(n.host) > len(m.host) && within(host, n.host)
		}
		if !narrower {
			via = append(via, l.rel+" -> "+l.text)
			hosts = append(hosts, host)
		}
	}
	if len(via) == 0 {
		return "", false
	}
	sort.Strings(via)
	store := storeDir(hosts)
	below := func(p string) string {
		rel, _ := filepath.Rel(m.host, p)
		return showTarget(t, ms, path.Join(m.target, filepath.ToSlash(rel)))
	}
	return fmt.Sprintf("mount %s moved up: %s -> %s (a parent holds more): above the project folder %s, it holds the store %d of the project's symlink(s) lead to (e.g. %s) and all else beside them; mount the two instead, where they are now: {source: %s, target: %s, mode: %q} and {source: %s, target: %s, mode: \"ro\"}",
		m.m.Target, compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, m.m.Source, root, len(via), via[0],
		cueq(sourceText(t, root)), cueq(below(root)), string(m.m.Mode), cueq(sourceText(t, store)), cueq(below(store))), true
}

// commonDir is the deepest folder holding every path. It stops at the top
// (/, a volume, or "." for relative paths): it cannot loop.
func commonDir(paths []string) string {
	dir := filepath.Dir(paths[0])
	for _, p := range paths[1:] {
		for !within(p, dir) {
			up := filepath.Dir(dir)
			if up == dir {
				return dir
			}
			dir = up
		}
	}
	return dir
}

// tooWide says why no mount line is written for host folder p ("" when
// one is): the root, the home or a folder above it, or a credential store
// of the home (or a folder holding one).
func tooWide(t *readback.Target, p string) string {
	switch {
	case p == "/" || filepath.Dir(p) == p:
		return "the root"
	case t.Home != "" && within(filepath.Clean(t.Home), p):
		return "the home or a folder holding it"
	case t.Home != "" && within(p, filepath.Clean(t.Home)):
		rel, _ := filepath.Rel(filepath.Clean(t.Home), p)
		if hit := credstore.Touching(filepath.ToSlash(rel)); len(hit) > 0 {
			return "a credential store of the home, or holds one (~/" + hit[0] + ")"
		}
	}
	return ""
}

// cueq quotes s as a CUE string, so a line lint writes is data whatever
// a folder's name holds: control characters as \u escapes (Go's %q
// writes \x01, which CUE refuses), a backslash before ( doubled.
func cueq(s string) string { return literal.String.Quote(s) }
