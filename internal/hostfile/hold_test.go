package hostfile

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestHold: a Guard holding its folders (build's many artefacts) refuses
// what one that does not refuses, keeps writing to the folder it checked
// when a server swaps a link in for it, and closes what it held.
func TestHold(t *testing.T) {
	grant, outside, victim := setup(t)
	out := filepath.Join(grant, ".mcpolicy", "docker")
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	before := fds()
	g := NewGuard([]string{grant})
	g.Hold()
	for _, n := range []string{"a.json", "b.json", "a.json"} {
		if err := g.WriteFile(filepath.Join(out, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := g.ReadFile(filepath.Join(out, "b.json")); err != nil || string(b) != "b.json" {
		t.Fatalf("read back: %q, %v", b, err)
	}
	// Several goroutines at once (build writes in parallel), in several
	// folders, some created as they go.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				f := filepath.Join(grant, ".mcpolicy", fmt.Sprint("d", j%3), fmt.Sprint(i, "-", j))
				if err := g.WriteFile(f, []byte(f), 0o644); err != nil {
					t.Error(err)
				} else if b, err := g.ReadFile(f); err != nil || string(b) != f {
					t.Errorf("read back %s: %q, %v", f, b, err)
				}
			}
		})
	}
	wg.Wait()
	// A link planted as the file, in the held folder: refused.
	os.Symlink(victim, filepath.Join(out, "c.json"))
	wantTampered(t, g.WriteFile(filepath.Join(out, "c.json"), []byte("x"), 0o644), "symlink")
	if _, err := g.ReadFile(filepath.Join(out, "c.json")); err == nil {
		t.Error("read through a planted link in a held folder")
	}
	// The held folder renamed away and a link to outside planted in its
	// place: the next file goes to the folder that was checked.
	moved := filepath.Join(grant, "moved")
	if err := os.Rename(out, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, out); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteFile(filepath.Join(out, ".bashrc"), []byte("pwned\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	same(t, filepath.Join(moved, ".bashrc"), "pwned\n")
	same(t, victim, "mine\n")
	g.Release()
	if n := fds(); n != before {
		t.Errorf("%d descriptors open after Release, %d before Hold", n, before)
	}
	// Released: each file walks again, and the link is refused.
	wantTampered(t, g.WriteFile(filepath.Join(out, ".bashrc"), []byte("pwned\n"), 0o644), "symlink")
	same(t, victim, "mine\n")
}
