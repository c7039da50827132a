package lint

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// cacheRule lives here, with the walk that finds what the host's
// interpreters and build tools run from below a mount's top.
func cacheRule() *Rule {
	return &Rule{
		ID: "RW_CODE_CACHE", Name: "rw-code-cache", Severity: Error,
		Purpose:     "A read-write mount holds, below its top, an interpreter cache or environment (__pycache__, .venv, venv, node_modules, .tox, site-packages...), a build output (target, build, dist), or Python sources beside which a server can plant bytecode: code the host runs next, which git ignores.",
		Rationale:   "A server wrote pkg/__pycache__/util.cpython-311.pyc with a header copied from the committed pkg/util.py's mtime and size, and a .pth file in a venv's site-packages: the user's next python3 main.py, pip or pytest ran them outside the sandbox, and git status stayed clean (both are git-ignored). At the top of a read-write mount these names are protected (read-only, and the project root's fixed top level refuses creating them); below the top, no mount can refuse a name that does not exist yet, so a pkg/__pycache__ the server creates beside pkg/util.py is run by the next import. Lint is where that is stopped before launch. Lint's scan is bounded: when it stops before finding any, the finding says so.",
		Remediation: "Grant data folders only (a read-write mount of the folder the server writes, the project read-only), or mount the code read-only inside the read-write grant (source pkg, mode ro). When the server's work is the code and its caches (a build server in a throwaway checkout), waive the finding with the reason.",
		Bad:         withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \".\", target: \"/w\", mode: \"rw\"}]"), "main.py", "import pkg.util", "pkg/util.py", "x = 1"),
		Good:        withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \".\", target: \"/w\"}, {source: \"data\", target: \"/w/data\", mode: \"rw\"}]"), "main.py", "import pkg.util", "pkg/util.py", "x = 1", "data/in.csv", "a,b"),
		check:       checkRWCaches,
	}
}

// cacheDirs are the folders the host's interpreters and build tools run
// code from without it being in git: found below a mount's top, each is
// reported as a whole, and not entered.
var cacheDirs = map[string]bool{
	"__pycache__": true, ".venv": true, "venv": true, ".direnv": true, ".tox": true, ".nox": true,
	"__pypackages__": true, "site-packages": true, "dist-packages": true, "node_modules": true,
	"target": true, "build": true, "dist": true,
}

// maxCaches bounds what one walk keeps of each kind (caches, sources).
const maxCaches = 100

// cacheWalk is what the walk for code caches found below a folder,
// relative, slash-separated.
type cacheWalk struct {
	caches  []string // cacheDirs below the top, and folders holding a pyvenv.cfg; the outermost
	sources []string // Python sources below the top
	topPy   string   // a Python source at the top, if any
	entries int
	partial bool // a bound stopped the walk (maxCaches among them)
}

// codeCaches walks a folder of this machine once per run, on a walk of
// its own.
func (c *fsCache) codeCaches(dir string) cacheWalk {
	if c == nil {
		c = newFSCache()
	}
	return c.caches.Get(dir, func() cacheWalk { return c.walkCaches(dir) })
}

func (c *fsCache) walkCaches(dir string) cacheWalk {
	var w cacheWalk
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || systemTree(dir) {
		return w
	}
	full := false
	partial := c.walk(dir, walkDepth, cacheDirs, func(p string, d fs.DirEntry) bool {
		w.entries++
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		below := strings.Contains(rel, "/")
		var found *[]string
		switch {
		case d.IsDir() && cacheDirs[d.Name()] && below:
			found = &w.caches
		case !d.IsDir() && d.Name() == "pyvenv.cfg" && below: // a venv under any name
			found, rel = &w.caches, path.Dir(rel)
		case !d.IsDir() && strings.HasSuffix(d.Name(), ".py") && below:
			found = &w.sources
		case !d.IsDir() && strings.HasSuffix(d.Name(), ".py") && w.topPy == "":
			w.topPy = rel
		}
		if found == nil {
			return true
		}
		if len(*found) == maxCaches {
			full = true
			return len(w.caches) < maxCaches || len(w.sources) < maxCaches
		}
		*found = append(*found, rel)
		return true
	})
	w.caches = outermost(w.caches)
	w.partial = partial || full
	return w
}

// outermost drops the paths below another of the list (a venv's
// site-packages, found before its pyvenv.cfg).
func outermost(paths []string) []string {
	var out []string
	for _, p := range paths {
		inside := false
		for _, q := range paths {
			if q != p && strings.HasPrefix(p, q+"/") {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, p)
		}
	}
	return out
}

// checkRWCaches reports, for each read-write mount of this machine, the
// code caches and Python sources its walk found below its top (and a
// Python source at its top whose __pycache__ the server can create or
// write), but those inside another mount (a read-only one covers them; a
// read-write one is judged on its own) and those a protected name above
// them covers.
func checkRWCaches(t *readback.Target, o Options, report reportFn) {
	if t.Plan == nil {
		return
	}
	unprotected := t.Plan.UnprotectedNames()
	ms := mounts(t)
	for _, m := range ms {
		if m.Mode != compiler.ReadWrite {
			continue
		}
		dir, ok := onMachine(t, m.Host)
		if !ok {
			continue
		}
		w := o.fs.codeCaches(dir)
		open := func(rels []string) []string {
			var out []string
		next:
			for _, rel := range rels {
				if coveredAbove(rel, unprotected) {
					continue
				}
				if insideAnother(ms, m.Host, dir, rel) {
					continue next
				}
				out = append(out, rel)
			}
			sort.Strings(out)
			return out
		}
		caches, sources := open(w.caches), open(w.sources)
		// The top's __pycache__ is protected: read-only when it exists, not
		// creatable where the launcher fixes the top level; elsewhere (a
		// read-write subfolder) an absent one can be created.
		fixed := t.FixedTop && (m.FixedTop() || t.ProjectRoot != "" && m.Host == filepath.Clean(t.ProjectRoot))
		if w.topPy != "" && len(open([]string{w.topPy})) == 1 {
			_, err := os.Lstat(filepath.Join(dir, "__pycache__"))
			if protect.Except("__pycache__", unprotected) == "" || !fixed && err != nil {
				sources = append([]string{w.topPy}, sources...)
			}
		}
		var parts []string
		if len(caches) > 0 {
			parts = append(parts, "interpreter caches, environments or build outputs: "+examples(caches))
		}
		if len(sources) > 0 {
			parts = append(parts, "Python sources whose __pycache__ the server can create or write (the next import runs it): "+examples(sources))
		}
		switch {
		case len(parts) > 0:
			msg := strings.Join(parts, "; ")
			if w.partial {
				msg += " (the scan stopped at its bound: there may be more)"
			}
			report(m.Pos, "read-write mount %s holds code the host runs and git does not show, writable there: %s", m.Target, msg)
		case w.partial: // nothing seen is not nothing there
			report(m.Pos, "read-write mount %s: %s, so interpreter caches, environments or Python sources below its top may be writable there unseen",
				m.Target, strings.Replace(stoppedScan(w.entries), "node_modules not entered", "caches not entered", 1))
		}
	}
}

// examples names up to three paths, and how many more there are.
func examples(paths []string) string {
	s := strings.Join(paths[:min(len(paths), 3)], ", ")
	if len(paths) > 3 {
		s += fmt.Sprintf(" and %d more", len(paths)-3)
	}
	return s
}
