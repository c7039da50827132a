package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inTime runs f, failing the test when it does not return in time (the
// goroutine is left behind: the failure is the point).
func inTime(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("did not return within %v (it loops)", d)
	}
}

// TestCommonDirStops: relative paths with nothing in common but "." used
// to loop forever (filepath.Dir(".") is "."): two ordinary symlinks in the
// linter's folder, reached through a ${workspaceFolder} read as ".".
func TestCommonDirStops(t *testing.T) {
	for _, c := range []struct {
		paths []string
		want  string
	}{
		{[]string{"a/x", "b/y"}, "."},
		{[]string{"x", "y"}, "."},
		{[]string{"/s/a/x", "/s/b/y"}, "/s"},
		{[]string{"/a/x", "/b/y"}, "/"},
		{[]string{"/s/a/x"}, "/s/a"},
	} {
		var got string
		inTime(t, 2*time.Second, func() { got = commonDir(c.paths) })
		if got != c.want {
			t.Errorf("commonDir(%q) = %q, want %q", c.paths, got, c.want)
		}
	}
}

// TestWalkBounds: a walk stops at its depth and entry bounds, skips the
// system trees and folders that hold homes, and walks a folder once a run.
func TestWalkBounds(t *testing.T) {
	dir := t.TempDir()
	deep := dir
	for i := 0; i < walkDepth+3; i++ {
		deep = filepath.Join(deep, fmt.Sprintf("d%d", i))
	}
	os.MkdirAll(deep, 0o755)
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(deep, "too-deep")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "d0", "shallow")); err != nil {
		t.Fatal(err)
	}
	c := newFSCache()
	w := c.symlinks(dir)
	var rels []string
	for _, l := range w.links {
		rels = append(rels, l.rel)
	}
	if len(rels) != 1 || rels[0] != "d0/shallow" {
		t.Errorf("links %q: want only d0/shallow (the other is deeper than %d)", rels, walkDepth)
	}

	// Entries: a folder wider than the bound is cut short, and says so.
	defer func(n int) { walkEntries = n }(walkEntries)
	walkEntries = 100
	wide := t.TempDir()
	for i := 0; i < walkEntries+10; i++ {
		os.WriteFile(filepath.Join(wide, fmt.Sprintf("f%05d", i)), nil, 0o644)
	}
	if w := newFSCache().symlinks(wide); !w.partial {
		t.Errorf("a walk of %d entries is not partial", walkEntries+10)
	}

	// Cached: the second look does not walk again.
	os.Remove(filepath.Join(dir, "d0", "shallow"))
	if w2 := c.symlinks(dir); len(w2.links) != 1 {
		t.Errorf("second walk of the same folder in a run: %d links, want the cached 1", len(w2.links))
	}

	// Not walked: system trees, /, a folder holding homes.
	for _, p := range []string{"/usr", "/usr/lib", "/etc", "/proc", "/", "/home", "/Users"} {
		if !systemTree(p) {
			t.Errorf("%s is walked", p)
		}
		start := time.Now()
		if w := newFSCache().symlinks(p); len(w.links) > 0 || time.Since(start) > 500*time.Millisecond {
			t.Errorf("%s: walked (%d links, %v)", p, len(w.links), time.Since(start))
		}
	}
	for _, p := range []string{dir, "/home/me/src", "/srv/data", "/usr-local-copy"} {
		if systemTree(p) {
			t.Errorf("%s is taken for a system tree", p)
		}
	}
}

// TestRunWalkBudget: the walks of one run share a time budget.
func TestRunWalkBudget(t *testing.T) {
	c := newFSCache()
	c.spent = runWalkTime
	dir := t.TempDir()
	os.Symlink(t.TempDir(), filepath.Join(dir, "l"))
	if w := c.symlinks(dir); !w.partial || len(w.links) != 0 {
		t.Errorf("a walk after the run's budget: %+v", w)
	}
	if w := c.nestedNames(dir); !w.partial || w.entries != 0 {
		t.Errorf("a nested-names walk after the run's budget: %+v", w)
	}
}

// TestWalkLinkBudget: a walk that finds more symlinks than it keeps stops,
// partial; one that finds as many as it keeps is whole. The walk's time
// bound is lifted: on a busy machine a thousand links can take longer than
// it, and this test is about the count.
func TestWalkLinkBudget(t *testing.T) {
	defer func(d time.Duration) { walkTime = d }(walkTime)
	walkTime = time.Minute
	for _, c := range []struct {
		n       int
		partial bool
	}{{maxLinks, false}, {maxLinks + 1, true}} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "target"), nil, 0o644)
		for i := 0; i < c.n; i++ {
			if err := os.Symlink("target", filepath.Join(dir, fmt.Sprintf("l%04d", i))); err != nil {
				t.Fatal(err)
			}
		}
		w := newFSCache().symlinks(dir)
		if w.partial != c.partial || len(w.links) != maxLinks {
			t.Errorf("%d symlinks: %d kept, partial %v; want %d, partial %v", c.n, len(w.links), w.partial, maxLinks, c.partial)
		}
	}
}

// TestNestedNamesWalk: the walk for nested protected names does not enter
// node_modules, counts what it looked at, stops past maxNested, and is
// walked once a run.
func TestNestedNamesWalk(t *testing.T) {
	defer func(n int) { walkEntries = n }(walkEntries)
	walkEntries = 100
	dir := t.TempDir()
	for i := 0; i < 200; i++ {
		p := filepath.Join(dir, "node_modules", "big", fmt.Sprintf("f%03d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "node_modules", "dep", ".git"), 0o755)
	os.MkdirAll(filepath.Join(dir, "vendor", "lib", ".git"), 0o755)
	c := newFSCache()
	w := c.nestedNames(dir)
	if w.partial || len(w.names) != 1 || w.names[0] != "vendor/lib/.git" || w.entries == 0 || w.entries > 10 {
		t.Errorf("nested names %+v: want vendor/lib/.git alone, node_modules not entered", w)
	}
	os.RemoveAll(filepath.Join(dir, "vendor"))
	if w2 := c.nestedNames(dir); len(w2.names) != 1 {
		t.Errorf("second walk of the same folder in a run: %+v, want the cached one", w2)
	}

	walkEntries = 1000
	many := t.TempDir()
	for i := 0; i <= maxNested; i++ {
		os.MkdirAll(filepath.Join(many, fmt.Sprintf("s%03d", i), ".git"), 0o755)
	}
	if w := newFSCache().nestedNames(many); !w.partial || len(w.names) != maxNested {
		t.Errorf("%d nested names: %d kept, partial %v; want %d, partial", maxNested+1, len(w.names), w.partial, maxNested)
	}
}

// TestReadHostPath: homes, roots and credential stores of every platform,
// as written, whatever machine reads them.
func TestReadHostPath(t *testing.T) {
	for _, c := range []struct {
		in, home, sub string
		root, holds   bool
		stores        string
	}{
		{in: "/Users/alice", home: "/Users/alice", sub: ".", stores: "all"},
		{in: "/Users/alice/.aws/credentials", home: "/Users/alice", sub: ".aws/credentials", stores: "~/.aws"},
		{in: "/home/bob/.config", home: "/home/bob", sub: ".config", stores: "~/.config/gcloud,~/.config/gh,~/.config/mcpolicy,~/.config/google-chrome,~/.config/chromium,~/.config/op"},
		{in: `C:\Users\carol\.ssh`, home: "C:/Users/carol", sub: ".ssh", stores: "~/.ssh"},
		{in: "c:/users/Dave/.claude/settings.json", home: "C:/users/Dave", sub: ".claude/settings.json", stores: "~/.claude"},
		{in: "/mnt/c/Users/eve/src", home: "/mnt/c/Users/eve", sub: "src"},
		{in: "/root/.kube", home: "/root", sub: ".kube", stores: "~/.kube"},
		{in: "~", home: "~", sub: ".", stores: "all"},
		{in: "~/.docker", home: "~", sub: ".docker", stores: "~/.docker/config.json"},
		{in: "$HOME/Library/Keychains/login.keychain-db", home: "~", sub: "Library/Keychains/login.keychain-db", stores: "~/Library/Keychains"},
		{in: "${HOME}/.netrc", home: "~", sub: ".netrc", stores: "~/.netrc"},
		{in: "${userHome}/src", home: "~", sub: "src"},
		{in: `%USERPROFILE%\.git-credentials`, home: "~", sub: ".git-credentials", stores: "~/.git-credentials"},
		{in: "~bob/.gnupg", home: "~bob", sub: ".gnupg", stores: "~/.gnupg"},
		{in: "~/../frank", home: "~/../frank", sub: ".", stores: "all"},
		{in: "~/..", holds: true, stores: "all"},
		{in: "/", root: true, holds: true, stores: "all"},
		{in: `C:\`, root: true, holds: true, stores: "all"},
		{in: "C:/", root: true, holds: true, stores: "all"},
		{in: "d:", root: true, holds: true, stores: "all"},
		{in: "/mnt/c", root: true, holds: true, stores: "all"},
		{in: "/home", holds: true, stores: "all"},
		{in: "/Users", holds: true, stores: "all"},
		{in: `C:\Users`, holds: true, stores: "all"},
		{in: "/Users/Shared/x"},
		{in: `C:\Users\Public`},
		{in: "/srv/app"},
		{in: "${workspaceFolder}/.aws"},
		{in: "relative/.ssh"},
		{in: "/opt/home/x"},
	} {
		f := ReadHostPath(c.in)
		stores := strings.Join(f.Stores(), ",")
		if c.stores == "all" {
			c.stores = "~/" + strings.Join(CredentialStores, ",~/")
		}
		if f.Home != c.home || f.Home != "" && f.Sub != c.sub || f.Root != c.root || f.HoldsHomes != c.holds || stores != c.stores {
			t.Errorf("%s: %+v stores %q; want home %q sub %q root %v holds %v stores %q", c.in, f, stores, c.home, c.sub, c.root, c.holds, c.stores)
		}
	}
	// A home the machine is known to have, whatever its form.
	if f := ReadHostPath("/data/users/me/.ssh", "/data/users/me"); f.Home != "/data/users/me" || f.Sub != ".ssh" {
		t.Errorf("a known home: %+v", f)
	}
	if f := ReadHostPath("/data", "/data/users/me"); !f.HoldsHomes {
		t.Errorf("a parent of a known home: %+v", f)
	}
}
