//go:build linux

package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountRootID: the in-container verifier accepts only a mount root
// reached without a symlink — a folder swapped for a link while the engine
// resolved the target, then swapped back, is a plain folder with the right
// inode (the red team's race on a target two levels below a rw mount).
func TestMountRootID(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "gen"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		filepath.Join(dir, "a", "gen"):    "not a mount point",
		filepath.Join(dir, "link", "gen"): "without following symlinks",
	} {
		if _, err := mountRootID(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}
	// The control: a mount root is accepted.
	if _, err := mountRootID("/proc"); err != nil {
		t.Errorf("/proc: %v", err)
	}
}
