// Package why answers, from compiled plans alone, whether a server can
// reach one thing — a host path, a path inside its sandbox, a host:port,
// an environment variable — on each backend it is built for: how (read,
// write, exec, connect), through which grant (with the grant's position in
// the policy), and otherwise what stops it (no grant, a read-only mount,
// a protected name, the fixed top level, the read-only root, network none,
// the egress proxy's allowlist, its private-address rule).
//
// Paths are resolved the way the backends resolve them: the deepest mount
// holding a sandbox path decides under bwrap, docker and podman (a
// read-only mount inside a read-write one stays read-only, a protected
// entry of a read-write mount is a read-only bind on top); Landlock shows
// host paths and its rights add up; bwrap and Landlock add the runtime
// baseline (read-only host paths such as /usr), docker and podman show
// the image's own files instead. Destinations go through the egress
// proxy's own matcher (package allowlist). Symlinks are followed on this
// machine when the path exists here, and the answer says so.
//
// The package reads nothing but the plans, the target and, when
// Machine.FS is set, this machine's file system (symlinks, which entries
// of a fixed top level exist).
package why

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/baseline"
	"github.com/mcpolicy/mcpolicy/internal/bytesize"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/backends"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/emit/seatbelt"
	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// Kind is what a target names.
type Kind string

const (
	HostPath    Kind = "host path"
	SandboxPath Kind = "sandbox path"
	Destination Kind = "destination"
	EnvName     Kind = "env"
)

// Access is one way of reaching a target.
type Access string

const (
	Read    Access = "read"
	Write   Access = "write"
	Exec    Access = "exec"
	Connect Access = "connect"
	Passed  Access = "passed" // an environment variable's value reaches the server
)

// Target is a parsed TARGET.
type Target struct {
	Raw  string `json:"raw"`
	Kind Kind   `json:"kind"`
	// Path: a host path (absolute, on this machine) or a sandbox path
	// (absolute, clean).
	Path string `json:"path,omitempty"`
	// Host and Port: a destination, Host as the server spells it.
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	Name string `json:"name,omitempty"` // an environment variable
}

// Machine is where the plans run.
type Machine struct {
	compiler.Machine // ProjectRoot and Home
	// Cwd resolves a relative host path; "" is the project root.
	Cwd string
	// FS lets the answer look at this machine's file system: symlinks on
	// the way to a path, which top-level entries a fixed top level binds.
	FS bool
	// Resolve looks a name up as the egress proxy would; nil leaves the
	// private-address rule as a condition on the answer.
	Resolve func(host string) ([]netip.Addr, error)
}

// Answer is what why says about one target.
type Answer struct {
	Target Target `json:"target"`
	// Resolved is the target as answered: a host path written with
	// ${PROJECT_ROOT} and ${HOME}, a canonical host:port, a name.
	Resolved string `json:"resolved"`
	// Notes are facts of this machine the answer depends on (a symlink
	// followed, a path that does not exist here).
	Notes   []string       `json:"notes,omitempty"`
	Servers []ServerAnswer `json:"servers"`
}

// ServerAnswer is one server's verdicts.
type ServerAnswer struct {
	Server    string    `json:"server"`
	Pos       string    `json:"pos"`
	Plan      string    `json:"plan"`
	Reachable bool      `json:"reachable"` // on at least one backend
	Backends  []Verdict `json:"backends"`
}

// Verdict is the answer on one backend.
type Verdict struct {
	Backend   string   `json:"backend"`
	Reachable bool     `json:"reachable"`
	Access    []Access `json:"access"`
	// At is where the server reaches it: the paths it names it by, or
	// how a destination is reached.
	At []string `json:"at,omitempty"`
	// Via are the grants that make it reachable.
	Via []Grant `json:"via,omitempty"`
	// Stops say what keeps it (or some access to it) away.
	Stops []Stop `json:"stops,omitempty"`
	// Refused: the backend refuses the plan at compile time; nothing runs.
	Refused string `json:"refused,omitempty"`
}

// Grant is one grant of the plan, as explain numbers it.
type Grant struct {
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	Pos     string `json:"pos"`
}

// Stop is one thing that takes access away.
type Stop struct {
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
	Pos    string `json:"pos,omitempty"`
}

// The rules of Stop.
const (
	StopNoGrant     = "no-grant"
	StopReadOnly    = "read-only-mount"
	StopProtected   = "protected"
	StopFixedTop    = "fixed-top"
	StopRoot        = "read-only-root"
	StopShadowed    = "shadowed"
	StopNotGranted  = "landlock-not-granted"
	StopImage       = "image-root"
	StopNetNone     = "network-none"
	StopAllowlist   = "not-in-allowlist"
	StopPrivate     = "private-address"
	StopDirect      = "direct-connection"
	StopEnvCleared  = "env-cleared"
	StopRefused     = "backend-refuses"
	StopNoExec      = "noexec"
	StopAbsentProt  = "protected-absent" // not a stop: a name that can be created
	StopPortMissing = "other-port"
)

var envRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseTarget reads TARGET: "host:port" (or "[v6]:port"), an environment
// variable's name, "~/..." (the home), a relative path (from m.Cwd), or an
// absolute path — a sandbox path when it lies at or below a mount target
// or the scratch of one of plans, else a host path. kind, when not empty,
// forces HostPath or SandboxPath.
func ParseTarget(s string, plans []*compiler.Plan, m Machine, kind Kind) (Target, error) {
	t := Target{Raw: s}
	if s == "" {
		return t, fmt.Errorf("empty target")
	}
	if kind == "" {
		if h, p, err := net.SplitHostPort(s); err == nil && !strings.Contains(s, "/") {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return t, fmt.Errorf("%s: port must be 1-65535", s)
			}
			t.Kind, t.Host, t.Port = Destination, h, n
			return t, nil
		}
		if envRE.Regexp().MatchString(s) {
			t.Kind, t.Name = EnvName, s
			return t, nil
		}
	}
	switch {
	case s == "~" || strings.HasPrefix(s, "~/"):
		t.Kind, t.Path = HostPath, filepath.Join(m.Home, strings.TrimPrefix(s, "~"))
	case !strings.HasPrefix(s, "/"):
		cwd := m.Cwd
		if cwd == "" {
			cwd = m.ProjectRoot
		}
		t.Kind, t.Path = HostPath, filepath.Join(cwd, s)
	default:
		t.Path = path.Clean(s)
		t.Kind = HostPath
		// The project and the home are host places: a path below them is
		// a host path even where a mount target or the scratch (/tmp) has
		// the same prefix; --sandbox says otherwise.
		host := within(t.Path, m.ProjectRoot) || m.Home != "" && within(t.Path, m.Home)
		if kind == SandboxPath || kind == "" && !host && inSandbox(plans, t.Path) {
			t.Kind = SandboxPath
		}
	}
	if kind != "" && kind != t.Kind {
		if kind == SandboxPath && !strings.HasPrefix(s, "/") {
			return t, fmt.Errorf("%s: a sandbox path is absolute", s)
		}
		t.Kind = kind
	}
	return t, nil
}

func inSandbox(plans []*compiler.Plan, p string) bool {
	for _, pl := range plans {
		for _, mt := range pl.Mounts {
			if within(p, mt.Target) {
				return true
			}
		}
		if pl.Scratch != nil && within(p, pl.Scratch.Target) {
			return true
		}
	}
	return false
}

// Ask answers t for each plan, on each backend the plan is built for
// (podman beside docker), or only on backend when it is not empty.
func Ask(plans []*compiler.Plan, t Target, m Machine, backend string) (*Answer, error) {
	a := &Answer{Target: t}
	var real string
	switch t.Kind {
	case HostPath:
		var notes []string
		real, notes = m.realPath(t.Path)
		a.Resolved = m.show(real)
		a.Notes = append(a.Notes, notes...)
	case SandboxPath:
		a.Resolved = t.Path
	case Destination:
		h, err := allowlist.Canonical(t.Host)
		if err != nil {
			return nil, fmt.Errorf("%s: not a host name: %v", t.Raw, err)
		}
		a.Resolved = net.JoinHostPort(h, strconv.Itoa(t.Port))
		if h != strings.ToLower(t.Host) {
			a.Notes = append(a.Notes, fmt.Sprintf("%s is spelled %s as the proxy compares names (IDNA, lower case, no trailing dot)", t.Host, h))
		}
	case EnvName:
		a.Resolved = t.Name
	default:
		return nil, fmt.Errorf("unknown target kind %q", t.Kind)
	}
	if backend != "" {
		if _, err := backends.Lookup(backend); err != nil {
			return nil, err
		}
	}
	for _, p := range plans {
		sa := ServerAnswer{Server: p.Server, Pos: m.pos(p.Pos), Plan: p.Hash, Backends: []Verdict{}}
		for _, b := range planBackends(p) {
			if backend != "" && b != backend {
				continue
			}
			v := Verdict{Backend: b, Access: []Access{}}
			if be, err := backends.Lookup(b); err == nil {
				if err := be.Check(p); err != nil {
					v.Refused = strings.ReplaceAll(err.Error(), m.ProjectRoot+string(filepath.Separator), "")
					v.Stops = append(v.Stops, Stop{Rule: StopRefused, Detail: "the backend refuses this plan at compile time: nothing runs on it"})
					sa.Backends = append(sa.Backends, v)
					continue
				}
			}
			e := newEval(p, m, b)
			switch t.Kind {
			case HostPath:
				e.hostPath(&v, real)
			case SandboxPath:
				e.sandboxPath(&v, t.Path, a)
			case Destination:
				e.destination(&v, t)
			case EnvName:
				e.env(&v, t.Name)
			}
			v.Reachable = len(v.Access) > 0
			sa.Reachable = sa.Reachable || v.Reachable
			sa.Backends = append(sa.Backends, v)
		}
		a.Servers = append(a.Servers, sa)
	}
	a.Notes = dedup(a.Notes)
	return a, nil
}

// planBackends are the backends a plan is built for, podman beside docker.
func planBackends(p *compiler.Plan) []string {
	var bs []string
	for _, b := range p.Backends {
		bs = append(bs, b)
		if b == docker.Backend {
			bs = append(bs, docker.PodmanBackend)
		}
	}
	order := map[string]int{}
	for i, n := range backends.Names() {
		order[n] = i
	}
	sort.SliceStable(bs, func(i, j int) bool { return order[bs[i]] < order[bs[j]] })
	return bs
}

// view is how a backend shows paths to the server.
type view int

const (
	sandboxView  view = iota // bwrap, docker, podman: mounts at their targets, deepest wins
	landlockView             // host paths; rights add up
	seatbeltView             // host paths; last match (the deepest) wins
)

// layer is one thing mounted (or allowed) at a path the server names.
type layer struct {
	at     string // the path the server names it by
	src    string // the host path it shows; "" for a tmpfs or the root
	rw     bool
	noexec bool
	kind   string // mount, protected, scratch, baseline, fixed-top, fixed-entry, dev
	grant  *Grant
	name   string // the protected name
	mount  *compiler.Mount
}

// covers reports whether the layer holds p. A protected name ending in
// "*" (".env*", "mcpolicy.*") stands for every top-level entry with that
// prefix.
func (l *layer) covers(p string) bool {
	if prefix, ok := strings.CutSuffix(l.at, "*"); ok && l.kind == "protected" {
		dir := path.Dir(l.at)
		return within(p, dir) && p != dir && strings.HasPrefix(path.Join(dir, firstComponent(p, dir)), prefix)
	}
	return within(p, l.at)
}

type eval struct {
	p       *compiler.Plan
	m       Machine
	backend string
	view    view
	layers  []layer
}

func newEval(p *compiler.Plan, m Machine, backend string) *eval {
	e := &eval{p: p, m: m, backend: backend}
	switch backend {
	case landlock.Backend:
		e.view = landlockView
	case seatbelt.Backend:
		e.view = seatbeltView
	}
	unprot := p.UnprotectedNames()
	for i := range p.Mounts {
		mt := &p.Mounts[i]
		src := m.source(mt.Source)
		g := e.mountGrant(mt)
		at := mt.Target
		if e.view != sandboxView {
			at = src
		}
		if mt.FixedTop() && e.view == sandboxView && !m.FS {
			// Without the file system the entries present at spawn are
			// unknown: the mount as read-write, its protected names
			// read-only by name.
			e.layers = append(e.layers, layer{at: at, src: src, rw: true, kind: "mount", grant: g, mount: mt})
			for _, n := range protect.Names {
				if !contains(unprot, n.Pattern) {
					e.layers = append(e.layers, layer{at: path.Join(at, n.Pattern), kind: "protected", name: n.Pattern})
				}
			}
			continue
		}
		if mt.FixedTop() && e.view == sandboxView {
			// The launcher binds the project root read-only and every
			// top-level entry present at spawn again on top: read-write,
			// protected ones read-only.
			e.layers = append(e.layers, layer{at: at, src: src, kind: "fixed-top", grant: g, mount: mt})
			if ents, err := os.ReadDir(src); err == nil {
				for _, ent := range ents {
					pat := protect.Except(ent.Name(), unprot)
					l := layer{at: path.Join(at, ent.Name()), src: filepath.Join(src, ent.Name()), rw: pat == "", kind: "fixed-entry", grant: g, mount: mt}
					if pat != "" {
						l.kind, l.name = "protected", pat
					}
					e.layers = append(e.layers, l)
				}
			}
			continue
		}
		e.layers = append(e.layers, layer{at: at, src: src, rw: mt.Mode == compiler.ReadWrite, kind: "mount", grant: g, mount: mt})
	}
	switch e.view {
	case sandboxView:
		for _, pr := range p.Protected {
			e.layers = append(e.layers, layer{at: pr.Target, src: m.source(pr.Source), kind: "protected", name: pr.Name})
		}
	case seatbeltView:
		// Protected names are denied by path at the top of every
		// read-write mount, present or not.
		for _, mt := range p.Mounts {
			if mt.Mode != compiler.ReadWrite {
				continue
			}
			src := m.source(mt.Source)
			for _, n := range protect.Names {
				if contains(unprot, n.Pattern) {
					continue
				}
				e.layers = append(e.layers, layer{at: path.Join(src, n.Pattern), kind: "protected", name: n.Pattern})
			}
		}
	}
	// seatbelt's scratch is a private folder (seatbelt-scratch-dir), not
	// a tmpfs at the target.
	if s := p.Scratch; s != nil && backend != seatbelt.Backend {
		noexec := backend == docker.Backend || backend == docker.PodmanBackend
		e.layers = append(e.layers, layer{at: s.Target, rw: true, noexec: noexec, kind: "scratch",
			grant: &Grant{Kind: string(compiler.GrantScratch), Summary: fmt.Sprintf("tmpfs %s, %s", s.Target, bytesize.Format(s.SizeBytes)), Pos: m.pos(s.Pos)}})
	}
	switch backend {
	case bwrap.Backend, landlock.Backend:
		for _, b := range p.Runtime.ReadOnly {
			e.layers = append(e.layers, layer{at: b, src: b, kind: "baseline"})
			if b == "/usr" && backend == bwrap.Backend {
				for _, l := range []string{"bin", "lib", "lib32", "lib64", "sbin"} {
					e.layers = append(e.layers, layer{at: "/" + l, src: "/usr/" + l, kind: "baseline"})
				}
			}
		}
		devs := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
		for _, d := range devs {
			e.layers = append(e.layers, layer{at: d, src: d, rw: d == "/dev/null", kind: "dev"})
		}
	case seatbelt.Backend:
		rules, _ := baseline.Seatbelt(p.Runtime.Name)
		for _, r := range rules {
			if !contains(r.Allow, "file-read*") {
				continue
			}
			for _, s := range append(append([]string{}, r.Subpath...), r.Literal...) {
				e.layers = append(e.layers, layer{at: s, src: s, kind: "baseline"})
			}
		}
	}
	return e
}

func (e *eval) mountGrant(mt *compiler.Mount) *Grant {
	kind := compiler.GrantMountRO
	if mt.Mode == compiler.ReadWrite {
		kind = compiler.GrantMountRW
	}
	return &Grant{Kind: string(kind), Summary: fmt.Sprintf("%s -> %s", mt.Source, mt.Target), Pos: e.m.pos(mt.Pos)}
}

// decision is what one path the server names gives.
type decision struct {
	found       bool // some layer covers it
	read, write bool
	exec        bool
	deciding    *layer   // the layer that decides (sandbox, seatbelt)
	covering    []*layer // every covering layer (landlock)
	stops       []Stop
}

// processPath decides a path as the server names it on this backend.
func (e *eval) processPath(p string) decision {
	var d decision
	var best *layer
	for i := range e.layers {
		l := &e.layers[i]
		if l.covers(p) {
			d.covering = append(d.covering, l)
			if best == nil || len(l.at) > len(best.at) || len(l.at) == len(best.at) && outranks(l, best) {
				best = l
			}
		}
	}
	if best == nil {
		return e.uncovered(p)
	}
	d.found, d.deciding = true, best
	switch e.view {
	case landlockView:
		d.read = true
		for _, l := range d.covering {
			d.write = d.write || l.rw
			d.exec = d.exec || !l.noexec
		}
		if !d.write {
			d.stops = append(d.stops, e.roStop(best, p))
		}
		return d
	}
	if best.kind == "fixed-top" && p != best.at {
		// An entry below a fixed top level that no layer binds: it did
		// not exist at spawn, and cannot be created.
		d.found = false
		d.stops = append(d.stops, Stop{Rule: StopFixedTop, Pos: best.grant.Pos,
			Detail: fmt.Sprintf("%s is a read-write mount of the project root: its top level is fixed at launch (mcpolicy-launch binds the root read-only and each entry present then on top), so %s, absent then, cannot be created", best.at, path.Join(best.at, firstComponent(p, best.at)))})
		return d
	}
	d.read, d.write, d.exec = true, best.rw, !best.noexec
	if !d.write {
		d.stops = append(d.stops, e.roStop(best, p))
	}
	if best.noexec {
		d.stops = append(d.stops, Stop{Rule: StopNoExec, Detail: "the scratch tmpfs is mounted noexec"})
	}
	return d
}

// outranks reports whether l, at the same place as other, is the one the
// server meets: a protected name's read-only bind, or else a policy's own
// mount over a fixed top level's entry (bwrap binds it later; the engine
// launcher leaves the entry to it).
func outranks(l, other *layer) bool {
	return l.kind == "protected" || l.kind == "mount" && other.kind == "fixed-entry"
}

func (e *eval) roStop(l *layer, p string) Stop {
	switch l.kind {
	case "protected":
		name := firstComponent(p, path.Dir(l.at))
		if name != l.name {
			name += " (" + l.name + ")"
		}
		return Stop{Rule: StopProtected, Detail: fmt.Sprintf("%s is a protected name: read-only inside read-write mounts, as a whole (%s); unprotect: [%q] would make it writable (a counted grant)", name, reason(l.name), l.name)}
	case "fixed-top":
		return Stop{Rule: StopFixedTop, Pos: l.grant.Pos, Detail: fmt.Sprintf("the top level of %s is fixed at launch: no entry can be created, removed or renamed there", l.at)}
	case "baseline":
		return Stop{Rule: StopReadOnly, Detail: fmt.Sprintf("the runtime baseline %q is read-only", e.p.Runtime.Name)}
	case "dev":
		return Stop{Rule: StopReadOnly, Detail: "a device bound read-only"}
	case "mount":
		return Stop{Rule: StopReadOnly, Pos: l.grant.Pos, Detail: fmt.Sprintf("mount %s is read-only", l.mount.Target)}
	}
	return Stop{Rule: StopReadOnly, Detail: "read-only"}
}

func reason(pattern string) string {
	for _, n := range protect.Names {
		if n.Pattern == pattern {
			return n.Reason
		}
	}
	return pattern
}

// uncovered is a path no layer holds.
func (e *eval) uncovered(p string) decision {
	var d decision
	ancestor := p == "/"
	for _, l := range e.layers {
		if within(l.at, p) {
			ancestor = true
		}
	}
	switch {
	case e.view == landlockView && ancestor:
		d.stops = append(d.stops, Stop{Rule: StopNotGranted, Detail: p + " is in the minimal root on the way to a grant, but not granted: Landlock answers EACCES"})
	case e.view == landlockView:
		d.stops = append(d.stops, Stop{Rule: StopNoGrant, Detail: "not in the minimal root: no grant or baseline path holds it (ENOENT)"})
	case e.view == seatbeltView:
		d.stops = append(d.stops, Stop{Rule: StopNoGrant, Detail: "no grant or baseline rule allows it: the profile denies by default"})
	case ancestor:
		d.found, d.read = true, true
		d.stops = append(d.stops, Stop{Rule: StopRoot, Detail: p + " is a folder of the sandbox's read-only root, on the way to a mount"})
	case e.backend == bwrap.Backend:
		d.stops = append(d.stops, Stop{Rule: StopNoGrant, Detail: "not in the sandbox: bwrap's root is empty but for the grants and the runtime baseline (ENOENT)"})
	default:
		d.stops = append(d.stops, Stop{Rule: StopImage, Detail: "not a host path here: the container's root is the image's own, read-only (--read-only); nothing of the host but the mounts"})
	}
	return d
}

// hostPath answers for a real host path.
func (e *eval) hostPath(v *Verdict, h string) {
	var ats []string
	seen := map[string]bool{}
	for _, l := range e.layers {
		if l.src == "" || !within(h, l.src) {
			continue
		}
		at := path.Join(l.at, rel(h, l.src))
		if !seen[at] {
			seen[at] = true
			ats = append(ats, at)
		}
	}
	sort.Strings(ats)
	deeper := false // a grant mounted at its host path inside the scratch's target
	for _, l := range e.layers {
		if l.src != "" && within(h, l.src) && e.p.Scratch != nil && len(l.at) > len(e.p.Scratch.Target) {
			deeper = true
		}
	}
	if s := e.p.Scratch; s != nil && e.view == landlockView && within(h, s.Target) && !deeper {
		// Host paths are the server's names here, but the scratch tmpfs
		// is mounted over the host's folder at its target.
		v.Stops = append(v.Stops, Stop{Rule: StopShadowed, Detail: fmt.Sprintf("the scratch tmpfs at %s hides the host's %s: the server's %s is its scratch", s.Target, h, h)})
		finish(v)
		return
	}
	if len(ats) == 0 {
		e.noGrant(v, h)
		return
	}
	for _, at := range ats {
		d := e.processPath(at)
		if !d.found {
			v.Stops = append(v.Stops, d.stops...)
			continue
		}
		if l := d.deciding; l != nil && e.view != landlockView && (l.src == "" && l.kind != "protected" || l.src != "" && path.Join(l.src, rel(at, l.at)) != h) {
			v.Stops = append(v.Stops, Stop{Rule: StopShadowed, Detail: fmt.Sprintf("%s is hidden by %s mounted on top", at, d.deciding.at)})
			continue
		}
		e.record(v, at, d)
	}
	e.absent(v, h)
	finish(v)
}

// record adds one reachable path's decision to the verdict.
func (e *eval) record(v *Verdict, at string, d decision) {
	if !d.read {
		v.Stops = append(v.Stops, d.stops...)
		return
	}
	v.At = append(v.At, at)
	v.Access = append(v.Access, Read)
	if d.write {
		v.Access = append(v.Access, Write)
	}
	if d.exec {
		v.Access = append(v.Access, Exec)
	}
	ls := []*layer{d.deciding}
	if e.view == landlockView {
		ls = d.covering
	}
	for _, l := range ls {
		switch {
		case l == nil:
		case l.grant != nil:
			v.Via = append(v.Via, *l.grant)
		case l.kind == "baseline":
			v.Via = append(v.Via, Grant{Kind: "runtime", Summary: fmt.Sprintf("runtime baseline %q: %s read-only", e.p.Runtime.Name, l.at), Pos: e.m.pos(e.p.Pos)})
		case l.kind == "protected":
			for _, c := range d.covering {
				if c.grant != nil && c.kind != "protected" && (c.rw || c.kind == "fixed-top") {
					v.Via = append(v.Via, *c.grant)
				}
			}
		case l.kind == "dev":
			v.Via = append(v.Via, Grant{Kind: "device", Summary: l.at + " (every sandbox)", Pos: "-"})
		}
	}
	v.Stops = append(v.Stops, d.stops...)
}

// noGrant explains a host path no layer shows.
func (e *eval) noGrant(v *Verdict, h string) {
	var ms []string
	for _, mt := range e.p.Mounts {
		ms = append(ms, fmt.Sprintf("%s -> %s", mt.Source, mt.Target))
	}
	what := "no mount"
	if len(ms) > 0 {
		what += " (" + strings.Join(ms, ", ") + ")"
	}
	detail := what + " holds it"
	if e.backend == bwrap.Backend || e.backend == landlock.Backend {
		detail += fmt.Sprintf(", nor the runtime baseline %q", e.p.Runtime.Name)
	}
	if e.backend == docker.Backend || e.backend == docker.PodmanBackend || e.backend == kubernetes.Backend {
		for _, b := range e.p.Runtime.ReadOnly {
			if within(h, b) {
				detail += fmt.Sprintf("; the container sees the image's own %s, never the host's (the host backends' runtime baseline %q does not apply)", b, e.p.Runtime.Name)
				break
			}
		}
	}
	v.Stops = append(v.Stops, Stop{Rule: StopNoGrant, Detail: detail})
	finish(v)
}

// absent says when h is a protected name at the top of a read-write mount
// that did not exist when the plan was compiled: it can be created.
func (e *eval) absent(v *Verdict, h string) {
	if e.view == seatbeltView {
		return
	}
	for _, mt := range e.p.Mounts {
		if mt.Mode != compiler.ReadWrite || mt.FixedTop() {
			continue
		}
		src := e.m.source(mt.Source)
		if !within(h, src) || h == src {
			continue
		}
		name := firstComponent(h, src)
		pat := protect.Except(name, e.p.UnprotectedNames())
		if pat == "" {
			continue
		}
		protected := false
		for _, pr := range e.p.Protected {
			if within(h, e.m.source(pr.Source)) {
				protected = true
			}
		}
		if !protected {
			v.Stops = append(v.Stops, Stop{Rule: StopAbsentProt, Detail: fmt.Sprintf("%s matches the protected name %s but did not exist when the plan was compiled: only names present then are bound read-only, so the server can create it (explain lists the absent names)", path.Join(mt.Target, name), pat)})
		}
	}
}

// sandboxPath answers for a path as the server names it: under bwrap,
// docker and podman itself; under Landlock and seatbelt, which do not
// remap paths, the host path the sandbox's mounts would show there.
func (e *eval) sandboxPath(v *Verdict, p string, a *Answer) {
	if e.view != sandboxView {
		h := p
		if hp, ok := e.p.HostPathOf(p); ok {
			h = e.m.source(hp)
		} else if e.p.Scratch != nil && within(p, e.p.Scratch.Target) {
			d := e.processPath(p)
			e.record(v, p, d)
			finish(v)
			return
		}
		real, notes := e.m.realPath(h)
		a.Notes = append(a.Notes, notes...)
		if real != p {
			v.Stops = append(v.Stops, Stop{Rule: "host-paths", Detail: fmt.Sprintf("%s does not remap paths: the server names it %s", e.backend, e.m.show(real))})
		}
		e.hostPath(v, real)
		return
	}
	p, notes := e.resolveInSandbox(p)
	a.Notes = append(a.Notes, notes...)
	d := e.processPath(p)
	if !d.found {
		v.Stops = append(v.Stops, d.stops...)
		finish(v)
		return
	}
	e.record(v, p, d)
	if d.deciding != nil && d.deciding.src != "" {
		e.absent(v, path.Join(d.deciding.src, rel(p, d.deciding.at)))
	}
	finish(v)
}

// resolveInSandbox follows symlinks on the way to p as the sandbox sees
// them, reading each link on this machine through the layer that shows it.
func (e *eval) resolveInSandbox(p string) (string, []string) {
	if !e.m.FS {
		return p, nil
	}
	var notes []string
	for hops := 0; hops < 40; hops++ {
		comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur, next := "/", ""
		restart := false
		for i, c := range comps {
			if c == "" {
				continue
			}
			next = path.Join(cur, c)
			h, ok := e.hostOf(next)
			if !ok {
				cur = next
				continue
			}
			fi, err := os.Lstat(h)
			if err != nil {
				return p, notes
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				t, err := os.Readlink(h)
				if err != nil {
					return p, notes
				}
				rest := path.Join(comps[i+1:]...)
				var np string
				if path.IsAbs(t) {
					np = path.Join(t, rest)
				} else {
					np = path.Join(cur, t, rest)
				}
				notes = append(notes, fmt.Sprintf("%s is a symlink to %s on this machine (%s): inside the sandbox it leads to %s", next, t, e.m.show(h), np))
				p, restart = np, true
				break
			}
			cur = next
		}
		if !restart {
			return p, notes
		}
	}
	return p, append(notes, "too many levels of symlinks")
}

// hostOf is the host path the deepest layer shows at p.
func (e *eval) hostOf(p string) (string, bool) {
	var best *layer
	for i := range e.layers {
		l := &e.layers[i]
		if l.covers(p) && (best == nil || len(l.at) > len(best.at)) {
			best = l
		}
	}
	if best == nil || best.src == "" {
		return "", false
	}
	return filepath.Join(best.src, rel(p, best.at)), true
}

// destination answers host:port through the egress proxy's own matcher.
func (e *eval) destination(v *Verdict, t Target) {
	host, _ := allowlist.Canonical(t.Host)
	dest := net.JoinHostPort(host, strconv.Itoa(t.Port))
	direct := "a direct connection (raw TCP, UDP, DNS) finds no route: the sandbox has its own network namespace with only loopback"
	if e.backend == seatbelt.Backend {
		direct = "a direct connection (raw TCP, UDP, DNS) is denied: the profile denies network* (with an allowlist, all but the proxy's port on the host's loopback)"
	}
	v.Stops = append(v.Stops, Stop{Rule: StopDirect, Detail: direct})
	if e.p.Network.Mode != "allowlist" {
		v.Stops = append(v.Stops, Stop{Rule: StopNetNone, Pos: e.netPos(), Detail: "network: none: no egress proxy, nothing leaves the sandbox"})
		finish(v)
		return
	}
	rules := e.p.Network.Rules()
	rule, ok := rules.MatchCanonical(host, t.Port)
	if !ok {
		detail := dest + " is not in the allowlist (" + strings.Join(e.p.Network.Entries(), ", ") + "): the proxy answers 403"
		for _, r := range rules {
			if r.Wildcard && r.Host == "*."+host && r.Port == t.Port {
				detail += "; " + r.String() + " allows the names below " + host + ", never " + host + " itself"
			}
		}
		v.Stops = append(v.Stops, Stop{Rule: StopAllowlist, Pos: e.netPos(), Detail: detail})
		if a, err := netip.ParseAddr(host); err == nil && allowlist.Private(a) {
			v.Stops = append(v.Stops, Stop{Rule: StopPrivate, Detail: fmt.Sprintf("%s is a private address (loopback, private, link-local, CGNAT, multicast or unspecified): only an entry naming it exactly would allow it, never a name that resolves to it", a)})
		}
		for _, r := range rules {
			if r.Port != t.Port {
				if _, ok := (allowlist.List{{Host: r.Host, Port: t.Port, Wildcard: r.Wildcard, Addr: r.Addr}}).MatchCanonical(host, t.Port); ok {
					v.Stops = append(v.Stops, Stop{Rule: StopPortMissing, Detail: fmt.Sprintf("%s allows port %d only", r.String(), r.Port)})
				}
			}
		}
		finish(v)
		return
	}
	var pos position.Pos
	for _, d := range e.p.Network.Allow {
		if d.Rule.String() == rule.String() {
			pos = d.Pos
		}
	}
	g := Grant{Kind: string(compiler.GrantEgress), Summary: "egress to " + rule.String(), Pos: e.m.pos(orPos(pos, e.p.Network.Pos))}
	at := "through mcpolicy's egress proxy (HTTP CONNECT, or plain HTTP, to 127.0.0.1:" + strconv.Itoa(e.p.Network.ProxyPort) + " in the sandbox, where mcpolicy run's forwarder listens)"
	if e.backend == seatbelt.Backend {
		at = "through mcpolicy's egress proxy (HTTP CONNECT, or plain HTTP, to the host's 127.0.0.1:" + strconv.Itoa(e.p.Network.ProxyPort) + ", where mcpolicy run serves it)"
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a.Unmap()}
	} else if e.m.Resolve != nil {
		var err error
		if addrs, err = e.m.Resolve(host); err != nil || len(addrs) == 0 {
			v.Via = append(v.Via, g)
			v.Stops = append(v.Stops, Stop{Rule: "cannot-resolve", Detail: fmt.Sprintf("allowed by %s, but %s does not resolve here: %v", rule, host, err)})
			finish(v)
			return
		}
	} else {
		v.Access = append(v.Access, Connect)
		v.At = append(v.At, at)
		v.Via = append(v.Via, g)
		v.Stops = append(v.Stops, Stop{Rule: StopPrivate, Detail: fmt.Sprintf("only if %s resolves to a public address when the proxy looks it up: a loopback, private, link-local (cloud metadata), CGNAT, multicast or unspecified answer is refused (403) unless an entry names that address", host)})
		finish(v)
		return
	}
	for _, a := range addrs {
		a = a.Unmap()
		if allowlist.Private(a) && rule.Addr != a {
			v.Stops = append(v.Stops, Stop{Rule: StopPrivate, Detail: fmt.Sprintf("%s matches %s (%s), but resolves to the private address %s: the proxy refuses it (403) unless an entry names that address", host, rule, g.Pos, a)})
			continue
		}
		v.Access = append(v.Access, Connect)
		v.At = append(v.At, at)
		v.Via = append(v.Via, g)
		if allowlist.Private(a) {
			v.Stops = append(v.Stops, Stop{Rule: "private-named", Detail: fmt.Sprintf("%s is private, allowed only because the entry names that address", a)})
		}
		break
	}
	finish(v)
}

// netPos is the network field's position, else the server's (network:
// none is the default, written nowhere).
func (e *eval) netPos() string {
	if e.p.Network.Pos.Line > 0 {
		return e.m.pos(e.p.Network.Pos)
	}
	return e.m.pos(e.p.Pos)
}

// env answers for an environment variable.
func (e *eval) env(v *Verdict, name string) {
	for _, g := range e.p.Env {
		if g.Name != name {
			continue
		}
		v.Access = append(v.Access, Passed)
		v.Via = append(v.Via, Grant{Kind: string(compiler.GrantEnv), Summary: "environment variable " + name, Pos: e.m.pos(orPos(g.Pos, e.p.Pos))})
		from := "the value comes from the environment the client starts the server with"
		if be, err := backends.Lookup(e.backend); err == nil && be.EnvFile() {
			from += ", else from the env file (--env-file, ~/.config/mcpolicy/env) for clients that pass none"
		}
		v.At = append(v.At, "by name: "+from+"; never written into a policy, artefact or argv")
		finish(v)
		return
	}
	if e.p.Network.Mode == "allowlist" && e.backend != landlock.Backend {
		for _, s := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "NODE_USE_ENV_PROXY", "NO_PROXY", "no_proxy"} {
			if s == name {
				v.Access = append(v.Access, Passed)
				v.At = append(v.At, "set by mcpolicy, not from the host: it points at the egress proxy on 127.0.0.1:"+strconv.Itoa(e.p.Network.ProxyPort))
				finish(v)
				return
			}
		}
	}
	if e.backend == bwrap.Backend && (name == "PATH" || name == "HOME") {
		v.Access = append(v.Access, Passed)
		v.At = append(v.At, "set by bwrap (--setenv), not from the host")
		finish(v)
		return
	}
	how := map[string]string{docker.Backend: "only -e NAME passes a variable", docker.PodmanBackend: "only -e NAME passes a variable", bwrap.Backend: "--clearenv", landlock.Backend: "cleared but for the named variables", seatbelt.Backend: "the wrapper unsets all but the named", kubernetes.Backend: "the Pod's env names only the grants, each a secretKeyRef or configMapKeyRef"}[e.backend]
	v.Stops = append(v.Stops, Stop{Rule: StopEnvCleared, Detail: fmt.Sprintf("no env grant names %s: the server's environment is empty but for its grants (%s)", name, how)})
	finish(v)
}

// finish sorts and deduplicates a verdict.
func finish(v *Verdict) {
	set := map[Access]bool{}
	for _, a := range v.Access {
		set[a] = true
	}
	v.Access = []Access{}
	for _, a := range []Access{Read, Write, Exec, Connect, Passed} {
		if set[a] {
			v.Access = append(v.Access, a)
		}
	}
	v.At = dedup(v.At)
	var gs []Grant
	seenG := map[Grant]bool{}
	for _, g := range v.Via {
		if !seenG[g] {
			seenG[g] = true
			gs = append(gs, g)
		}
	}
	v.Via = gs
	var ss []Stop
	seenS := map[Stop]bool{}
	for _, s := range v.Stops {
		// A read-only stop says nothing once another path writes it.
		if set[Write] && (s.Rule == StopReadOnly || s.Rule == StopProtected || s.Rule == StopFixedTop) {
			continue
		}
		if !seenS[s] {
			seenS[s] = true
			ss = append(ss, s)
		}
	}
	v.Stops = ss
}

// realPath follows symlinks on this machine: the deepest existing
// ancestor is resolved, the rest joined on.
func (m Machine) realPath(p string) (string, []string) {
	p = filepath.Clean(p)
	if !m.FS {
		return p, nil
	}
	var notes []string
	rest := ""
	cur := p
	for {
		if _, err := os.Lstat(cur); err == nil {
			break
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
	r, err := filepath.EvalSymlinks(cur)
	if err != nil {
		return p, nil
	}
	real := filepath.Join(r, rest)
	if rest != "" {
		notes = append(notes, fmt.Sprintf("%s does not exist on this machine: answered for the path as written (if created, it would be reached the same way)", m.show(p)))
	}
	if r != cur && !m.sameBase(cur, r) {
		notes = append(notes, fmt.Sprintf("%s is reached through a symlink on this machine: answered for the real path %s", m.show(p), m.show(real)))
	}
	return real, notes
}

// sameBase: a path whose only symlink is the project root's or the home's
// own (allowed: they may be reached through symlinks) needs no note.
func (m Machine) sameBase(p, real string) bool {
	for _, b := range []string{m.ProjectRoot, m.Home} {
		if b == "" || !within(p, b) {
			continue
		}
		if rb, err := filepath.EvalSymlinks(b); err == nil && filepath.Join(rb, rel(p, b)) == real {
			return true
		}
	}
	return false
}

// source is a mount source's real host path on this machine.
func (m Machine) source(hp compiler.HostPath) string {
	s := m.Machine.Resolve(hp)
	if m.FS {
		if r, err := filepath.EvalSymlinks(s); err == nil {
			return r
		}
		// The project root or home may be a symlink even when the source
		// below it does not exist.
		for _, b := range []string{m.ProjectRoot, m.Home} {
			if b != "" && within(s, b) {
				if rb, err := filepath.EvalSymlinks(b); err == nil {
					return filepath.Join(rb, rel(s, b))
				}
			}
		}
	}
	return s
}

// show writes a host path with ${PROJECT_ROOT} and ${HOME}, so answers are
// the same on every machine.
func (m Machine) show(p string) string {
	type base struct{ dir, name string }
	var bs []base
	for _, b := range []base{{m.ProjectRoot, "${PROJECT_ROOT}"}, {m.Home, "${HOME}"}} {
		if b.dir == "" {
			continue
		}
		bs = append(bs, b)
		if m.FS {
			if r, err := filepath.EvalSymlinks(b.dir); err == nil && r != b.dir {
				bs = append(bs, base{r, b.name})
			}
		}
	}
	// The deepest base first: a project inside the home is the project.
	sort.SliceStable(bs, func(i, j int) bool { return len(bs[i].dir) > len(bs[j].dir) })
	for _, b := range bs {
		if within(p, b.dir) {
			if r := rel(p, b.dir); r != "." {
				return b.name + "/" + r
			}
			return b.name
		}
	}
	return p
}

// pos writes a position with its file relative to the project root.
func (m Machine) pos(p position.Pos) string {
	if filepath.IsAbs(p.File) && m.ProjectRoot != "" {
		if r, err := filepath.Rel(m.ProjectRoot, p.File); err == nil && !strings.HasPrefix(r, "..") {
			p.File = filepath.ToSlash(r)
		}
	}
	return p.String()
}

func orPos(p, fallback position.Pos) position.Pos {
	if p == (position.Pos{}) {
		return fallback
	}
	return p
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// rel is p relative to dir (p within dir), "." for dir itself.
func rel(p, dir string) string {
	if p == dir {
		return "."
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(p, dir+"/")
}

func firstComponent(p, dir string) string {
	r := rel(p, dir)
	first, _, _ := strings.Cut(r, "/")
	return first
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func dedup(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
