package lint

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// nestedRule lives here, with the walk's reading of names below a mount's
// top; Registry sorts rules by ID, wherever they are declared.
func nestedRule() *Rule {
	return &Rule{
		ID: "RW_NESTED_PROTECTED", Name: "rw-nested-protected", Severity: Error,
		Purpose:     "A read-write mount holds a protected name below its top (a nested repository's .git, a sub-project's .vscode, .envrc or .mcp.json): only the mount's top level is kept read-only, so the server can rewrite it.",
		Rationale:   "Every backend keeps the protected names at the top of a read-write mount read-only; below the top, no Linux mechanism an unprivileged launcher has can refuse a name, so a nested repository stays writable: the server sets core.fsmonitor or a hook in vendor/lib/.git/config, and the next git command run inside vendor/lib — a shell prompt's git status, an editor opening a file there — runs it outside the sandbox. The same holds for a name the server creates below the top (src/.git): lint cannot see those before they exist, and backends.md lists them as not stopped. Lint's scan of a mount is bounded (entries, depth, time; node_modules is not entered): when it stops before finding any, the finding says so, since names past the bound may be writable unseen.",
		Remediation: "Mount the folders the server writes rather than the project around them, or add a read-only mount of the nested folder (source vendor/lib, mode ro) inside the read-write one. When the nested repository is the server's own work (a clone it made), waive the finding with the reason.",
		Bad:         withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \".\", target: \"/w\", mode: \"rw\"}]"), "vendor/lib/.git/config", "[core]"),
		Good:        withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \".\", target: \"/w\", mode: \"rw\"}, {source: \"vendor/lib\", target: \"/w/vendor/lib\"}]"), "vendor/lib/.git/config", "[core]"),
		check:       checkRWNested,
	}
}

// nestedProtected reports whether rel (slash-separated, below a mount) is
// a protected name below the mount's top; the caches and environments
// among them are RW_CODE_CACHE's (an error there, and a project holds
// many: one per Python package).
func nestedProtected(rel string) bool {
	dir, name := path.Split(rel)
	return dir != "" && protect.Match(name) != "" && !cacheDirs[name]
}

// coveredAbove reports whether a component of rel above its last is a name
// that stays protected: the top one is read-only at launch, a lower one is
// reported itself (the outermost stands for everything below it).
func coveredAbove(rel string, unprotected []string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		if protect.Except(p, unprotected) != "" {
			return true
		}
	}
	return false
}

// checkRWNested reports, for each read-write mount of this machine, the
// outermost protected names its walk found below its top, but those inside
// another mount (a read-only one covers them; a read-write one is judged
// on its own) and those the policy unprotects (every pattern they match).
func checkRWNested(t *readback.Target, o Options, report reportFn) {
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
		w := o.fs.nestedNames(dir)
		var open []string
	names:
		for _, rel := range w.names {
			if protect.Except(path.Base(rel), unprotected) == "" || coveredAbove(rel, unprotected) {
				continue
			}
			if insideAnother(ms, m.Host, dir, rel) {
				continue names
			}
			open = append(open, rel)
		}
		if len(open) == 0 {
			if w.partial { // nothing seen is not nothing there
				report(m.Pos, "read-write mount %s: %s, so protected names below its top (a nested repository's .git, a sub-project's .vscode) may be writable there unseen",
					m.Target, stoppedScan(w.entries))
			}
			continue
		}
		sort.Strings(open)
		list := strings.Join(open[:min(len(open), 5)], ", ")
		if len(open) > 5 {
			list += fmt.Sprintf(" and %d more", len(open)-5)
		}
		if w.partial {
			list += " (the scan stopped at its bound: there may be more)"
		}
		report(m.Pos, "read-write mount %s holds protected names below its top, writable there: %s", m.Target, list)
	}
}

// stoppedScan says where a partial walk for nested names stopped.
func stoppedScan(entries int) string {
	if entries == 0 {
		return "its scan did not run (the run's time for scans was spent)"
	}
	return fmt.Sprintf("its scan stopped at its bound after %d entries (node_modules not entered)", entries)
}

// insideAnother reports whether rel, found below the mount of host (on
// this machine at dir), lies inside another mount below it: a read-only
// one covers it, a read-write one is judged on its own.
func insideAnother(ms []struct {
	compiler.Mount
	Host string
}, host, dir, rel string) bool {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	for _, other := range ms {
		if other.Host != host && within(other.Host, dir) && within(p, other.Host) {
			return true
		}
	}
	return false
}
