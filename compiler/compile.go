package compiler

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpolicy/mcpolicy/egress"
	"github.com/mcpolicy/mcpolicy/protect"
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
	c := &compiler{opt: opt, seen: map[string]schema.Pos{}}
	var plans []*Plan
	for _, pol := range policies {
		for i := range pol.Servers {
			if p := c.server(pol, &pol.Servers[i]); p != nil {
				plans = append(plans, p)
			}
		}
	}
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	sort.Slice(plans, func(i, j int) bool { return plans[i].Server < plans[j].Server })
	return plans, nil
}

type compiler struct {
	opt      Options
	errs     schema.Errors
	seen     map[string]schema.Pos
	resolved map[string]resolved // base folders, resolved once
}

func (c *compiler) fail(pos schema.Pos, path, hint, format string, args ...any) {
	c.errs = append(c.errs, &schema.Error{Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

func (c *compiler) server(pol *schema.Policy, s *schema.Server) *Plan {
	at := schema.FieldPath("servers", s.Name)
	before := len(c.errs)
	if !validServerName(s.Name) {
		c.fail(s.Pos, at, "server names become file names: use lowercase letters, digits, '.', '_' and '-'",
			"invalid server name %q", s.Name)
	}
	if first, dup := c.seen[s.Name]; dup {
		c.errs = append(c.errs, schema.DuplicateServer(s.Pos, s.Name, first))
	}
	c.seen[s.Name] = s.Pos
	if s.Image == "" && len(s.Command) == 0 {
		c.fail(s.Pos, at, `set "image" for container backends, "command" for host backends, or both`,
			"server has neither image nor command")
	}

	rel, err := filepath.Rel(c.opt.Root, filepath.Join(pol.Dir, filepath.Base(pol.File)))
	if err != nil {
		rel = filepath.Base(pol.File)
	}
	p := &Plan{
		Server: s.Name, PolicyFile: filepath.ToSlash(rel), Description: s.Description,
		Image: s.Image, Command: s.Command, Pos: s.Pos, Policy: pol,
		Mounts: []Mount{}, Env: []string{}, Protected: []Protected{}, Unprotected: []string{},
	}
	p.User = c.user(s, at)
	p.Workdir = c.sandboxPath(s.Workdir, s.WorkdirPos, at+".workdir")
	p.UserPos = s.UserPos

	targets := map[string]string{}
	claim := func(target string, pos schema.Pos, field string) {
		if other, dup := targets[target]; dup && target != "" {
			c.fail(pos, field, "each sandbox path holds one mount", "target %q is already used by %s", target, other)
		}
		targets[target] = field
	}
	var sources []*source
	for i, m := range s.Mounts {
		field := fmt.Sprintf("%s.mounts[%d]", at, i)
		mount := Mount{Mode: Mode(m.Mode), Pos: m.Pos}
		mount.Source = c.hostPath(pol, m, field)
		mount.Target = c.sandboxPath(m.Target, m.TargetPos, field+".target")
		if mount.Source.Rel != "" {
			sources = append(sources, &source{Mount: mount, written: m.Source, at: m.SourcePos, field: field + ".source"})
		}
		claim(mount.Target, m.TargetPos, field+".target")
		p.Mounts = append(p.Mounts, mount)
	}
	sort.SliceStable(p.Mounts, func(i, j int) bool { return p.Mounts[i].Target < p.Mounts[j].Target })

	if s.Scratch != nil {
		field := at + ".scratch"
		size, err := parseSize(s.Scratch.Size)
		if err != nil {
			c.fail(s.Scratch.SizePos, field+".size", "", "%v", err)
		}
		target := c.sandboxPath(s.Scratch.Target, s.Scratch.TargetPos, field+".target")
		claim(target, s.Scratch.TargetPos, field+".target")
		p.Scratch = &Scratch{Target: target, SizeBytes: size, Pos: s.Scratch.Pos}
	}

	envSeen := map[string]bool{}
	for i, e := range s.Env {
		if envSeen[e.Name] {
			c.fail(e.Pos, fmt.Sprintf("%s.env[%d]", at, i), "", "environment variable %q is listed twice", e.Name)
		}
		envSeen[e.Name] = true
		p.Env = append(p.Env, e.Name)
		p.EnvPos = append(p.EnvPos, e.Pos)
	}
	sortWithPos(p.Env, p.EnvPos)

	p.Network = Network{Mode: "none", Pos: s.Network.Pos}
	if len(s.Network.Allow) > 0 {
		p.Network.Mode = "allowlist"
		destSeen := map[string]bool{}
		for i, a := range s.Network.Allow {
			field := fmt.Sprintf("%s.network.allow[%d]", at, i)
			r, err := egress.ParseRule(a.Dest)
			if err != nil {
				c.fail(a.Pos, field, `write "host:port", "*.domain:port" or "address:port" ("[v6]:port"); a wildcard is only a leading "*."`, "%v", err)
				continue
			}
			if destSeen[r.String()] {
				c.fail(a.Pos, field, "", "destination %q is listed twice (as %q after folding case, IDN and trailing dots)", a.Dest, r.String())
			}
			destSeen[r.String()] = true
			p.Network.Allow = append(p.Network.Allow, r.String())
			p.Network.AllowPos = append(p.Network.AllowPos, a.Pos)
		}
		sortWithPos(p.Network.Allow, p.Network.AllowPos)
		p.Network.ProxyPort = ProxyPort(s.Name)
	}

	unprot := map[string]bool{}
	for i, u := range s.Unprotect {
		if unprot[u.Name] {
			c.fail(u.Pos, fmt.Sprintf("%s.unprotect[%d]", at, i), "", "protected path %q is unprotected twice", u.Name)
		}
		unprot[u.Name] = true
		p.Unprotected = append(p.Unprotected, u.Name)
		p.UnprotPos = append(p.UnprotPos, u.Pos)
	}
	sortWithPos(p.Unprotected, p.UnprotPos)

	p.Waivers = s.Waive
	p.Backends = s.Backends
	if p.Backends == nil {
		p.Backends = []string{}
		// An image's command is an argv inside the image, not on the host:
		// host backends only by default for servers without an image.
		if s.Image != "" {
			p.Backends = append(p.Backends, ImageBackend)
		} else if len(s.Command) > 0 {
			p.Backends = append(p.Backends, DefaultHostBackends...)
		}
	}
	p.Backends = append([]string{}, p.Backends...)
	sort.Strings(p.Backends)
	for i, b := range p.Backends {
		if i > 0 && p.Backends[i-1] == b {
			c.fail(s.BackendsPos, at+".backends", "", "backend %q is listed twice", b)
		}
		if b == ImageBackend && s.Image == "" {
			c.fail(s.BackendsPos, at+".backends", `set "image", or drop "docker" from backends`, "backend docker needs an image")
		}
		if b != ImageBackend && len(s.Command) == 0 {
			c.fail(s.BackendsPos, at+".backends", `set "command", or drop "`+b+`" from backends`, "backend %s needs a command", b)
		}
	}
	baseline, err := schema.Baseline(s.Runtime)
	if err != nil {
		c.fail(s.Pos, at+".runtime", "", "%v", err)
	}
	p.Runtime = Runtime{Name: s.Runtime, ReadOnly: baseline}
	p.Accept = []string{}
	for i, a := range s.Accept {
		if p.Accepts(a.Name) {
			c.fail(a.Pos, fmt.Sprintf("%s.accept[%d]", at, i), "", "degradation %q is accepted twice", a.Name)
		}
		p.Accept = append(p.Accept, a.Name)
		p.AcceptPos = append(p.AcceptPos, a.Pos)
	}
	sortWithPos(p.Accept, p.AcceptPos)
	// After unprotect and accept: both decide what a source may be.
	for _, src := range sources {
		c.checkSource(p, src, unprot)
	}

	p.Subtractions = Subtractions{
		NoNetwork: p.Network.Mode == "none", ReadOnlyRoot: true, DropAllCaps: true,
		NoNewPrivileges: true, NonRootUser: !p.User.Root(),
	}
	p.LimitsPos = s.Limits.Pos
	if s.Limits.Memory != "" {
		b, err := parseSize(s.Limits.Memory)
		if err != nil {
			c.fail(s.Limits.MemoryPos, at+".limits.memory", "", "%v", err)
		}
		p.Subtractions.MemoryBytes = b
	}
	p.Subtractions.Pids = s.Limits.Pids
	p.Subtractions.MilliCPUs = int64(math.Round(s.Limits.CPUs * 1000))

	if len(c.errs) > before {
		return nil
	}
	c.protect(p, sources, unprot)
	if len(c.errs) > before {
		return nil
	}
	p.computeHash()
	return p
}

func (c *compiler) user(s *schema.Server, at string) User {
	if s.User == InvokerUser {
		return User{UID: -1, GID: -1, Invoker: true}
	}
	uid, gid, _ := strings.Cut(s.User, ":")
	u, err1 := strconv.Atoi(uid)
	g, err2 := strconv.Atoi(gid)
	if err1 != nil || err2 != nil || u > math.MaxInt32 || g > math.MaxInt32 {
		c.fail(s.UserPos, at+".user", `write "UID:GID", e.g. "1000:1000", or "invoker"`, "invalid user %q", s.User)
	}
	return User{UID: u, GID: g}
}

// sandboxPath checks a path inside the sandbox; "" stays "" (not set).
func (c *compiler) sandboxPath(p string, pos schema.Pos, field string) string {
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
	for _, r := range reservedTargets {
		if p == r || strings.HasPrefix(p, r+"/") {
			c.fail(pos, field, `mount at a folder such as "/workspace"`, "sandbox path %q is reserved for the runtime (%s)", p, r)
		}
	}
	return p
}

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
func (c *compiler) protect(p *Plan, sources []*source, unprot map[string]bool) {
	m := Machine{ProjectRoot: c.opt.Root, Home: c.opt.Home}
	for _, s := range sources {
		if s.Mode != ReadWrite {
			continue
		}
		dir := s.real
		if dir == "" { // NoFS: look where the sources would be
			dir = m.Resolve(s.Source)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // a file, or (NoFS) not there
		}
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
		for _, n := range protect.Names {
			// A glob protects the names that exist; new ones can always be created.
			if !unprot[n.Pattern] && (!found[n.Pattern] || strings.HasSuffix(n.Pattern, "*")) {
				p.Absent = append(p.Absent, AbsentProtected{Target: path.Join(s.Target, n.Pattern), Name: n.Pattern})
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

// Compiled on first use: every mcpolicy process pays package init, few use it.
var sizeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([1-9][0-9]*)([kmgKMG]?)$`) })

// parseSize reads "256m" as bytes (k, m, g are powers of 1024).
func parseSize(s string) (int64, error) {
	m := sizeRE().FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("invalid size %q: write a number with an optional k, m or g suffix", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: %v", s, err)
	}
	shift := map[string]uint{"": 0, "k": 10, "m": 20, "g": 30}[strings.ToLower(m[2])]
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n << shift, nil
}

// FormatSize writes bytes in the largest unit that divides them: 256m.
func FormatSize(b int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"g", 30}, {"m", 20}, {"k", 10}} {
		if b >= 1<<u.shift && b%(1<<u.shift) == 0 {
			return strconv.FormatInt(b>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(b, 10)
}

// sortWithPos sorts names and keeps each one's position beside it.
func sortWithPos(names []string, pos []schema.Pos) {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return names[idx[a]] < names[idx[b]] })
	n2, p2 := make([]string, len(names)), make([]schema.Pos, len(pos))
	for to, from := range idx {
		n2[to], p2[to] = names[from], pos[from]
	}
	copy(names, n2)
	copy(pos, p2)
}
