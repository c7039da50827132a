package compiler

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/backend"
	"github.com/mcpolicy/mcpolicy/source"
)

// AcceptRWHoldsOtherServer is the degradation a server accepts for a
// read-write mount that holds what another server of the policy runs or
// mounts: the grant is the writer's, so the writer accepts it.
const AcceptRWHoldsOtherServer = "rw-holds-other-server"

// used is a host path a server runs or mounts: its program, a script
// among its command words, or a mount source.
type used struct {
	host HostPath
	abs  string     // on this machine, its base resolved
	what string     // "the program", "the script", "the mount source"
	at   source.Pos // the grant that names it
	run  bool       // run, not mounted: pinned when writable
}

// crossServer runs once every server is lowered. A read-write grant of one
// server that holds another's program, a script it is given or one of its
// mount sources lets the first decide what the second runs next, with the
// second's grants (its secrets, its egress): refused unless the writer
// accepts rw-holds-other-server. Every program or script that lies under
// another server's writable grant (an accepted one) is listed in the
// plan's ProgramPins: the client entry pins its digest, and the launcher
// refuses other bytes. Plans whose pins change are hashed again. A
// program under the server's own grant is not pinned: what it writes
// there runs with the grants it already has (and the escape suite's
// payload is exactly that).
func (c *compiler) crossServer(plans []*Plan) {
	uses := make([][]used, len(plans))
	for i, p := range plans {
		if p != nil {
			uses[i] = c.uses(p)
		}
	}
	for a, w := range plans {
		if w == nil || w.Accepts(AcceptRWHoldsOtherServer) {
			continue
		}
		for _, s := range w.sources {
			if s.Mode != ReadWrite {
				continue
			}
			held := c.absSource(s)
			for b, v := range plans {
				if b == a || v == nil {
					continue
				}
				for _, u := range uses[b] {
					if !within(u.abs, held) || c.protectedIn(w, u.abs) {
						continue
					}
					c.fail(s.at, s.field,
						fmt.Sprintf(`grant a narrower folder server %q does not use, or mount its program read-only from a folder no server writes; or accept: [%q] on server %q, a counted grant`, v.Server, AcceptRWHoldsOtherServer, w.Server),
						"read-write mount of %q holds %s of server %q, %s (%s): this server could rewrite it, and %q would %s what it wrote, with its own grants, on its next launch",
						s.written, u.what, v.Server, u.host, u.at, v.Server, map[bool]string{true: "run", false: "be handed"}[u.run])
					break
				}
			}
		}
	}
	for i, p := range plans {
		if p == nil {
			continue
		}
		var pins []HostPath
		seen := map[HostPath]bool{}
		for _, u := range uses[i] {
			if !u.run || seen[u.host] || !c.writable(plans, p, u.abs) {
				continue
			}
			seen[u.host] = true
			pins = append(pins, u.host)
		}
		sort.Slice(pins, func(i, j int) bool { return pins[i].Placeholder() < pins[j].Placeholder() })
		if len(pins) > 0 {
			p.ProgramPins = pins
			p.computeHash()
		}
	}
}

// writable reports whether a read-write grant of a server other than
// self holds abs, past its protected entries.
func (c *compiler) writable(plans []*Plan, self *Plan, abs string) bool {
	for _, w := range plans {
		if w == nil || w == self {
			continue
		}
		for _, s := range w.sources {
			if s.Mode == ReadWrite && within(abs, c.absSource(s)) && !c.protectedIn(w, abs) {
				return true
			}
		}
	}
	return false
}

// protectedIn reports whether abs lies in an entry the launch keeps
// read-only inside the writer's read-write mounts: one the plan names, or
// (fixed top) a protected name at the top of the project.
func (c *compiler) protectedIn(w *Plan, abs string) bool {
	for _, pr := range w.Protected {
		if within(abs, c.absPath(pr.Source)) {
			return true
		}
	}
	for _, s := range w.sources {
		if !s.FixedTop() {
			continue
		}
		top := c.absSource(s)
		if rel, err := filepath.Rel(top, abs); err == nil && rel != "." && within(abs, top) {
			first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			if protectedBy(first, unprotectedSet(w)) != "" {
				return true
			}
		}
	}
	return false
}

func unprotectedSet(p *Plan) map[string]bool {
	set := map[string]bool{}
	for _, u := range p.Unprotected {
		set[u.Name] = true
	}
	return set
}

// uses lists what the server runs and mounts, as host paths. Its program
// is command[0] when it is a path (absolute, or relative to the workdir
// with a folder); a script is another command word with a script's
// extension (scriptExt), absolute or relative to the workdir. Each maps to
// the host through the server's deepest mount holding it; a program under
// no mount is the host's own for host backends (inside the image, else).
func (c *compiler) uses(p *Plan) []used {
	var out []used
	host := false
	for _, b := range p.Backends {
		host = host || !backend.RunsImage(b)
	}
	for i, w := range p.Command {
		what := "the program"
		if i > 0 {
			what = "the script"
		}
		sb := w
		switch {
		case w == "" || strings.HasPrefix(w, "-") || strings.Contains(w, "="):
			continue
		case i > 0 && !scriptExt[path.Ext(w)]:
			continue // an argument, a folder, a data file: not run
		case path.IsAbs(w):
		case p.Workdir != "" && (i > 0 || strings.Contains(w, "/")):
			sb = path.Join(p.Workdir, w)
		default:
			continue
		}
		sb = path.Clean(sb)
		if hp, ok := p.HostPathOf(sb); ok {
			out = append(out, used{host: hp, abs: c.absPath(hp), what: what, at: p.Pos, run: true})
		} else if i == 0 && host && path.IsAbs(w) {
			hp := HostPath{Base: Absolute, Rel: sb}
			out = append(out, used{host: hp, abs: c.absPath(hp), what: what, at: p.Pos, run: true})
		}
	}
	for _, s := range p.sources {
		out = append(out, used{host: s.Source, abs: c.absSource(s), what: "the mount source", at: s.at})
	}
	return out
}

// scriptExt are the extensions of the files an interpreter is given to
// run. A command word with another (a folder, a database) is data the
// server may write itself, not its program.
var scriptExt = map[string]bool{".py": true, ".js": true, ".mjs": true, ".cjs": true, ".ts": true, ".mts": true,
	".sh": true, ".bash": true, ".rb": true, ".pl": true, ".php": true, ".lua": true, ".jar": true, ".wasm": true}

// absSource is a mount source on this machine: resolved when checkSource
// resolved it, else its base resolved and the rest as written.
func (c *compiler) absSource(s *mountSource) string {
	if s.real != "" {
		return s.real
	}
	return c.absPath(s.Source)
}

// absPath is a host path on this machine, its base resolved (NoFS: as
// given).
func (c *compiler) absPath(h HostPath) string {
	var b string
	switch h.Base {
	case ProjectRoot:
		b = c.opt.Root
	case Home:
		b = c.opt.Home
	default:
		return filepath.Clean(filepath.FromSlash(h.Rel))
	}
	if !c.opt.NoFS {
		if r, err := c.base(h.Base); err == nil {
			b = r
		}
	}
	return filepath.Join(b, filepath.FromSlash(h.Rel))
}
