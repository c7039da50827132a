package launch

import (
	"fmt"
	"path"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// rootMasks are the hidden paths' masks in the minimal root (mounts[].hide):
// each pattern is matched while the host's tree is in view, and each match
// gets, after every other mount, a read-only clone of an empty folder or
// file of mode 0000 on a tiny tmpfs of the launcher's: EACCES.
type rootMasks struct {
	mounts []rootMount
}

// openHidden matches the ruleset's hidden patterns (see hiddenMatches:
// no symlink followed, a symlink or a hard-linked file refused) and
// clones a mask for each match.
func openHidden(src *Sources, hidden []artefact.HiddenPath) (*rootMasks, error) {
	r := &rootMasks{}
	var matches []hideMatch
	var at []string
	for _, h := range hidden {
		ms, err := src.hiddenMatches(h.Source, []string{h.Pattern})
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			matches, at = append(matches, m), append(at, path.Join(h.Source, m.rel))
		}
	}
	if len(matches) == 0 {
		return r, nil
	}
	fs, err := newMount("tmpfs", map[string]string{"size": "4k", "nr_inodes": "8", "mode": "0755"}, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, fmt.Errorf("the hidden paths' masks: %w", err)
	}
	defer unix.Close(fs)
	if err := unix.Mkdirat(fs, "d", 0); err != nil {
		return nil, fmt.Errorf("the hidden paths' masks: %w", err)
	}
	f, err := unix.Openat(fs, "f", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the hidden paths' masks: %w", err)
	}
	unix.Close(f)
	for i, m := range matches {
		name := "f"
		if m.dir {
			name = "d"
		}
		tree, err := unix.OpenTree(fs, name, unix.OPEN_TREE_CLONE|unix.O_CLOEXEC)
		if err == nil {
			err = unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &unix.MountAttr{
				Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC})
			if err != nil {
				unix.Close(tree)
			}
		}
		if err != nil {
			r.close()
			return nil, fmt.Errorf("the mask of hidden %s: %w", at[i], err)
		}
		r.mounts = append(r.mounts, rootMount{at: at[i], tree: tree, dir: m.dir, what: "the mask of hidden " + at[i]})
	}
	return r, nil
}

// attach puts every mask into the filled new root, over its match: after
// every other mount, so nothing lands on top of one.
func (r *rootMasks) attach() error {
	if len(r.mounts) == 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Stat(stagingDir, &st); err != nil {
		return err
	}
	for _, m := range r.mounts {
		if err := attach(st.Dev, m); err != nil {
			return err
		}
	}
	return nil
}

// close closes the masks not attached (all of them, after attach: a moved
// mount stays where it was moved).
func (r *rootMasks) close() {
	for _, m := range r.mounts {
		unix.Close(m.tree)
	}
}
