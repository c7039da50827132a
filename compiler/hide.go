package compiler

import (
	"fmt"
	"path"
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
