package lint

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/parallel"
)

// The rules that look at files (SYMLINK_ESCAPE, RW_NESTED_PROTECTED,
// RW_CODE_CACHE, SECRETS_WITH_EGRESS) walk a granted folder only when the target is on
// this machine (onMachine), and every walk is bounded: in depth, in
// entries, in time, and in time for the whole run; it does not enter
// system trees, nor a folder that holds the homes or the filesystem; and
// each folder is walked once per run for each of them (symlinks, nested
// protected names, code caches, secrets), whatever number of entries grant it: each has
// its own walk, so what one of them finds in plenty (node_modules' links)
// cannot spend the others' bounds. WalkDir does not follow symlinks, so a
// walk cannot loop.
const (
	walkDepth = 12   // folders below the granted one
	maxLinks  = 1000 // symlinks kept from one walk
	maxNested = 100  // nested protected names kept from one walk
)

var (
	walkEntries = 20000                  // entries looked at in one walk (a test lowers it)
	walkTime    = 250 * time.Millisecond // one walk (a test on a busy machine raises it)
	runWalkTime = 2 * time.Second        // every walk of one Run (as walkTime)
)

// systemTrees are the operating system's folders: a sandbox grants them
// read-only to every server (bwrap --ro-bind /usr /usr), their symlinks
// point at one another, and no project's secret lives there.
var systemTrees = []string{"/usr", "/etc", "/proc", "/sys", "/dev", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
	"/libx32", "/boot", "/run", "/snap", "/nix", "/var/lib", "/var/cache", "/var/log", "/var/run",
	"/System", "/Library", "/Applications", "/private/etc", "/private/var/db", "/cores"}

// systemTree reports whether p is or lies in a system tree, the
// filesystem's root, or a folder that holds the homes.
func systemTree(p string) bool {
	for _, s := range systemTrees {
		if within(p, s) && (s != "/" || p == "/") {
			return true
		}
	}
	f := ReadHostPath(filepath.ToSlash(p))
	return f.Root || f.HoldsHomes
}

// fsCache holds one Run's walks, by folder. Run lints targets in
// parallel: each folder is still walked once (the first to ask walks it,
// the others wait for its result), and the run's time budget is shared.
type fsCache struct {
	links  parallel.Memo[linkWalk]   // symlinks, by folder
	nested parallel.Memo[nestedWalk] // nested protected names, by folder
	caches parallel.Memo[cacheWalk]  // code caches and Python sources, by folder
	found  parallel.Memo[[]string]   // secret files, by folder
	real   parallel.Memo[resolved]   // EvalSymlinks, by path

	mu    sync.Mutex
	spent time.Duration // walking, over the run
}

type resolved struct {
	path string
	err  error
}

func newFSCache() *fsCache { return &fsCache{} }

// evalSymlinks is filepath.EvalSymlinks, once per path in a run: every
// target of a policy resolves the same project root and home, and many
// the same mounts (500 servers: a thousand resolutions of two paths). A
// nil cache (a rule called outside Run) resolves every time.
func (c *fsCache) evalSymlinks(p string) (string, error) {
	if c == nil {
		return filepath.EvalSymlinks(p)
	}
	r := c.real.Get(p, func() resolved {
		real, err := filepath.EvalSymlinks(p)
		return resolved{real, err}
	})
	return r.path, r.err
}

// link is a symlink found in a walk: its path relative to the walked
// folder, its text (os.Readlink), and what it resolves to on the host.
type link struct{ rel, text, real string }

type linkWalk struct {
	links   []link
	partial bool // a bound stopped the walk (maxLinks among them)
}

// nestedWalk is what the walk for nested protected names found below a
// folder.
type nestedWalk struct {
	// names are the protected names below the folder's top (src/.git,
	// app/.vscode, app/.vscode/.env), relative: the launch keeps only a
	// read-write mount's top level read-only.
	names   []string
	entries int  // entries looked at
	partial bool // a bound stopped the walk (maxNested among them)
}

// walk calls visit for each entry below dir (dir itself excluded), folders
// included (before it decides to enter them), not entering .git, folders
// named in skip, and system trees, within the bounds; it reports whether a
// bound stopped it. visit returns false to stop.
func (c *fsCache) walk(dir string, depth int, skip map[string]bool, visit func(p string, d fs.DirEntry) bool) (partial bool) {
	start := time.Now()
	c.mu.Lock()
	spent := c.spent
	c.mu.Unlock()
	if spent >= runWalkTime {
		return true
	}
	defer func() {
		c.mu.Lock()
		c.spent += time.Since(start)
		c.mu.Unlock()
	}()
	deadline := start.Add(min(walkTime, runWalkTime-spent))
	entries := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if p == dir {
			return err
		}
		if err != nil {
			return nil // an unreadable folder: its entries are not looked at
		}
		entries++
		if entries > walkEntries || entries%256 == 0 && time.Now().After(deadline) {
			partial = true
			return filepath.SkipAll
		}
		if !visit(p, d) {
			return filepath.SkipAll
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			if d.Name() == ".git" || skip[d.Name()] || strings.Count(rel, string(filepath.Separator)) >= depth || systemTree(p) {
				return filepath.SkipDir
			}
			return nil
		}
		return nil
	})
	return partial
}

// symlinks lists the symlinks below a folder of this machine, walking it once
// per run. Past maxLinks the walk stops, partial.
func (c *fsCache) symlinks(dir string) linkWalk {
	if c == nil { // a check called outside Run
		c = newFSCache()
	}
	return c.links.Get(dir, func() linkWalk { return c.walkSymlinks(dir) })
}

func (c *fsCache) walkSymlinks(dir string) linkWalk {
	var w linkWalk
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() && !systemTree(dir) {
		full := false
		partial := c.walk(dir, walkDepth, nil, func(p string, d fs.DirEntry) bool {
			if d.Type()&fs.ModeSymlink == 0 {
				return true
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil || !filepath.IsAbs(real) {
				return true
			}
			if len(w.links) == maxLinks { // one more than it keeps: the rest are unseen
				full = true
				return false
			}
			text, err := os.Readlink(p)
			if err != nil {
				return true
			}
			rel, _ := filepath.Rel(dir, p)
			w.links = append(w.links, link{filepath.ToSlash(rel), text, real})
			return true
		})
		w.partial = partial || full
	}
	return w
}

// nestedNames lists the protected names below the top of a folder of this
// machine (nestedProtected), walking it once per run on a walk of its own
// that does not enter node_modules (a package manager's tree, which would
// spend its bounds first: it sorts before src and vendor). Past maxNested
// the walk stops, partial.
func (c *fsCache) nestedNames(dir string) nestedWalk {
	if c == nil {
		c = newFSCache()
	}
	return c.nested.Get(dir, func() nestedWalk { return c.walkNested(dir) })
}

func (c *fsCache) walkNested(dir string) nestedWalk {
	var w nestedWalk
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() && !systemTree(dir) {
		full := false
		partial := c.walk(dir, walkDepth, map[string]bool{"node_modules": true}, func(p string, d fs.DirEntry) bool {
			w.entries++
			rel, _ := filepath.Rel(dir, p)
			if !nestedProtected(filepath.ToSlash(rel)) {
				return true
			}
			if len(w.names) == maxNested {
				full = true
				return false
			}
			w.names = append(w.names, filepath.ToSlash(rel))
			return true
		})
		w.partial = partial || full
	}
	return w
}

// secrets lists secret-looking files (.env*, *.pem, *.key, id_* but not
// .pub), relative, at most five, four folders deep, below a granted folder
// of this machine: nil for a target that is not on this machine.
func (c *fsCache) secrets(t *readback.Target, host string) []string {
	dir, ok := onMachine(t, host)
	if !ok {
		return nil
	}
	if c == nil {
		c = newFSCache()
	}
	return c.found.Get(dir, func() []string { return c.walkSecrets(dir) })
}

func (c *fsCache) walkSecrets(dir string) []string {
	var found []string
	fi, err := os.Stat(dir)
	switch {
	case err != nil || systemTree(dir):
	case !fi.IsDir(): // a file granted on its own
		if secretName(fi.Name()) {
			found = []string{fi.Name()}
		}
	default:
		c.walk(dir, 4, map[string]bool{"node_modules": true}, func(p string, d fs.DirEntry) bool {
			if !d.IsDir() && secretName(d.Name()) {
				rel, _ := filepath.Rel(dir, p)
				found = append(found, filepath.ToSlash(rel))
			}
			return len(found) < 5
		})
	}
	return found
}

func secretName(n string) bool {
	return strings.HasPrefix(n, ".env") || strings.HasSuffix(n, ".pem") || strings.HasSuffix(n, ".key") ||
		(strings.HasPrefix(n, "id_") && !strings.HasSuffix(n, ".pub"))
}
