package compiler

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/baseline"
	"github.com/mcpolicy/mcpolicy/internal/bytesize"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
)

// Pack is a runtime pack the server uses (the schema's #Packs), recorded
// whole for review: what it adds is lowered into the plan's other fields
// too, but it is one grant. The reasons are the schema's, not part of the
// plan's JSON: rewording one changes no confinement.
type Pack struct {
	Name   string      `json:"name"`
	Paths  []PackPath  `json:"paths,omitempty"`
	Env    []PackEnv   `json:"env,omitempty"`
	Caches []PackCache `json:"caches,omitempty"`
	Proc   bool        `json:"proc,omitempty"`
	// Why is what the pack is for; ProcWhy, why its runtime reads /proc.
	Why     string       `json:"-"`
	ProcWhy string       `json:"-"`
	Pos     position.Pos `json:"-"`
}

// PackPath is a host path a pack reads, read-only, where it exists at
// spawn: absent ones are skipped, never created.
type PackPath struct {
	Path HostPath `json:"path"`
	Why  string   `json:"-"`
}

// PackEnv is a constant value a pack sets. A value below the home is
// written ${HOME}/..., expanded at spawn like the paths.
type PackEnv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Why   string `json:"-"`
}

// PackCache is a bounded scratch tmpfs a pack's runtime writes.
type PackCache struct {
	Target    string `json:"target"`
	SizeBytes int64  `json:"sizeBytes"`
	Why       string `json:"-"`
}

// packs lowers the server's packs, each once, sorted by name.
func (c *compiler) packs(s *schema.Server, at string, claim func(string, position.Pos, string)) []Pack {
	var out []Pack
	seen := map[string]bool{}
	for i, n := range s.Packs {
		field := fmt.Sprintf("%s.packs[%d]", at, i)
		if seen[n.Name] {
			c.fail(n.Pos, field, "", "runtime pack %q is listed twice", n.Name)
			continue
		}
		seen[n.Name] = true
		data, err := baseline.PackNamed(n.Name)
		if err != nil {
			c.fail(n.Pos, field, "", "%v", err)
			continue
		}
		out = append(out, c.pack(n, data, field, claim))
	}
	c.packEnvConflicts(s, out, at)
	// Sorted, as env and accept are: the order they are written in
	// changes nothing.
	slices.SortFunc(out, func(a, b Pack) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// pack lowers one pack's data; its cache targets are claimed like any
// other sandbox path, so a mount or the scratch cannot hold one too.
func (c *compiler) pack(n schema.PackName, data baseline.Pack, field string, claim func(string, position.Pos, string)) Pack {
	p := Pack{Name: n.Name, Proc: data.Proc, Why: data.Why, ProcWhy: data.ProcWhy, Pos: n.Pos}
	for _, pp := range data.Paths {
		p.Paths = append(p.Paths, PackPath{Path: packHostPath(pp.Path), Why: pp.Why})
	}
	for _, e := range data.Env {
		p.Env = append(p.Env, PackEnv{Name: e.Name, Value: packValue(e.Value), Why: e.Why})
	}
	for _, k := range data.Caches {
		size, err := bytesize.Parse(k.Size)
		if err != nil {
			c.fail(n.Pos, field, "", "runtime pack %s: cache %s: %v", n.Name, k.Target, err)
		}
		claim(k.Target, n.Pos, field+" (its cache "+k.Target+")")
		p.Caches = append(p.Caches, PackCache{Target: k.Target, SizeBytes: size, Why: k.Why})
	}
	return p
}

// packEnvConflicts refuses a name both passed through (env) and set by a
// pack, and two packs setting one name to different values.
func (c *compiler) packEnvConflicts(s *schema.Server, packs []Pack, at string) {
	set := map[string]string{}
	by := map[string]string{}
	for _, p := range packs {
		for _, e := range p.Env {
			if v, ok := set[e.Name]; ok && v != e.Value {
				c.fail(p.Pos, at+".packs", "use one of the two packs", "runtime packs %s and %s set %s to different values (%q, %q)", by[e.Name], p.Name, e.Name, v, e.Value)
			}
			set[e.Name], by[e.Name] = e.Value, p.Name
		}
	}
	for i, e := range s.Env {
		if p, ok := by[e.Name]; ok {
			c.fail(e.Pos, fmt.Sprintf("%s.env[%d]", at, i), "drop it from env: the pack's value is what the runtime needs in the sandbox",
				"environment variable %s is passed through and set by runtime pack %s (to %q)", e.Name, p, set[e.Name])
		}
	}
}

// packHostPath reads a pack's path: "~/..." is below the home of the user
// who starts the server, anything else absolute.
func packHostPath(p string) HostPath {
	if rel, ok := strings.CutPrefix(p, "~/"); ok {
		return HostPath{Base: Home, Rel: path.Clean(rel)}
	}
	return HostPath{Base: Absolute, Rel: path.Clean(p)}
}

// packValue writes a value naming a path below the home as the
// ${HOME} placeholder committed artefacts use.
func packValue(v string) string {
	if strings.HasPrefix(v, "~/") {
		return packHostPath(v).Placeholder()
	}
	return v
}

// PackPaths are the host paths every pack of the plan reads, each once,
// pack by pack.
func (p *Plan) PackPaths() []HostPath {
	var out []HostPath
	for _, pk := range p.Packs {
		for _, pp := range pk.Paths {
			if !slices.Contains(out, pp.Path) {
				out = append(out, pp.Path)
			}
		}
	}
	return out
}

// BaselinePaths are the host paths a host backend binds read-only where
// they exist, skipping the missing ones: the runtime's baseline, then the
// packs' paths rendered by r that the baseline does not already hold.
func (p *Plan) BaselinePaths(r Resolver) []string {
	out := append([]string{}, p.Runtime.ReadOnly...)
	for _, hp := range p.PackPaths() {
		if hp.Base == Absolute && slices.ContainsFunc(p.Runtime.ReadOnly, func(b string) bool { return within(hp.Rel, b) }) {
			continue
		}
		if s := r.Resolve(hp); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// PackNames are the names of the packs the plan uses.
func (p *Plan) PackNames() []string { return names(p.Packs, func(k Pack) string { return k.Name }) }

// Summary is a pack's grant line: what it adds, counted.
func (k Pack) Summary() string {
	parts := []string{Plural(len(k.Paths), "read-only host path")}
	if len(k.Env) > 0 {
		parts = append(parts, Plural(len(k.Env), "environment value"))
	}
	for _, c := range k.Caches {
		parts = append(parts, fmt.Sprintf("cache %s, %s", c.Target, bytesize.Format(c.SizeBytes)))
	}
	if k.Proc {
		parts = append(parts, "its own /proc")
	}
	return k.Name + ": " + strings.Join(parts, ", ")
}

// explainPacks writes every entry of the plan's packs with its reason.
func explainPacks(b *strings.Builder, p *Plan) {
	if len(p.Packs) == 0 {
		return
	}
	b.WriteString("\nRuntime packs (one grant each; a path missing on a machine is skipped, never created):\n")
	for _, k := range p.Packs {
		fmt.Fprintf(b, "  %s: %s\n", k.Name, k.Why)
		for _, pp := range k.Paths {
			fmt.Fprintf(b, "    ro     %s: %s\n", pp.Path, pp.Why)
		}
		for _, e := range k.Env {
			fmt.Fprintf(b, "    env    %s=%s: %s\n", e.Name, e.Value, e.Why)
		}
		for _, c := range k.Caches {
			fmt.Fprintf(b, "    cache  %s, %s: %s\n", c.Target, bytesize.Format(c.SizeBytes), c.Why)
		}
		if k.Proc {
			fmt.Fprintf(b, "    proc   its own /proc: %s\n", k.ProcWhy)
		}
	}
}

// EnvValues are the constant values the server's environment gets, sorted
// by name: the policy's setenv, and each runtime pack's value the policy
// does not set itself (its own value wins). A value below the home is
// ${HOME}/..., which the launcher expands at spawn.
func (p *Plan) EnvValues() []EnvValue {
	out := append([]EnvValue{}, p.SetEnv...)
	for _, k := range p.Packs {
		for _, e := range k.Env {
			if !slices.ContainsFunc(out, func(v EnvValue) bool { return v.Name == e.Name }) {
				out = append(out, EnvValue{Name: e.Name, Value: e.Value, Pos: k.Pos})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b EnvValue) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ResolveValue renders a constant value by r: one that is, or lies below,
// ${HOME} or ${PROJECT_ROOT} (a runtime pack's, below the home) becomes
// that path of r's machine; any other stays as written.
func ResolveValue(v string, r Resolver) string {
	for _, b := range []Base{Home, ProjectRoot} {
		ph := "${" + string(b) + "}"
		if v == ph {
			return r.Resolve(HostPath{Base: b, Rel: "."})
		}
		if rest, ok := strings.CutPrefix(v, ph+"/"); ok {
			return r.Resolve(HostPath{Base: b, Rel: path.Clean(rest)})
		}
	}
	return v
}

// Tmpfs are every bounded tmpfs the sandbox gets: the scratch ones, then
// each runtime pack's caches.
func (p *Plan) Tmpfs() []Scratch {
	out := p.Scratches()
	for _, k := range p.Packs {
		for _, c := range k.Caches {
			out = append(out, Scratch{Target: c.Target, SizeBytes: c.SizeBytes, Pos: k.Pos})
		}
	}
	return out
}
