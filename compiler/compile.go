package compiler

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/parallel"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/protect"
	"github.com/mcpolicy/mcpolicy/schema"
)

// Options say where the policies live. Root bounds relative host paths; Home
// is what "~/..." sources are below.
type Options struct {
	Root string // absolute project root
	Home string // absolute home directory of this machine
	// NoFS skips every check that reads this machine's file system
	// (symlinks, whether a source exists, what it holds). Only for
	// comparing policies (diff --against), whose old side is copied where
	// its sources do not exist: never for a plan that is built or run.
	NoFS bool
}

// validServerName: 1 to 63 of a-z, 0-9, '.', '_' and '-', the first a
// letter or digit (^[a-z0-9][a-z0-9._-]{0,62}$, which as a regexp is a
// program of 63 copies, compiled in every build).
func validServerName(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// reservedTargets belong to the runtime inside every sandbox.
var reservedTargets = []string{"/proc", "/sys", "/dev"}

// Compile lowers policies into plans, sorted by server name. Every problem
// is reported, each with its position, as schema.Errors.
func Compile(policies []*schema.Policy, opt Options) ([]*Plan, error) {
	c := &compiler{opt: opt, shared: &shared{}}
	if !opt.NoFS {
		c.policyFiles = c.realFiles(policies)
	}
	// Servers compile independently, in parallel, each into its own
	// compiler (its errors); what they share is read-only (policyFiles) or
	// memoized (shared). A name declared twice is found first, in the
	// order the servers are declared.
	type job struct {
		pol   *schema.Policy
		s     *schema.Server
		first *position.Pos // the earlier declaration of the same name
	}
	var jobs []job
	seen := map[string]position.Pos{}
	for _, pol := range policies {
		for i := range pol.Servers {
			s := &pol.Servers[i]
			j := job{pol: pol, s: s}
			if first, dup := seen[s.Name]; dup {
				j.first = &first
			}
			seen[s.Name] = s.Pos
			jobs = append(jobs, j)
		}
	}
	plans := make([]*Plan, len(jobs))
	errs := make([]schema.Errors, len(jobs))
	parallel.For(len(jobs), func(i int) {
		sc := &compiler{opt: c.opt, policyFiles: c.policyFiles, shared: c.shared, dupOf: jobs[i].first}
		plans[i] = sc.server(jobs[i].pol, jobs[i].s)
		errs[i] = sc.errs
	})
	for _, e := range errs {
		c.errs = append(c.errs, e...)
	}
	c.crossServer(plans)
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	plans = slices.DeleteFunc(plans, func(p *Plan) bool { return p == nil })
	sort.Slice(plans, func(i, j int) bool { return plans[i].Server < plans[j].Server })
	return plans, nil
}

type compiler struct {
	opt  Options
	errs schema.Errors
	// dupOf is where the server being compiled was declared before, if it was.
	dupOf *position.Pos
	// policyFiles are the policy files compiled, by real path: no
	// read-write source may reach one unprotected (checkSource).
	policyFiles []string
	shared      *shared
}

// shared is what every server's compile resolves the same way, once.
type shared struct {
	// resolved are the base folders (project root, home), resolved.
	resolved parallel.Memo[resolved]
	// envFolders are the env file's folders, resolved (realBelow) once:
	// every mount of every server is checked against them.
	envFolders parallel.Memo[string]
	// topEntries are the read-write sources' top-level entries, read once
	// a folder: the servers of a policy often all write the project.
	topEntries parallel.Memo[dirEntries]
}

type dirEntries struct {
	entries []fs.DirEntry
	err     error
}

// realFiles resolves the files the policies were read from. One that
// cannot be resolved any more is an error: the check it feeds
// (holdsPolicy) must not be skipped by a file renamed away between the
// read and the compile.
func (c *compiler) realFiles(policies []*schema.Policy) []string {
	var out []string
	for _, pol := range policies {
		abs, err := filepath.Abs(pol.File)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			c.fail(position.Pos{File: pol.File}, "", "compile again; if the file keeps moving, something else is writing the policy's folder",
				"the policy file cannot be resolved after it was read: %v", err)
			continue
		}
		out = append(out, abs)
	}
	return out
}

// fail records a policy error. It is the one place the compiler makes
// one, so the message and the hint are spelt here (spelt, source.go): a
// name or a symlink's target a server chose in its read-write grant
// (linkError) reaches the terminal as text, whichever check put it in. No
// hint holds a newline or a tab of its own (schema.Error adds the
// "\n\thint: " that shows it); clean text is unchanged.
func (c *compiler) fail(pos position.Pos, path, hint, format string, args ...any) {
	c.errs = append(c.errs, &schema.Error{Pos: pos, Path: path,
		Msg: spelt(fmt.Sprintf(format, args...)), Hint: spelt(hint)})
}

// sandboxPath checks a path inside the sandbox; "" stays "" (not set).
func (c *compiler) sandboxPath(p string, pos position.Pos, field string) string {
	if p == "" {
		return ""
	}
	if clean := path.Clean(p); clean != p {
		c.fail(pos, field, fmt.Sprintf("write %q", clean), "sandbox path %q is not clean", p)
		return p
	}
	if p == "/" {
		c.fail(pos, field, `mount at a folder such as "/workspace"`, "sandbox path / would replace the whole root filesystem")
	}
	if p == "~" {
		c.fail(pos, field, `name a folder below the home, such as "~/projects/notes"`, `sandbox path "~" would cover the whole home`)
	}
	if InHome(p) {
		return p
	}
	for _, r := range reservedTargets {
		if p == r || strings.HasPrefix(p, r+"/") {
			c.fail(pos, field, `mount at a folder such as "/workspace"`, "sandbox path %q is reserved for the runtime (%s)", p, r)
		}
	}
	// The backends bind mcpolicy's own files there (the egress forwarder
	// and its socket, the session CA): a grant over them hid them, or had
	// their mount points made in a host folder (a Pod: two mounts at one
	// path).
	if p == sandbox.Dir || strings.HasPrefix(p, sandbox.Dir+"/") {
		c.fail(pos, field, `mount at a folder such as "/workspace"`, "sandbox path %q is reserved for mcpolicy (%s: the egress forwarder, the session CA)", p, sandbox.Dir)
	}
	return p
}

// InHome reports whether a sandbox path is "~/...": below the home of the
// user who starts the server, which the launcher expands at spawn. "~" is
// a root of its own: "~/a" never nests in an absolute path.
func InHome(sandbox string) bool { return strings.HasPrefix(sandbox, "~/") }

// SandboxWord reports whether a command word, workdir or value names a
// sandbox path: absolute, or "~/...".
func SandboxWord(w string) bool { return path.IsAbs(w) || InHome(w) }

// hostPath resolves a mount source: "~/x" stays relative to HOME, an absolute
// path stays as written, anything else is relative to the policy's folder
// and must stay inside the project root.
func (c *compiler) hostPath(pol *schema.Policy, m schema.Mount, field string) HostPath {
	src := m.Source
	at := m.SourcePos
	for _, r := range src {
		if r < 0x20 || r == 0x7f {
			c.fail(at, field+".source", "rename the path: a control character in a path can inject into a command line or profile",
				"host path %q contains a control character", src)
			return HostPath{}
		}
	}
	switch {
	case src == "~" || strings.HasPrefix(src, "~/"):
		rel := path.Clean("." + strings.TrimPrefix(src, "~"))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			c.fail(at, field+".source", "write an absolute path to grant a folder outside your home", "host path %q leaves the home folder", src)
		}
		return HostPath{Base: Home, Rel: rel}
	case strings.HasPrefix(src, "~"):
		c.fail(at, field+".source", `write "~/..." (your home) or an absolute path`, "host path %q: ~user is not supported", src)
		return HostPath{}
	case filepath.IsAbs(src):
		return HostPath{Base: Absolute, Rel: filepath.ToSlash(filepath.Clean(src))}
	}
	abs := filepath.Join(pol.Dir, filepath.FromSlash(src))
	rel, err := filepath.Rel(c.opt.Root, abs)
	const outside = "a relative path must stay inside the project root; to grant a folder outside it, write it as an absolute path or \"~/...\" so the widening is explicit"
	if err != nil || !within(abs, c.opt.Root) {
		c.fail(at, field+".source", outside, "host path %q escapes the project root", src)
		return HostPath{}
	}
	return HostPath{Base: ProjectRoot, Rel: filepath.ToSlash(rel)}
}

// protect finds the protected entries at the top of every read-write
// mount on this machine: each existing one becomes a read-only sub-mount,
// as a whole. A name that does not exist is recorded as absent, for
// explain, unless the mount's top level is fixed at launch (FixedTop),
// where nothing can be created.
func (c *compiler) protect(p *Plan, sources []*mountSource, unprot map[string]bool) {
	m := Machine{ProjectRoot: c.opt.Root, Home: c.opt.Home}
	for _, s := range sources {
		if s.Mode != ReadWrite {
			continue
		}
		dir := s.real
		if dir == "" { // NoFS: look where the sources would be
			dir = m.Resolve(s.Source)
		}
		read := c.shared.topEntries.Get(dir, func() dirEntries {
			entries, err := os.ReadDir(dir)
			return dirEntries{entries, err}
		})
		if read.err != nil {
			continue // a file, or (NoFS) not there
		}
		entries := read.entries
		found := map[string]bool{}
		for _, e := range entries {
			pat := protectedBy(e.Name(), unprot)
			if pat == "" {
				continue
			}
			for _, n := range protect.Names {
				if n.Matches(e.Name()) {
					found[n.Pattern] = true
				}
			}
			if e.Type()&fs.ModeSymlink != 0 {
				if !c.opt.NoFS {
					target, _ := os.Readlink(filepath.Join(dir, e.Name()))
					c.fail(s.at, s.field, fmt.Sprintf("remove it, or add unprotect: [%q] (a counted grant)", pat),
						"a protected path must be a real file or folder: %s is a symlink to %s (if you did not make it, something swapped it in: treat it as tampering)", s.Source.Join(e.Name()), target)
				}
				continue
			}
			if s.FixedTop() {
				// The launcher fixes this mount's top level and binds every
				// protected entry present at spawn read-only, by rule: the
				// plan names none, so it does not depend on the tree (an
				// .mcp.json written later, a .env that exists on one machine).
				continue
			}
			p.Protected = append(p.Protected, Protected{Source: s.Source.Join(e.Name()), Target: path.Join(s.Target, e.Name()), Name: pat})
		}
		if s.FixedTop() {
			continue
		}
		// path.Join(s.Target, name) for the plain names below, cleaned once.
		prefix := strings.TrimSuffix(path.Join(s.Target, "x"), "x")
		for _, n := range protect.Names {
			// A glob protects the names that exist; new ones can always be created.
			if !unprot[n.Pattern] && (!found[n.Pattern] || strings.HasSuffix(n.Pattern, "*")) {
				p.Absent = append(p.Absent, AbsentProtected{Target: prefix + n.Pattern, Name: n.Pattern})
			}
		}
	}
	// A protected entry of a read-write mount that lies inside another
	// read-write mount is reachable through that one too: protect it there.
	var also []Protected
	for _, pr := range p.Protected {
		for _, s := range sources {
			if s.Mode != ReadWrite || s.Source.Base != pr.Source.Base {
				continue
			}
			rel, ok := strings.CutPrefix(pr.Source.Rel, strings.TrimSuffix(s.Source.Rel, "/")+"/")
			if s.Source.Rel == "." {
				rel, ok = pr.Source.Rel, true
			}
			if target := path.Join(s.Target, rel); ok && target != pr.Target {
				also = append(also, Protected{Source: pr.Source, Target: target, Name: pr.Name})
			}
		}
	}
	p.Protected = append(p.Protected, also...)
	sort.Slice(p.Protected, func(i, j int) bool { return p.Protected[i].Target < p.Protected[j].Target })
}
