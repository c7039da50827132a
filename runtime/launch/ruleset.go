package launch

import (
	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// This package imports nothing of mcpolicy's compiler: the small launcher
// (cmd/mcpolicy-launch) links it without CUE, whose package initialisation
// alone costs tens of milliseconds per process.

// resolveRuleset expands a committed ruleset's placeholders
// (artefact.Ruleset.Expand) and the invoking user it names.
func resolveRuleset(rs *artefact.Ruleset, projectRoot, home string) error {
	u, err := invokerUser(rs.Server, rs.User)
	if err != nil {
		return err
	}
	rs.User = u
	return rs.Expand(projectRoot, home)
}

// checkSources opens every granted path below its base without following
// a symlink (see Sources): a grant swapped for a link since the ruleset was
// reviewed is refused. Landlock then opens the same paths itself; rules
// cannot nest on this backend, so no server can write beside a source.
func checkSources(rs *artefact.Ruleset, root, home string) error {
	src := NewSources(root, home)
	for _, p := range rs.Baseline {
		// A runtime pack's path below the home: skipped when missing.
		if base, _ := src.split(p); base != "/" {
			fd, err := src.Open(p)
			if err != nil && !IsMissingSource(err) {
				return err
			}
			if err == nil {
				closeFD(fd)
			}
		}
	}
	for _, list := range [][]string{rs.ReadOnly, rs.ReadWrite} {
		for _, p := range list {
			fd, err := src.Open(p)
			if err != nil {
				return err
			}
			closeFD(fd)
		}
	}
	return nil
}
