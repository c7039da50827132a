package compiler

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/baseline"
	"github.com/mcpolicy/mcpolicy/internal/bytesize"
	"github.com/mcpolicy/mcpolicy/internal/secretshape"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
)

// server lowers one server, section by section, into its plan; nil when
// any section failed (the failures are in c.errs).
func (c *compiler) server(pol *schema.Policy, s *schema.Server) *Plan {
	at := schema.FieldPath("servers", s.Name)
	before := len(c.errs)
	c.identity(s, at)
	p := &Plan{
		Server: s.Name, PolicyFile: c.policyFile(pol), Description: s.Description,
		Image: s.Image, Command: s.Command, Pos: s.Pos,
		User: c.user(s, at), UserPos: s.UserPos,
		Protected: []Protected{}, Waivers: s.Waive,
	}
	p.Workdir = c.sandboxPath(s.Workdir, s.WorkdirPos, at+".workdir")
	claim := c.claimer()
	var sources []*mountSource
	p.Mounts, sources = c.mounts(pol, s, at, claim)
	p.Scratch, p.MoreScratch = c.scratch(s, at, p.Mounts, claim)
	p.Proc, p.ProcPos = s.Proc, s.ProcPos
	p.Env = c.env(s, at)
	p.SetEnv = c.setenv(s, at, p.Env)
	p.Network = c.network(s, at)
	p.Credentials, p.CredentialPos = c.credentials(s, at, p) // after env, setenv and network: it checks against them
	var unprot map[string]bool
	p.Unprotected, unprot = c.unprotected(s, at)
	p.Backends = c.backends(s, at)
	p.Runtime = c.runtime(s, at, p.Network.Mode == "allowlist")
	p.Accept = c.accept(s, at)
	p.Packs = c.packs(s, at, claim)
	p.Tools, p.ToolsPos = c.tools(pol, s, p, at) // after workdir: a path argument resolves against it
	for _, k := range p.Packs {
		// A pack whose runtime reads /proc/self implies proc.
		if k.Proc && !p.Proc {
			p.Proc, p.ProcPos = true, k.Pos
		}
	}
	c.homeTargets(p, s, at)
	c.hiddenTargets(p, at) // hide.go
	c.hiddenWays(p, s, at) // hide.go
	// After unprotect and accept: both decide what a source may be.
	for _, src := range sources {
		c.checkSource(p, src, unprot)
	}
	p.Subtractions = c.subtractions(p, s, at)
	p.LimitsPos = s.Limits.Pos

	if len(c.errs) > before {
		return nil
	}
	c.protect(p, sources, unprot)
	if len(c.errs) > before {
		return nil
	}
	p.sources = sources
	p.computeHash()
	return p
}

// identity checks the server's name, that it is declared once, and that it
// says what to run.
func (c *compiler) identity(s *schema.Server, at string) {
	if !validServerName(s.Name) {
		c.fail(s.Pos, at, "server names become file names: use lowercase letters, digits, '.', '_' and '-'",
			"invalid server name %q", s.Name)
	}
	if c.dupOf != nil {
		c.errs = append(c.errs, schema.DuplicateServer(s.Pos, s.Name, *c.dupOf))
	}
	if s.Image == "" && len(s.Command) == 0 {
		c.fail(s.Pos, at, `set "image" for container backends, "command" for host backends, or both`,
			"server has neither image nor command")
	}
}

// policyFile is the policy's file relative to the project root, slash-separated.
func (c *compiler) policyFile(pol *schema.Policy) string {
	rel, err := filepath.Rel(c.opt.Root, filepath.Join(pol.Dir, filepath.Base(pol.File)))
	if err != nil {
		rel = filepath.Base(pol.File)
	}
	return filepath.ToSlash(rel)
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

// claimer records which field holds each sandbox path: one mount (or the
// scratch) per path.
func (c *compiler) claimer() func(target string, pos position.Pos, field string) {
	targets := map[string]string{}
	return func(target string, pos position.Pos, field string) {
		if other, dup := targets[target]; dup && target != "" {
			c.fail(pos, field, "each sandbox path holds one mount", "target %q is already used by %s", target, other)
		}
		targets[target] = field
	}
}

// mounts lowers the mounts, sorted by target, and keeps each source as
// written for the checks that run once the whole server is read.
func (c *compiler) mounts(pol *schema.Policy, s *schema.Server, at string, claim func(string, position.Pos, string)) ([]Mount, []*mountSource) {
	mounts := []Mount{}
	var sources []*mountSource
	for i, m := range s.Mounts {
		field := fmt.Sprintf("%s.mounts[%d]", at, i)
		mount := Mount{Mode: Mode(m.Mode), Pos: m.Pos}
		mount.Source = c.hostPath(pol, m, field)
		mount.Target = c.sandboxPath(m.Target, m.TargetPos, field+".target")
		mount.Hide, mount.HidePos = c.hide(m, field+".hide")
		if mount.Source.Rel != "" {
			sources = append(sources, &mountSource{Mount: mount, written: m.Source, dir: pol.Dir, at: m.SourcePos, field: field + ".source"})
		}
		claim(mount.Target, m.TargetPos, field+".target")
		mounts = append(mounts, mount)
	}
	sort.SliceStable(mounts, func(i, j int) bool { return mounts[i].Target < mounts[j].Target })
	return mounts, sources
}

// homeTargets refuses a policy mixing "~/..." targets with absolute ones
// under /home or /root: at spawn "~/a" is /home/USER/a, and the two could
// then overlap in a way no check here sees.
func (c *compiler) homeTargets(p *Plan, s *schema.Server, at string) {
	home := InHome(p.Workdir)
	for _, t := range planTargets(p) {
		home = home || InHome(t)
	}
	if !home {
		return
	}
	check := func(t string, pos position.Pos, field string) {
		for _, root := range []string{"/home", "/root"} {
			if t == root || strings.HasPrefix(t, root+"/") {
				c.fail(pos, field, `with "~/..." targets, write every target in the home as "~/..." too`, "target %s and the \"~/...\" targets may overlap once the home is expanded", t)
			}
		}
	}
	for i, m := range s.Mounts {
		check(m.Target, m.TargetPos, fmt.Sprintf("%s.mounts[%d].target", at, i))
	}
	for i, sc := range s.Scratch {
		field := at + ".scratch"
		if s.ScratchList {
			field = fmt.Sprintf("%s[%d]", field, i)
		}
		check(sc.Target, sc.TargetPos, field+".target")
	}
	check(s.Workdir, s.WorkdirPos, at+".workdir")
}

// planTargets are the mount and scratch targets of a plan.
func planTargets(p *Plan) []string {
	var out []string
	for _, m := range p.Mounts {
		out = append(out, m.Target)
	}
	if p.Scratch != nil {
		out = append(out, p.Scratch.Target)
	}
	for _, sc := range p.MoreScratch {
		out = append(out, sc.Target)
	}
	return out
}

// MaxScratch bounds how many scratch tmpfs a server may have.
const MaxScratch = 8

// scratch lowers the scratch tmpfs: the first, and the others of a list.
// Each is bounded, at a target of its own; with more than one, no target
// is inside another's or a mount's, nor holds one: what each holds is
// then its own, at its own size, on every backend.
func (c *compiler) scratch(s *schema.Server, at string, mounts []Mount, claim func(string, position.Pos, string)) (*Scratch, []Scratch) {
	var out []Scratch
	for i, sc := range s.Scratch {
		field := at + ".scratch"
		if s.ScratchList {
			field = fmt.Sprintf("%s[%d]", field, i)
		}
		if i == MaxScratch {
			c.fail(sc.Pos, field, "one tmpfs can hold several folders", "more than %d scratch tmpfs", MaxScratch)
			break
		}
		size, err := bytesize.Parse(sc.Size)
		if err != nil {
			c.fail(sc.SizePos, field+".size", "", "%v", err)
		}
		target := c.sandboxPath(sc.Target, sc.TargetPos, field+".target")
		claim(target, sc.TargetPos, field+".target")
		if len(s.Scratch) > 1 && target != "" {
			c.scratchApart(target, sc.TargetPos, field+".target", out, mounts)
		}
		out = append(out, Scratch{Target: target, SizeBytes: size, Pos: sc.Pos})
	}
	if len(out) == 0 {
		return nil, nil
	}
	if len(out) == 1 {
		return &out[0], nil
	}
	return &out[0], out[1:]
}

// scratchApart refuses a scratch target nested in (or holding) an earlier
// scratch's or any mount's.
func (c *compiler) scratchApart(target string, pos position.Pos, field string, before []Scratch, mounts []Mount) {
	nested := func(a, b string) bool { return a != b && (within(a, b) || within(b, a)) }
	for _, o := range before {
		if nested(target, o.Target) {
			c.fail(pos, field, "give each scratch a folder of its own, side by side (/tmp, /cache)", "scratch target %s and scratch target %s are nested", target, o.Target)
		}
	}
	for _, m := range mounts {
		if nested(target, m.Target) {
			c.fail(pos, field, "with more than one scratch, none may lie inside a mount or hold one: move the target beside the mounts", "scratch target %s and mount target %s are nested", target, m.Target)
		}
	}
}

func (c *compiler) env(s *schema.Server, at string) []EnvGrant {
	env := []EnvGrant{}
	seen := map[string]bool{}
	for i, e := range s.Env {
		if seen[e.Name] {
			c.fail(e.Pos, fmt.Sprintf("%s.env[%d]", at, i), "", "environment variable %q is listed twice", e.Name)
		}
		seen[e.Name] = true
		env = append(env, EnvGrant{Name: e.Name, Pos: e.Pos})
	}
	slices.SortStableFunc(env, func(a, b EnvGrant) int { return cmp.Compare(a.Name, b.Name) })
	return env
}

// MaxSetEnvValue bounds a setenv value: configuration, not a file.
const MaxSetEnvValue = 4096

// reservedEnv are the variables the backends set themselves (the egress
// proxy's, the plan's hash): a policy's setenv cannot move them.
var reservedEnv = func() map[string]bool {
	m := map[string]bool{"MCPOLICY_PLAN": true}
	for _, kv := range sandbox.ProxyEnv(0) {
		m[kv[0]] = true
	}
	return m
}()

// setenv lowers the constant values, sorted by name: each a bounded line
// of printable text, no name also passed through, no value that looks
// like a secret (those belong in the env file, passed by name).
func (c *compiler) setenv(s *schema.Server, at string, env []EnvGrant) []EnvValue {
	var out []EnvValue
	for _, e := range s.SetEnv {
		field := at + ".setenv." + schema.FieldPath(e.Name)
		switch {
		case slices.ContainsFunc(env, func(g EnvGrant) bool { return g.Name == e.Name }):
			c.fail(e.Pos, field, "keep one: env passes the host's value through, setenv sets the policy's",
				"%s is both passed through (env) and set (setenv)", e.Name)
		case reservedEnv[e.Name]:
			c.fail(e.Pos, field, "mcpolicy sets it itself (the egress proxy's address, the plan's hash)", "%s cannot be set by a policy", e.Name)
		case len(e.Value) > MaxSetEnvValue:
			c.fail(e.Pos, field, "a setenv value is configuration: keep it short, or mount a file and name its path",
				"the value of %s is %d bytes, more than %d", e.Name, len(e.Value), MaxSetEnvValue)
		case strings.Contains(e.Value, "${"):
			c.fail(e.Pos, field, `artefacts hold host paths as ${HOME} and ${PROJECT_ROOT}, which the launcher expands: write "~/..." for a path in the home; no other variable is expanded`,
				"the value of %s holds \"${\"", e.Name)
		case !printableLine(e.Value):
			c.fail(e.Pos, field, "one line of printable text: no NUL, newline or other control character",
				"the value of %s is not one line of printable text", e.Name)
		default:
			if kind := secretshape.Kind(e.Name, e.Value); kind != "" {
				c.fail(e.Pos, field, fmt.Sprintf("a policy is reviewed and committed: put %s=... in the env file (mcpolicy client --env-file) and list %q in env", e.Name, e.Name),
					"the value of %s looks like a secret (%s)", e.Name, kind)
			}
		}
		out = append(out, EnvValue{Name: e.Name, Value: e.Value, Pos: e.Pos})
	}
	slices.SortStableFunc(out, func(a, b EnvValue) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// printableLine reports whether v is valid UTF-8 without control characters.
func printableLine(v string) bool {
	if !utf8.ValidString(v) {
		return false
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// network is none unless the policy allows destinations; each is parsed
// here, once, into its canonical rule.
func (c *compiler) network(s *schema.Server, at string) Network {
	n := Network{Mode: "none", Pos: s.Network.Pos}
	if len(s.Network.Allow) == 0 {
		return n
	}
	n.Mode = "allowlist"
	seen := map[string]bool{}
	for i, a := range s.Network.Allow {
		field := fmt.Sprintf("%s.network.allow[%d]", at, i)
		r, err := allowlist.ParseRule(a.Dest)
		if err != nil {
			c.fail(a.Pos, field, `write "host:port", "*.domain:port" or "address:port" ("[v6]:port"); a wildcard is only a leading "*."`, "%v", err)
			continue
		}
		if seen[r.String()] {
			c.fail(a.Pos, field, "", "destination %q is listed twice (as %q after folding case, IDN and trailing dots)", a.Dest, r.String())
		}
		seen[r.String()] = true
		n.Allow = append(n.Allow, Destination{Rule: r, Pos: a.Pos})
	}
	slices.SortStableFunc(n.Allow, func(a, b Destination) int { return cmp.Compare(a.Rule.String(), b.Rule.String()) })
	n.ProxyPort = ProxyPort(s.Name)
	return n
}

// unprotected lists the protected names left writable, and the same as a
// set for the checks of sources and protect.
func (c *compiler) unprotected(s *schema.Server, at string) ([]Unprotection, map[string]bool) {
	us := []Unprotection{}
	set := map[string]bool{}
	for i, u := range s.Unprotect {
		if set[u.Name] {
			c.fail(u.Pos, fmt.Sprintf("%s.unprotect[%d]", at, i), "", "protected path %q is unprotected twice", u.Name)
		}
		set[u.Name] = true
		us = append(us, Unprotection{Name: u.Name, Pos: u.Pos})
	}
	slices.SortStableFunc(us, func(a, b Unprotection) int { return cmp.Compare(a.Name, b.Name) })
	return us, set
}

// backends are the policy's, or by default the image backend for a server
// with an image and the host backends for one with only a command.
func (c *compiler) backends(s *schema.Server, at string) []string {
	bs := s.Backends
	if bs == nil {
		bs = []string{}
		// An image's command is an argv inside the image, not on the host:
		// host backends only by default for servers without an image.
		if s.Image != "" {
			bs = append(bs, backendtraits.ImageDefaults()...)
		} else if len(s.Command) > 0 {
			bs = append(bs, backendtraits.HostDefaults()...)
		}
	}
	bs = append([]string{}, bs...)
	sort.Strings(bs)
	for i, b := range bs {
		if i > 0 && bs[i-1] == b {
			c.fail(s.BackendsPos, at+".backends", "", "backend %q is listed twice", b)
		}
		image := backendtraits.RunsImage(b)
		if image && s.Image == "" {
			c.fail(s.BackendsPos, at+".backends", `set "image", or drop "`+b+`" from backends`, "backend %s needs an image", b)
		}
		if !image && len(s.Command) == 0 {
			c.fail(s.BackendsPos, at+".backends", `set "command", or drop "`+b+`" from backends`, "backend %s needs a command", b)
		}
	}
	return bs
}

// runtime is the runtime's baseline; with an egress allowlist, also the
// CA certificates a TLS client verifies the hosts with where the baseline
// does not hold them already (static holds nothing: its HTTPS failed).
func (c *compiler) runtime(s *schema.Server, at string, egress bool) Runtime {
	paths, err := baseline.Paths(s.Runtime)
	if err != nil {
		c.fail(s.Pos, at+".runtime", "", "%v", err)
	}
	if egress {
		for _, e := range baseline.Egress() {
			if !slices.ContainsFunc(paths, func(b string) bool { return within(e, b) }) {
				paths = append(paths, e)
			}
		}
	}
	return Runtime{Name: s.Runtime, ReadOnly: paths}
}

func (c *compiler) accept(s *schema.Server, at string) []Accepted {
	as := []Accepted{}
	seen := map[string]bool{}
	for i, a := range s.Accept {
		if seen[a.Name] {
			c.fail(a.Pos, fmt.Sprintf("%s.accept[%d]", at, i), "", "degradation %q is accepted twice", a.Name)
		}
		seen[a.Name] = true
		as = append(as, Accepted{Name: a.Name, Pos: a.Pos})
	}
	slices.SortStableFunc(as, func(a, b Accepted) int { return cmp.Compare(a.Name, b.Name) })
	return as
}

// subtractions are what every plan takes away, and the policy's limits.
func (c *compiler) subtractions(p *Plan, s *schema.Server, at string) Subtractions {
	sub := Subtractions{
		NoNetwork: p.Network.Mode == "none", ReadOnlyRoot: true, DropAllCaps: true,
		NoNewPrivileges: true, NonRootUser: !p.User.Root(),
	}
	if s.Limits.Memory != "" {
		b, err := bytesize.Parse(s.Limits.Memory)
		if err != nil {
			c.fail(s.Limits.MemoryPos, at+".limits.memory", "", "%v", err)
		}
		sub.MemoryBytes = b
	}
	for _, m := range p.Mounts {
		sub.Hidden += len(m.Hide)
	}
	sub.Pids = s.Limits.Pids
	sub.MilliCPUs = int64(math.Round(s.Limits.CPUs * 1000))
	return sub
}
