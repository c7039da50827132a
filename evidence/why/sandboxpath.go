package why

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// sandboxPath answers for a path as the server names it: itself where
// mounts sit at their targets; where the server names host paths (no
// remapping), the host path the sandbox's mounts would show there.
func (e *eval) sandboxPath(v *Verdict, p string, a *Answer) {
	if e.hostNames() {
		h := p
		if hp, ok := e.p.HostPathOf(p); ok {
			h = e.m.source(hp)
		} else if e.p.Scratch != nil && within(p, e.p.Scratch.Target) {
			d := e.processPath(p)
			e.record(v, p, d)
			finish(v)
			return
		}
		real, notes := e.m.realPath(h)
		a.Notes = append(a.Notes, notes...)
		if real != p {
			v.Stops = append(v.Stops, Stop{Rule: "host-paths", Detail: fmt.Sprintf("%s does not remap paths: the server names it %s", e.backend, e.m.show(real))})
		}
		e.hostPath(v, real)
		return
	}
	p, notes := e.resolveInSandbox(p)
	a.Notes = append(a.Notes, notes...)
	d := e.processPath(p)
	if !d.found {
		v.Stops = append(v.Stops, d.stops...)
		finish(v)
		return
	}
	e.record(v, p, d)
	if d.deciding != nil && d.deciding.src != "" {
		e.absent(v, path.Join(d.deciding.src, rel(p, d.deciding.at)))
	}
	finish(v)
}

// resolveInSandbox follows symlinks on the way to p as the sandbox sees
// them, reading each link on this machine through the layer that shows it.
func (e *eval) resolveInSandbox(p string) (string, []string) {
	if !e.m.FS {
		return p, nil
	}
	var notes []string
	for hops := 0; hops < 40; hops++ {
		comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur, next := "/", ""
		restart := false
		for i, c := range comps {
			if c == "" {
				continue
			}
			next = path.Join(cur, c)
			h, ok := e.hostOf(next)
			if !ok {
				cur = next
				continue
			}
			fi, err := os.Lstat(h)
			if err != nil {
				return p, notes
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				t, err := os.Readlink(h)
				if err != nil {
					return p, notes
				}
				rest := path.Join(comps[i+1:]...)
				var np string
				if path.IsAbs(t) {
					np = path.Join(t, rest)
				} else {
					np = path.Join(cur, t, rest)
				}
				notes = append(notes, fmt.Sprintf("%s is a symlink to %s on this machine (%s): inside the sandbox it leads to %s", next, t, e.m.show(h), np))
				p, restart = np, true
				break
			}
			cur = next
		}
		if !restart {
			return p, notes
		}
	}
	return p, append(notes, "too many levels of symlinks")
}

// hostOf is the host path the deepest layer shows at p.
func (e *eval) hostOf(p string) (string, bool) {
	var best *layer
	for i := range e.layers {
		l := &e.layers[i]
		if l.covers(p) && (best == nil || len(l.at) > len(best.at)) {
			best = l
		}
	}
	if best == nil || best.src == "" {
		return "", false
	}
	return filepath.Join(best.src, rel(p, best.at)), true
}
