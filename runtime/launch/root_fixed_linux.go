package launch

import (
	"fmt"
	"path"
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/protect"
	"golang.org/x/sys/unix"
)

// The minimal root's fixed top level and protected paths (issue #42), as
// bwrap's (fixedTop) and the engines' (engineFixedTop) launchers make
// them: a read-write project root is bound read-only, and each entry
// present at launch bound again on top, read-write unless it is a
// protected name the policy does not unprotect; so no name can be created
// at the top (EROFS), and none removed, renamed or swapped (EBUSY).
// Landlock's rule on the project root stays read-write: its rights are per
// hierarchy and cover the entries; the read-only mounts are what refuse.

// openFixedTop clones the project root read-only and each of its
// top-level entries, opened without following a symlink (Sources.topLevel).
// An entry a ruleset's own grant takes (explicit) is left to that grant,
// unless it is protected: then it is bound read-only over it.
func (r *newRoot) openFixedTop(src *Sources, root string, unprotected []string, explicit map[string]bool) error {
	if root == "" {
		return nil
	}
	m, err := grantMount(src, root, true)
	if err != nil {
		return err
	}
	m.what = "the project's fixed top level " + root
	r.mounts = append(r.mounts, *m)
	r.sum.ro++
	kids, err := src.topLevel(root, unprotected)
	if err != nil {
		return err
	}
	defer closeChildren(kids)
	for _, k := range kids {
		at := path.Join(m.at, k.name)
		ro := protect.Except(k.name, unprotected) != ""
		if explicit[at] && !ro {
			continue
		}
		attrs := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
		what := "read-write entry " + at
		if ro {
			attrs |= unix.MOUNT_ATTR_RDONLY
			what = "protected entry " + at
		}
		tree, err := cloneTree(k.fd, attrs)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		r.mounts = append(r.mounts, rootMount{at: at, tree: tree, dir: k.dir, what: what})
		if ro {
			r.sum.ro++
		} else {
			r.sum.rw++
		}
	}
	return nil
}

// openProtected clones each protected path of the other read-write grants
// read-only, to be bound over itself after the grant that holds it (fill
// attaches deeper paths later). One that is gone is skipped: there is
// nothing to protect; one that is a symlink is refused (Sources.Open).
func (r *newRoot) openProtected(src *Sources, paths []string) error {
	for _, p := range paths {
		m, err := grantMount(src, p, true)
		if err != nil {
			if IsMissingSource(err) {
				continue
			}
			return err
		}
		m.what = "protected path " + p
		r.mounts = append(r.mounts, *m)
		r.sum.ro++
	}
	return nil
}

// explicitGrants are the ruleset's grants but its fixed top level, clean.
func explicitGrants(rs *artefact.Ruleset) map[string]bool {
	out := map[string]bool{}
	for _, g := range append(append([]string{}, rs.ReadOnly...), rs.ReadWrite...) {
		if g = filepath.Clean(g); g != filepath.Clean(rs.FixedTop) {
			out[g] = true
		}
	}
	return out
}
