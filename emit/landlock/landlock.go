// Package landlock lowers a plan into a Landlock ruleset: which host
// hierarchies the server may read, write and execute, what else is denied,
// and how it is started. Landlock does not remap paths: the server sees the
// host's paths, so mount targets only decide where the workdir and the
// command are found. The ruleset is applied by package launch (`mcpolicy
// exec`, `mcpolicy-launch`); this package only builds it, deterministically.
package landlock

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	names "github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
)

// Backend is the name used in artefact paths and messages.
const Backend = names.Landlock

// Host is what a machine offers (see hostcaps.Host).
type Host = hostcaps.Host

// Best is the host committed artefacts are checked against: everything the
// backend can use is there, so only the plan's own demands can fail.
var Best = Host{ABI: 7, UserNS: true}

// Devices every process may use: writes to /dev/null, reads of the others.
var (
	DevicesRW = []string{"/dev/null"}
	DevicesRO = []string{"/dev/zero", "/dev/random", "/dev/urandom"}
)

// Build lowers a plan; r renders host paths.
func Build(p *compiler.Plan, r compiler.Resolver) (*artefact.Ruleset, error) {
	if err := emit.Check(p, Backend, Enforcement(p, Best)); err != nil {
		return nil, err
	}
	if len(p.Command) == 0 {
		return nil, &emit.NotEnforceableError{Pos: p.Pos, Server: p.Server, Backend: Backend,
			Restriction: "a server without a command", Alternative: `set "command" (the argv to run) in the policy`}
	}
	rs := &artefact.Ruleset{
		Server: p.Server, Plan: p.Hash, Baseline: p.BaselinePaths(r),
		ReadOnly: []string{}, ReadWrite: []string{},
		DevicesRO: DevicesRO, DevicesRW: DevicesRW,
		Network: p.Network.Mode, Env: p.EnvNames(), Accept: p.AcceptNames(), Proc: p.Proc,
		ProgramPins: emit.ProgramPins(p),
		Tools:       emit.ToolsDigest(p),
	}
	if err := homeScratch(p); err != nil {
		return nil, err
	}
	rs.SetEnv = setEnv(p, r)
	uid, gid, err := compiler.UserIDs(p, r)
	if err != nil {
		return nil, err
	}
	rs.User = uid + ":" + gid
	if p.Scratch != nil {
		rs.Scratch, rs.ScratchSize = p.Scratch.Target, p.Scratch.SizeBytes
	}
	// The other scratch tmpfs, and the runtime packs' caches: each a
	// tmpfs in the minimal root (never a private folder).
	for _, s := range p.Tmpfs() {
		if p.Scratch == nil || s.Target != p.Scratch.Target {
			rs.MoreScratch = append(rs.MoreScratch, artefact.ScratchTmpfs{Target: s.Target, Size: s.SizeBytes})
		}
	}
	for _, m := range p.Mounts {
		for _, h := range m.Hide {
			rs.Hidden = append(rs.Hidden, artefact.HiddenPath{Source: r.Resolve(m.Source), Pattern: h})
		}
		if m.Mode == compiler.ReadWrite {
			rs.ReadWrite = append(rs.ReadWrite, r.Resolve(m.Source))
		} else {
			rs.ReadOnly = append(rs.ReadOnly, r.Resolve(m.Source))
		}
		// The minimal root fixes its top level, as bwrap's launcher does
		// (emit.FixedTop: only with namespaces, which the launcher checks).
		if m.FixedTop() {
			rs.FixedTop, rs.Unprotected = r.Resolve(m.Source), p.UnprotectedNames()
		}
	}
	// Each protected entry of a read-write grant, bound read-only over
	// itself in the minimal root: one host path however many targets.
	for _, pr := range p.Protected {
		if h := r.Resolve(pr.Source); !slices.Contains(rs.Protected, h) {
			rs.Protected = append(rs.Protected, h)
		}
	}
	slices.Sort(rs.Protected)
	// Landlock grants are a union: a read-only rule below a read-write one
	// changes nothing, so such a nesting would silently be read-write.
	for _, ro := range rs.ReadOnly {
		for _, rw := range rs.ReadWrite {
			if within(ro, rw) {
				return nil, &emit.NotEnforceableError{Pos: p.Pos, Field: p.Field("mounts"),
					Server: p.Server, Backend: Backend,
					Restriction: fmt.Sprintf("read-only %s inside read-write %s (Landlock rights add up: it would be writable)", ro, rw),
					Alternative: "use the bwrap or docker backend, or mount the outer folder read-only"}
			}
		}
	}
	if p.Workdir != "" {
		host, ok := hostPath(p, r, p.Workdir)
		if !ok {
			return nil, &emit.NotEnforceableError{Pos: p.Pos, Field: p.Field("workdir"),
				Server: p.Server, Backend: Backend, Restriction: fmt.Sprintf("workdir %s outside every mount (Landlock runs with host paths)", p.Workdir),
				Alternative: "set workdir to a mount target or a folder below one"}
		}
		rs.Workdir = host
	}
	rs.ToolPaths = toolPaths(p, r)
	// Landlock does not remap paths: every argument naming a sandbox
	// path under a mount (whole, or after "--flag=") becomes the host path
	// it shows, or the server would be told of a folder it cannot see.
	rs.Command = append([]string{}, p.Command...)
	for i, a := range rs.Command {
		rs.Command[i] = commandWord(p, r, i, a)
	}
	for _, s := range slices.Concat(rs.Baseline, rs.ReadOnly, rs.ReadWrite, rs.Protected, rs.Command) {
		if err := emit.CheckSafe(p.Server, "path or argument", s); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// commandWord maps a word naming a sandbox path under a mount (whole, or
// after "--flag=") to the host path it shows; a "~/..." word under no
// mount (a runtime pack's path) is the home's path (Plan.HomeWord).
func commandWord(p *compiler.Plan, r compiler.Resolver, i int, a string) string {
	if host, ok := hostPath(p, r, a); ok {
		return host
	}
	if flag, v, ok := strings.Cut(a, "="); ok && i > 0 && compiler.SandboxWord(v) {
		if host, ok := hostPath(p, r, v); ok {
			return flag + "=" + host
		}
	}
	return p.HomeWord(a, r)
}

// homeScratch refuses a "~/..." scratch target: Landlock's scratch is a
// tmpfs in its minimal root, or the server's private folder, at a fixed
// path, never below the home of the user who starts it.
func homeScratch(p *compiler.Plan) error {
	for _, s := range p.Tmpfs() {
		if compiler.InHome(s.Target) {
			return &emit.NotEnforceableError{Pos: s.Pos, Field: p.Field("scratch"), Server: p.Server, Backend: Backend,
				Restriction: fmt.Sprintf("scratch target %s below the home (Landlock's scratch is at a fixed path)", s.Target),
				Alternative: `use an absolute scratch target such as "/tmp", or the bwrap or docker backend`}
		}
	}
	return nil
}

// setEnv are the constant values, by name: HOME is the home of the user
// who starts the server when a target is "~/..." (unless the policy sets
// it), and a "~/..." value is the host path it shows (Landlock runs with
// host paths), or that home's path.
func setEnv(p *compiler.Plan, r compiler.Resolver) []artefact.EnvValue {
	var out []artefact.EnvValue
	values := p.EnvValues()
	if p.HomeTargets() && !slices.ContainsFunc(values, func(e compiler.EnvValue) bool { return e.Name == "HOME" }) {
		out = append(out, artefact.EnvValue{Name: "HOME", Value: compiler.HomePath("~", r)})
	}
	for _, e := range values {
		v := compiler.ResolveValue(e.Value, r)
		if host, ok := hostPath(p, r, v); ok && p.HomeTargets() && compiler.InHome(v) {
			v = host
		} else {
			v = p.HomeWord(v, r)
		}
		out = append(out, artefact.EnvValue{Name: e.Name, Value: v})
	}
	slices.SortStableFunc(out, func(a, b artefact.EnvValue) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// hostPath is where a sandbox path is on this host, rendered by r.
func hostPath(p *compiler.Plan, r compiler.Resolver, sandbox string) (string, bool) {
	hp, ok := p.HostPathOf(sandbox)
	if !ok {
		return "", false
	}
	return r.Resolve(hp), true
}

// within reports whether p is dir or below it (clean paths).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// toolPaths maps each path the tool surface's under constraints name to
// the host path the server sees there: a mount target's source, or the
// same path (a scratch target, a baseline path) where no mount remaps it.
func toolPaths(p *compiler.Plan, r compiler.Resolver) []artefact.PathMap {
	if p.Tools == nil {
		return nil
	}
	var out []artefact.PathMap
	for _, a := range p.Tools.Args {
		for _, u := range a.Under {
			if host, ok := hostPath(p, r, u); ok && host != u {
				out = append(out, artefact.PathMap{Sandbox: u, Host: host})
			}
		}
	}
	slices.SortFunc(out, func(a, b artefact.PathMap) int { return strings.Compare(a.Sandbox, b.Sandbox) })
	return slices.CompactFunc(out, func(a, b artefact.PathMap) bool { return a.Sandbox == b.Sandbox })
}
