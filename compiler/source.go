package compiler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// AcceptRWHoldsProject is the degradation a policy accepts to mount a
// folder above the project read-write.
const AcceptRWHoldsProject = "rw-holds-project"

// mountSource is a mount as written, kept for the checks that need its
// position once the whole server is read.
type mountSource struct {
	Mount
	written string
	dir     string // the policy's folder, to spell a path as the policy would
	at      position.Pos
	field   string // ...mounts[i].source
	real    string // resolved on this machine; "" when not resolved
}

// refusedByName says why a host path is refused in any mode, before any
// resolution, or "". procfs's per-process links (root, cwd, fd, exe,
// map_files, and self) reach whatever that process can see, past any
// mount; /dev/fd and /dev/std* are links into them.
func refusedByName(p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return ""
	}
	p = filepath.ToSlash(filepath.Clean(p))
	if p == "/proc" || strings.HasPrefix(p, "/proc/") {
		return "the host's /proc holds every process's root, working folder and descriptors as links that reach past any mount (the sandbox has its own /proc)"
	}
	if rest, ok := strings.CutPrefix(p, "/dev/"); ok {
		first, _, _ := strings.Cut(rest, "/")
		if first == "fd" || strings.HasPrefix(first, "std") {
			return "/dev/fd and /dev/std* are links to the launcher's own descriptors in /proc"
		}
	}
	return ""
}

// base returns the folder a host path is relative to, resolved on this
// machine: the project root and the home may sit behind symlinks, nothing
// below them may.
func (c *compiler) base(b Base) (string, error) {
	var dir string
	switch b {
	case ProjectRoot:
		dir = c.opt.Root
	case Home:
		if c.opt.Home == "" {
			return "", errors.New("the home folder of this machine is not known ($HOME is not set)")
		}
		dir = c.opt.Home
	default:
		return "/", nil
	}
	r := c.shared.resolved.Get(dir, func() resolved {
		real, err := filepath.EvalSymlinks(dir)
		return resolved{real, err}
	})
	return r.path, r.err
}

type resolved struct {
	path string
	err  error
}

// linkError is a symlink met below a source's base.
type linkError struct {
	at     HostPath // the link, below the same base as the source
	target string   // what it points to, as stored in the link
}

func (e *linkError) Error() string {
	return spelt(fmt.Sprintf("%s is a symlink to %s", e.at, e.target))
}

// spelt spells text that may hold a name a server chose (a file it created
// in a read-write grant, a symlink's target) for a terminal: an escape
// sequence, a newline or a bidi override shows as a Go escape
// (internal/printable); clean text is returned as it is, and spelt text
// is clean, so spelling twice changes nothing.
func spelt(s string) string { return printable.String(s) }

// resolve walks a host path below its resolved base with Lstat: a symlink
// in any component is an error, so what is written is what is mounted
// (a link is followed when the mount is made, and whoever can write the
// folder holding it can repoint it).
func (c *compiler) resolve(p HostPath) (string, error) {
	cur, err := c.base(p.Base)
	if err != nil {
		return "", err
	}
	var done []string
	for _, comp := range strings.Split(strings.TrimPrefix(p.Rel, "/"), "/") {
		if comp == "" || comp == "." {
			continue
		}
		cur = filepath.Join(cur, comp)
		done = append(done, comp)
		fi, err := os.Lstat(cur)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(cur)
			at := HostPath{Base: p.Base, Rel: path.Join(done...)}
			if p.Base == Absolute {
				at.Rel = "/" + at.Rel
			}
			return "", &linkError{at: at, target: target}
		}
	}
	return cur, nil
}

// spell writes a host path as a policy would: relative to the policy's
// folder inside the project, "~/..." inside the home, else absolute.
func (c *compiler) spell(real, policyDir string) string {
	if root, err := c.base(ProjectRoot); err == nil && within(real, root) {
		dir, err := filepath.EvalSymlinks(policyDir)
		if err != nil {
			dir = root
		}
		if rel, err := filepath.Rel(dir, real); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	if home, err := c.base(Home); err == nil && within(real, home) {
		rel, _ := filepath.Rel(home, real)
		if rel == "." {
			return "~"
		}
		return "~/" + filepath.ToSlash(rel)
	}
	return real
}

// checkSource refuses, with the mount's position, a source the server
// could use to reach past its grants. It runs once the server's unprotect
// and accept lists are known.
func (c *compiler) checkSource(p *Plan, s *mountSource, unprot map[string]bool) {
	lexical := Machine{ProjectRoot: c.opt.Root, Home: c.opt.Home}.Resolve(s.Source)
	if why := refusedByName(lexical); why != "" {
		c.fail(s.at, s.field, "mount a regular file or folder", "host path %q is refused: %s", s.written, why)
		return
	}
	rw := s.Mode == ReadWrite
	if rw && s.Source.Base == ProjectRoot {
		if c.insideProtected(s, s.Source.Rel, unprot) {
			return
		}
	}
	if rw && lexical == "/" {
		c.fail(s.at, s.field, "mount the project folder, or the one folder the server writes to",
			"read-write mount of the host's / is refused: it grants the whole machine")
		return
	}
	if c.opt.NoFS {
		return
	}
	if c.touchesEnvFolder(s, lexical, "") {
		return
	}
	real, err := c.resolve(s.Source)
	var link *linkError
	switch {
	case errors.As(err, &link):
		hint := "write the path the link points to, or remove the link"
		if r, err := filepath.EvalSymlinks(lexical); err == nil {
			hint = fmt.Sprintf("write the real path, %q, so the review shows what is mounted", c.spell(r, s.dir))
		}
		c.fail(s.at, s.field, hint, "host path %q: %s (a link is followed when the sandbox starts, and whoever can write its folder can repoint it)", s.written, err)
		return
	case err != nil && (rw || !isMissing(err)):
		// A read-write source must exist: its protected names are found in
		// it. Any other failure leaves its symlinks unchecked.
		why := "cannot be checked"
		if isMissing(err) {
			why = "does not exist"
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		hint := "create it first, or mount it read-only: a read-write source must exist when the policy is compiled"
		if !rw {
			hint = "make it readable by the user who compiles the policy"
		}
		c.fail(s.at, s.field, hint, "host path %q %s: %v", s.written, why, err)
		return
	case err != nil:
		return // a missing read-only source: the engine refuses it at launch
	}
	if why := refusedByName(real); why != "" {
		c.fail(s.at, s.field, "mount a regular file or folder", "host path %q is refused: %s", s.written, why)
		return
	}
	if c.touchesEnvFolder(s, "", real) {
		return
	}
	s.real = real
	if len(s.Hide) > 0 {
		if fi, err := os.Stat(real); err == nil && !fi.IsDir() {
			c.fail(s.HidePos[0], strings.TrimSuffix(s.field, ".source")+".hide", "hide applies to folder mounts: mount the folder and hide the rest, or leave this file out",
				"host path %q is a file: nothing below it to hide", s.written)
			return
		}
	}
	if !rw {
		return
	}
	if real == "/" {
		c.fail(s.at, s.field, "mount the project folder, or the one folder the server writes to",
			"read-write mount of the host's / is refused: it grants the whole machine")
		return
	}
	root, err := c.base(ProjectRoot)
	if err != nil {
		c.fail(s.at, s.field, "", "the project root cannot be resolved: %v", err)
		return
	}
	switch {
	case real == root && !s.FixedTop():
		c.fail(s.at, s.field, `write the project as a path relative to the policy file (e.g. "."): only then is its top level fixed when the server starts, so protected names cannot be created there`,
			"read-write mount of %q is the project folder written another way", s.written)
	case real != root && within(root, real) && !p.Accepts(AcceptRWHoldsProject):
		c.fail(s.at, s.field, `mount the project (".") or a folder inside it; or accept: ["`+AcceptRWHoldsProject+`"], a counted grant`,
			"read-write mount of %q holds the project folder: names are protected only at the top of a mount, so the server could rewrite the project's policies, their .mcpolicy artefacts and .git", s.written)
	case within(real, root):
		rel, _ := filepath.Rel(root, real)
		c.insideProtected(s, filepath.ToSlash(rel), unprot)
	}
	c.holdsPolicy(p, s, real, root)
}

// holdsPolicy refuses a read-write source that is or holds a policy file
// being compiled, unless the file sits below a protected name at the
// source's top (mcpolicy.cue, mcpolicy.d/...), which the launch keeps
// read-only (or which the policy unprotects: a counted grant). A policy
// named otherwise (mcpolicy build -p policy.cue), or reached through a
// symlinked mcpolicy.d, would be the server's to rewrite, and the next
// build would hand it what it wrote. Real paths on both sides. A mount
// holding the project under the accepted rw-holds-project already names
// that loss, for the files in the project.
func (c *compiler) holdsPolicy(p *Plan, s *mountSource, real, root string) {
	for _, pf := range c.policyFiles {
		if !within(pf, real) || real != root && within(root, real) && within(pf, root) && p.Accepts(AcceptRWHoldsProject) {
			continue
		}
		rel, _ := filepath.Rel(real, pf)
		if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); rel != "." && protect.Match(first) != "" {
			continue
		}
		c.fail(s.at, s.field, "name the policy mcpolicy.cue (or .json, .yaml, .yml, .jsonnet) or keep it under mcpolicy.d/, at the top of the project; or mount a folder that does not hold it",
			"read-write mount of %q holds the policy file %s, which no protected name covers there: the server could rewrite its own policy, and the next build would hand it what it wrote", s.written, c.spell(pf, s.dir))
		return
	}
}

// insideProtected refuses a read-write source at or below a protected
// name of the project (rel is its path from the project root): what is
// written there decides what runs next, outside the sandbox.
func (c *compiler) insideProtected(s *mountSource, rel string, unprot map[string]bool) bool {
	comps := strings.Split(rel, "/")
	for i, comp := range comps {
		pat := protectedBy(comp, unprot)
		if pat == "" {
			continue
		}
		hint := fmt.Sprintf("%s; mount a folder outside it, or add unprotect: [%q] (a counted grant) if the server must write there", reason(pat), pat)
		if i == len(comps)-1 {
			c.fail(s.at, s.field, hint, "read-write mount of %q is a protected name (%s)", s.written, pat)
		} else {
			c.fail(s.at, s.field, hint, "read-write mount of %q is inside %q, a protected name (%s)", s.written, strings.Join(comps[:i+1], "/"), pat)
		}
		return true
	}
	return false
}

// protectedBy returns the first pattern matching a name that the server
// has not unprotected: an entry matching two patterns (mcpolicy.d, also
// mcpolicy.*) stays protected until both are unprotected.
func protectedBy(name string, unprot map[string]bool) string {
	var list []string
	for u := range unprot {
		list = append(list, u)
	}
	return protect.Except(name, list)
}

func reason(pattern string) string {
	for _, n := range protect.Names {
		if n.Pattern == pattern {
			return pattern + ": " + n.Reason
		}
	}
	return pattern
}

// EnvFolder is the folder of the env file the launcher reads every
// server's env grant values from by default (launch.EnvFileDefault),
// relative to the home.
const EnvFolder = ".config/mcpolicy"

// touchesEnvFolder refuses a source, read-only or read-write, that is or
// lies in ~/.config/mcpolicy: a server that reads the env file there has
// every server's secrets, one that writes it chooses what the next launch
// of each gets. A grant that holds it (~, ~/.config) is, like every
// credential store, lint's MOUNT_CREDENTIALS error, and mcpolicy client
// and check refuse an env file inside any server's grant. lexical is the source as written (on this machine's
// project and home), real the source resolved; either may be "", and each
// is compared with the folder spelled the same way. Not under NoFS: the
// old side of a diff is not built, and may be the policy that still
// mounted the folder.
func (c *compiler) touchesEnvFolder(s *mountSource, lexical, real string) bool {
	if c.opt.Home == "" || c.opt.NoFS {
		return false
	}
	// The launcher's default is $XDG_CONFIG_HOME/mcpolicy/env when that is
	// set (launch.EnvFileDefault): both folders are refused.
	folders := []struct{ path, spelt string }{{filepath.Join(c.opt.Home, filepath.FromSlash(EnvFolder)), "~/" + EnvFolder}}
	if xdg := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(xdg) {
		folders = append(folders, struct{ path, spelt string }{filepath.Join(filepath.Clean(xdg), "mcpolicy"), "$XDG_CONFIG_HOME/mcpolicy"})
	}
	for _, f := range folders {
		folder, src := f.path, lexical
		if lexical == "" {
			folder, src = c.realEnvFolder(f.path), real
		}
		if !within(src, folder) {
			continue // a grant holding it (~, ~/.config) is lint's MOUNT_CREDENTIALS error, and client refuses the env file
		}
		how := "lies in"
		if src == folder {
			how = "is"
		}
		c.fail(s.at, s.field, "mount a folder outside "+f.spelt+"; keep what the server needs elsewhere, and its env grant values in the env file, which the launcher reads for it",
			"host path %q %s %s, the folder of the env file the launcher takes every server's env grant values from: the server could read them all, or (read-write) choose what the next launch gets", s.written, how, f.spelt)
		return true
	}
	return false
}

func (c *compiler) realEnvFolder(p string) string {
	return c.shared.envFolders.Get(p, func() string { return realBelow(p) })
}

// realBelow resolves the deepest folder of p that exists and joins the
// rest: ~/.config may be a link (dotfiles), ~/.config/mcpolicy not yet made.
func realBelow(p string) string {
	rest := ""
	for d := p; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(r, rest)
		}
		if d == filepath.Dir(d) {
			return p
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}

// isMissing: the path, or a folder on the way to it, does not exist.
func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
