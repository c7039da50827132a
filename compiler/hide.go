package compiler

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
)

// MaxHide bounds a mount's hidden paths: each is a mask the launcher
// mounts at spawn.
const MaxHide = 64

// HideGlob reports whether a hidden path's last element is a pattern.
func HideGlob(h string) bool { return strings.ContainsAny(path.Base(h), "*?[") }

// hide checks a mount's hidden paths and returns them sorted, each once,
// with their positions.
func (c *compiler) hide(m schema.Mount, field string) ([]string, []position.Pos) {
	if len(m.Hide) == 0 {
		return nil, nil
	}
	if len(m.Hide) > MaxHide {
		c.fail(m.HideAt, field, fmt.Sprintf("hide a folder that holds them, or a pattern (\".env*\"): at most %d per mount", MaxHide),
			"%d hidden paths in one mount", len(m.Hide))
		return nil, nil
	}
	type entry struct {
		p   string
		pos position.Pos
	}
	var es []entry
	for i, h := range m.Hide {
		pos, f := m.HideAt, fmt.Sprintf("%s[%d]", field, i)
		if i < len(m.HidePos) {
			pos = m.HidePos[i]
		}
		if why := badHide(h); why != "" {
			c.fail(pos, f, `write a path relative to the mount's source, e.g. ".env*" or "secrets" or "config/*.pem"`, "hidden path %q: %s", h, why)
			continue
		}
		es = append(es, entry{h, pos})
	}
	slices.SortStableFunc(es, func(a, b entry) int { return strings.Compare(a.p, b.p) })
	var hs []string
	var ps []position.Pos
	for _, e := range es {
		if len(hs) > 0 && hs[len(hs)-1] == e.p {
			continue
		}
		hs, ps = append(hs, e.p), append(ps, e.pos)
	}
	return hs, ps
}

// badHide says why a hidden path is refused, or "".
func badHide(h string) string {
	switch {
	case h == "" || h == ".":
		return "it would hide the whole mount (leave the mount out instead)"
	case strings.HasPrefix(h, "/"):
		return "it is absolute: hidden paths are relative to the mount's source"
	case path.Clean(h) != h || strings.Contains(h, "\\"):
		return "it is not a clean, slash-separated path"
	}
	for _, e := range strings.Split(h, "/") {
		if e == ".." {
			return `".." would leave the mount`
		}
	}
	if strings.ContainsAny(path.Dir(h), "*?[]") {
		return "only the last element may be a pattern"
	}
	if _, err := path.Match(path.Base(h), ""); err != nil {
		return "the pattern is malformed (an unclosed \"[\"?)"
	}
	return ""
}

// Hides reports whether a path below the mount's source (relative,
// slash-separated) is hidden: it or a folder holding it matches one of the
// mount's hidden paths. It returns the hidden path that matched.
func (m Mount) Hides(rel string) (string, bool) {
	parts := strings.Split(path.Clean(rel), "/")
	for _, h := range m.Hide {
		hp := strings.Split(h, "/")
		if len(parts) < len(hp) {
			continue
		}
		ok := true
		for i, e := range hp {
			if i == len(hp)-1 {
				ok, _ = path.Match(e, parts[i])
			} else if e != parts[i] {
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok {
			return h, true
		}
	}
	return "", false
}

// SecretName reports whether a file name looks like a secret: .env*,
// *.pem, *.key, id_* but not id_*.pub (lint's SECRETS_WITH_EGRESS).
func SecretName(n string) bool {
	return strings.HasPrefix(n, ".env") || strings.HasSuffix(n, ".pem") || strings.HasSuffix(n, ".key") ||
		(strings.HasPrefix(n, "id_") && !strings.HasSuffix(n, ".pub"))
}

// ReadableSecret is a secret-looking file a server with network access
// can read in one of its mounts.
type ReadableSecret struct {
	Mount Mount
	Rel   string // below the mount's source
	Host  string // on this machine
}

// Fix is the one-line change that hides it: ".env*" for an env file, else
// its own path.
func (s ReadableSecret) Fix() string {
	h := s.Rel
	if strings.HasPrefix(path.Base(s.Rel), ".env") {
		h = path.Join(path.Dir(s.Rel), ".env*")
	}
	return fmt.Sprintf("hide: [%q]", h)
}

// Warning is the sentence explain and client print.
func (s ReadableSecret) Warning(p *Plan) string {
	if s.Rel == "." {
		return fmt.Sprintf("warning: server %q can read %s (a file mount at %s) and reach the network, which could carry it away: drop that mount (%s), or keep network none",
			p.Server, s.Host, s.Mount.Target, s.Mount.Pos)
	}
	via := "the open network"
	if p.Network.Mode == "allowlist" {
		via = fmt.Sprintf("egress to %d allowed destination(s)", len(p.Network.Allow))
	}
	return fmt.Sprintf("warning: server %q can read %s (at %s) and reach %s, which could carry it away: add %s to the mount at %s (%s), or keep network none",
		p.Server, s.Host, path.Join(s.Mount.Target, s.Rel), via, s.Fix(), s.Mount.Target, s.Mount.Pos)
}

// ReadableSecrets lists the secret-looking files a server with network
// access can read in its mounts on this machine, hidden ones left out:
// at most five per mount, four folders deep, no link followed, no
// node_modules; nil for a server without network.
func ReadableSecrets(p *Plan, m Machine) []ReadableSecret {
	if p.Network.Mode == "none" {
		return nil
	}
	var out []ReadableSecret
	for _, mt := range p.Mounts {
		root := m.Resolve(mt.Source)
		if root == "" || !filepath.IsAbs(root) {
			continue
		}
		fi, err := os.Lstat(root)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			if fi.Mode().IsRegular() && SecretName(fi.Name()) {
				out = append(out, ReadableSecret{Mount: mt, Rel: ".", Host: root})
			}
			continue
		}
		found := 0
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || found >= 5 {
				if d != nil && d.IsDir() && p != root {
					return fs.SkipDir
				}
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if rel != "." {
				if _, hidden := mt.Hides(rel); hidden {
					if d.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
			}
			if d.IsDir() {
				if rel != "." && (d.Name() == "node_modules" || strings.Count(rel, "/") >= 3) {
					return fs.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && SecretName(d.Name()) {
				out = append(out, ReadableSecret{Mount: mt, Rel: rel, Host: p})
				found++
			}
			return nil
		})
	}
	return out
}

// hiddenTargets refuses a mount, scratch or workdir that lies in a path
// another mount hides: the mask goes on after every other mount, so what
// was granted there would be out of reach on one backend and in view on
// another.
func (c *compiler) hiddenTargets(p *Plan, at string) {
	type target struct {
		path  string
		pos   position.Pos
		field string
	}
	var ts []target
	for _, m := range p.Mounts {
		ts = append(ts, target{m.Target, m.Pos, at + ".mounts"})
	}
	for _, s := range p.Scratches() {
		ts = append(ts, target{s.Target, s.Pos, at + ".scratch"})
	}
	if p.Workdir != "" {
		ts = append(ts, target{p.Workdir, p.Pos, at + ".workdir"})
	}
	for _, m := range p.Mounts {
		if len(m.Hide) == 0 {
			continue
		}
		for _, t := range ts {
			rel, ok := strings.CutPrefix(t.path, strings.TrimSuffix(m.Target, "/")+"/")
			if !ok {
				continue
			}
			if h, hidden := m.Hides(rel); hidden {
				c.fail(t.pos, t.field, "grant it somewhere the hide does not reach, or narrow the hidden path",
					"%s lies in %s, which the mount at %s hides (%q)", t.path, path.Join(m.Target, h), m.Target, h)
			}
		}
	}
}

// hiddenWays refuses a hidden path the server could move out of its
// pattern's reach, and one another mount shows unhidden. A folder on a
// hidden path's way (config in "config/*.pem") that the server can
// rename (config -> config2) is found by no pattern at the next spawn:
// the file is readable under its new name then (and at once under
// seatbelt, which denies by path). A folder that is a mount point is
// not renamed (EBUSY): a mount's root, or an entry of a fixed top level.
func (c *compiler) hiddenWays(p *Plan, s *schema.Server, at string) {
	for i, m := range p.Mounts {
		for j, h := range m.Hide {
			pos := m.Pos
			if j < len(m.HidePos) {
				pos = m.HidePos[j]
			}
			field := hideField(s, at, m.Pos, pos)
			if f, rw, ok := renamableWay(p, m, h); !ok {
				c.fail(pos, field, fmt.Sprintf("hide the folder itself (%q), mount it on its own with the pattern below it (source %q, hide [%q]), or make %s read-only",
					path.Dir(h), m.Source.Join(path.Dir(h)).Rel, path.Base(h), rw),
					"hidden path %q: a server that can write %s can rename %s (and everything hidden below it) to a name no pattern matches, and read it there from its next start",
					h, rw, f)
				continue
			}
			if o, seen, ok := shownElsewhere(p, i, h); !ok {
				c.fail(pos, field, fmt.Sprintf("hide it in that mount too (%s), or mount the folders beside it instead", o.Pos),
					"hidden path %q of the mount at %s is readable through the mount at %s (%s)", h, m.Target, o.Target, seen)
			}
		}
	}
}

// renamableWay returns the first folder on h's way (in the sandbox) that
// lies inside a read-write mount and is no mount point, with that mount's
// target.
func renamableWay(p *Plan, m Mount, h string) (folder, rw string, ok bool) {
	dir := path.Dir(h)
	if dir == "." {
		return "", "", true
	}
	var way []string
	for e := range strings.SplitSeq(dir, "/") {
		prev := m.Target
		if len(way) > 0 {
			prev = way[len(way)-1]
		}
		way = append(way, path.Join(prev, e))
	}
	for _, f := range way {
		if holdsTarget(p, f) {
			continue
		}
		for _, o := range p.Mounts {
			rel, in := strings.CutPrefix(f, strings.TrimSuffix(o.Target, "/")+"/")
			if o.Mode != ReadWrite || !in || o.FixedTop() && !strings.Contains(rel, "/") {
				continue
			}
			return f, o.Target, false
		}
	}
	return "", "", true
}

// holdsTarget reports whether a mount's target is f.
func holdsTarget(p *Plan, f string) bool {
	for _, o := range p.Mounts {
		if path.Clean(o.Target) == f {
			return true
		}
	}
	return false
}

// shownElsewhere returns a mount other than p.Mounts[i] whose source holds
// or lies in what p.Mounts[i] hides as h, where its mask does not lie,
// and which does not hide it too, with the path it shows it at. Sources
// of different bases are not compared (the plan cannot tell).
func shownElsewhere(p *Plan, i int, h string) (Mount, string, bool) {
	m := p.Mounts[i]
	hidden := m.Source.Join(h)
	masked := path.Join(m.Target, h)
	for k, o := range p.Mounts {
		if k == i || o.Source.Base != hidden.Base {
			continue
		}
		if rel, in := relBelow(hidden.Rel, o.Source.Rel); in {
			seen := path.Join(o.Target, rel)
			if seen == masked || hiddenIn(o, rel) {
				continue
			}
			return o, seen, false
		}
		if _, in := relBelow(o.Source.Rel, hidden.Rel); in {
			return o, o.Target, false
		}
	}
	return Mount{}, "", true
}

// relBelow returns p relative to dir when p lies in it (or is it).
func relBelow(p, dir string) (string, bool) {
	if p == dir {
		return ".", true
	}
	if dir == "." || dir == "/" {
		return strings.TrimPrefix(p, "/"), !path.IsAbs(p) || dir == "/"
	}
	rel, ok := strings.CutPrefix(p, dir+"/")
	return rel, ok
}

// hiddenIn reports whether mount o hides rel (a hidden path, its last
// element possibly a pattern): the same entry, or a folder holding it.
func hiddenIn(o Mount, rel string) bool {
	if slices.Contains(o.Hide, rel) {
		return true
	}
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if _, ok := o.Hides(d); ok {
			return true
		}
	}
	return !HideGlob(rel) && func() bool { _, ok := o.Hides(rel); return ok }()
}

// hideField names a hidden path's field as the policy wrote it: the plan
// holds the mounts sorted by target and each mount's hide sorted.
func hideField(s *schema.Server, at string, mount, hide position.Pos) string {
	for k, m := range s.Mounts {
		if m.Pos != mount {
			continue
		}
		for x, hp := range m.HidePos {
			if hp == hide {
				return fmt.Sprintf("%s.mounts[%d].hide[%d]", at, k, x)
			}
		}
		return fmt.Sprintf("%s.mounts[%d].hide", at, k)
	}
	return at + ".mounts"
}
