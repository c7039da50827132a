package why

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// realPath follows symlinks on this machine: the deepest existing
// ancestor is resolved, the rest joined on.
func (m Machine) realPath(p string) (string, []string) {
	p = filepath.Clean(p)
	if !m.FS {
		return p, nil
	}
	var notes []string
	rest := ""
	cur := p
	for {
		if _, err := os.Lstat(cur); err == nil {
			break
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
	r, err := filepath.EvalSymlinks(cur)
	if err != nil {
		return p, nil
	}
	real := filepath.Join(r, rest)
	if rest != "" {
		notes = append(notes, fmt.Sprintf("%s does not exist on this machine: answered for the path as written (if created, it would be reached the same way)", m.show(p)))
	}
	if r != cur && !m.sameBase(cur, r) {
		notes = append(notes, fmt.Sprintf("%s is reached through a symlink on this machine: answered for the real path %s", m.show(p), m.show(real)))
	}
	return real, notes
}

// sameBase: a path whose only symlink is the project root's or the home's
// own (allowed: they may be reached through symlinks) needs no note.
func (m Machine) sameBase(p, real string) bool {
	for _, b := range []string{m.ProjectRoot, m.Home} {
		if b == "" || !within(p, b) {
			continue
		}
		if rb, err := filepath.EvalSymlinks(b); err == nil && filepath.Join(rb, rel(p, b)) == real {
			return true
		}
	}
	return false
}

// source is a mount source's real host path on this machine.
func (m Machine) source(hp compiler.HostPath) string {
	s := m.Machine.Resolve(hp)
	if m.FS {
		if r, err := filepath.EvalSymlinks(s); err == nil {
			return r
		}
		// The project root or home may be a symlink even when the source
		// below it does not exist.
		for _, b := range []string{m.ProjectRoot, m.Home} {
			if b != "" && within(s, b) {
				if rb, err := filepath.EvalSymlinks(b); err == nil {
					return filepath.Join(rb, rel(s, b))
				}
			}
		}
	}
	return s
}

// show writes a host path with ${PROJECT_ROOT} and ${HOME}, so answers are
// the same on every machine.
func (m Machine) show(p string) string {
	type base struct{ dir, name string }
	var bs []base
	for _, b := range []base{{m.ProjectRoot, "${PROJECT_ROOT}"}, {m.Home, "${HOME}"}} {
		if b.dir == "" {
			continue
		}
		bs = append(bs, b)
		if m.FS {
			if r, err := filepath.EvalSymlinks(b.dir); err == nil && r != b.dir {
				bs = append(bs, base{r, b.name})
			}
		}
	}
	// The deepest base first: a project inside the home is the project.
	sort.SliceStable(bs, func(i, j int) bool { return len(bs[i].dir) > len(bs[j].dir) })
	for _, b := range bs {
		if within(p, b.dir) {
			if r := rel(p, b.dir); r != "." {
				return b.name + "/" + r
			}
			return b.name
		}
	}
	return p
}

// pos is a position with its file relative to the project root.
func (m Machine) pos(p position.Pos) position.Pos {
	if filepath.IsAbs(p.File) && m.ProjectRoot != "" {
		if r, err := filepath.Rel(m.ProjectRoot, p.File); err == nil && !strings.HasPrefix(r, "..") {
			p.File = filepath.ToSlash(r)
		}
	}
	return p
}

func orPos(p, fallback position.Pos) position.Pos {
	if p == (position.Pos{}) {
		return fallback
	}
	return p
}
