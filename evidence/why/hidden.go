package why

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
)

// StopHidden: a mount's hide entry masks the path (mounts[].hide).
const StopHidden = "hidden"

// hidden overrides a verdict (byPath: the backend denies by path rules,
// as a profile does, rather than masking) on a path a mount hides: the mask (an empty
// folder or file of mode 0000, read-only) sits on it, whatever the layers
// below would give. For a host path, only when every mount that shows it
// hides it; for a sandbox path, when the deepest mount holding it does.
func hidden(p *compiler.Plan, m Machine, t Target, real string, v *Verdict, byPath bool) {
	var by *compiler.Mount
	var pattern string
	switch t.Kind {
	case HostPath:
		shown := 0
		for i, mt := range p.Mounts {
			src := m.source(mt.Source)
			if src == "" || !within(real, src) {
				continue
			}
			shown++
			r := rel(real, src)
			if h, ok := mt.Hides(r); ok && r != "." {
				if by == nil {
					by, pattern = &p.Mounts[i], h
				}
				continue
			}
			return // this mount shows it
		}
		if shown == 0 {
			return
		}
	case SandboxPath:
		best := -1
		for i, mt := range p.Mounts {
			if within(t.Path, mt.Target) && (best < 0 || len(mt.Target) > len(p.Mounts[best].Target)) {
				best = i
			}
		}
		if best < 0 || t.Path == p.Mounts[best].Target {
			return
		}
		h, ok := p.Mounts[best].Hides(rel(t.Path, p.Mounts[best].Target))
		if !ok {
			return
		}
		by, pattern = &p.Mounts[best], h
	default:
		return
	}
	pos := m.pos(by.Pos)
	for i, h := range by.Hide {
		if h == pattern && i < len(by.HidePos) {
			pos = m.pos(by.HidePos[i])
		}
	}
	errno := "EACCES: the entry is there, masked by an empty read-only folder or file of mode 0000, applied at spawn after every other mount"
	if byPath { // a profile of path rules: the deepest decides

		errno = "EPERM: the profile denies it by path, reads and writes, after every grant"
	}
	v.Access, v.At, v.Via = []Access{}, nil, nil
	var keep []Stop
	for _, s := range v.Stops {
		if s.Rule == StopRefused {
			keep = append(keep, s)
		}
	}
	v.Stops = append(keep, Stop{Rule: StopHidden, Pos: pos,
		Detail: fmt.Sprintf("hidden by the hide entry %q of the mount %s -> %s: %s", pattern, by.Source, by.Target, errno)})
	v.Reachable = false
}
