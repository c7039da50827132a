// Package project is the repository-level job: find the policies under a
// folder, compile them, render every artefact into a deterministic output
// folder, and tell whether an existing output folder is stale.
package project

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/parallel"
	"github.com/mcpolicy/mcpolicy/schema"
)

// DefaultOut is the output folder, relative to the project root.
const DefaultOut = ".mcpolicy"

// PolicyDir holds extra policy files beside (or instead of) mcpolicy.*.
const PolicyDir = "mcpolicy.d"

// Project is a set of policies and the root their relative paths start from.
type Project struct {
	Root  string   // absolute
	Files []string // as the user would name them (joined to the path given)
}

// Discover finds the policies at p: a policy file, or a folder holding
// mcpolicy.{cue,json,yaml,yml,jsonnet} and/or files under mcpolicy.d/.
func Discover(p string) (*Project, error) {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, &NoPolicyError{Path: p, Missing: true}
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		root, err := filepath.Abs(filepath.Dir(p))
		if err != nil {
			return nil, err
		}
		return &Project{Root: root, Files: []string{p}}, nil
	}
	root, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	proj := &Project{Root: root}
	for _, ext := range schema.Extensions {
		f := filepath.Join(p, "mcpolicy"+ext)
		// Lstat: a link that leads nowhere (a loop, a dangling one) is
		// still a policy file the user named, reported when read, not
		// silently skipped.
		if _, err := os.Lstat(f); err == nil {
			proj.Files = append(proj.Files, f)
		}
	}
	entries, err := os.ReadDir(filepath.Join(p, PolicyDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() && isPolicyFile(e.Name()) {
			proj.Files = append(proj.Files, filepath.Join(p, PolicyDir, e.Name()))
		}
	}
	if len(proj.Files) == 0 {
		return nil, &NoPolicyError{Path: p}
	}
	return proj, nil
}

// NoPolicyError is a path that holds no policy: it does not exist, or it
// is a folder with no mcpolicy.* and no policy file under mcpolicy.d/.
type NoPolicyError struct {
	Path    string
	Missing bool // the path does not exist
}

func (e *NoPolicyError) Error() string {
	looked := "mcpolicy." + strings.Join(extNames(), "|") + ", " + PolicyDir + "/*"
	if e.Missing {
		return fmt.Sprintf("no policy at %s: it does not exist (looked for %s); hint: -p names a policy file or the folder that holds one (default: the current folder)", e.Path, looked)
	}
	return fmt.Sprintf("no policy at %s (looked for %s); hint: run mcpolicy in the folder that holds the policy, or name it with -p FILE|DIR; to start one, see docs/policy.md or turn a client's entries into one with `mcpolicy import`", e.Path, looked)
}

// extNames are schema.Extensions without their dots.
func extNames() []string {
	var out []string
	for _, e := range schema.Extensions {
		out = append(out, strings.TrimPrefix(e, "."))
	}
	return out
}

func isPolicyFile(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, e := range schema.Extensions {
		if ext == e {
			return true
		}
	}
	return false
}

// Load validates every policy of the project; all files' errors are
// reported together.
func (p *Project) Load() ([]*schema.Policy, error) {
	var pols []*schema.Policy
	var errs schema.Errors
	for _, f := range p.Files {
		pol, err := schema.Load(f, p.Root)
		var se schema.Errors
		switch {
		case errors.As(err, &se):
			errs = append(errs, se...)
		case err != nil:
			return nil, err
		default:
			pols = append(pols, pol)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return pols, nil
}

// Writable are the host folders a server of the project may have written:
// the project itself (its most common grant, and where commands write by
// default) and every read-write mount source of plans. mcpolicy follows
// no symlink below them on the way to a file it writes or removes
// (hostfile): a link there may be a server's.
func (p *Project) Writable(plans []*compiler.Plan, home string) []string {
	return append([]string{p.Root}, p.Granted(plans, home)...)
}

// Granted are the read-write mount sources of plans: the host folders a
// server of the project may write now (Writable adds the project itself).
func (p *Project) Granted(plans []*compiler.Plan, home string) []string {
	m := compiler.Machine{ProjectRoot: p.Root, Home: home}
	var out []string
	for _, pl := range plans {
		out = append(out, pl.WritableSources(m)...)
	}
	return out
}

// Compile loads and compiles the project.
func (p *Project) Compile(home string) ([]*compiler.Plan, error) {
	pols, err := p.Load()
	if err != nil {
		return nil, err
	}
	return compiler.Compile(pols, compiler.Options{Root: p.Root, Home: home})
}

// Manifest indexes the output folder: one entry per server with its hash.
type Manifest struct {
	Generator string          `json:"generator"`
	Schema    string          `json:"schema"`
	Note      string          `json:"note"`
	Servers   []ManifestEntry `json:"servers"`
}

// ManifestEntry is one server of the manifest.
type ManifestEntry struct {
	Name      string            `json:"name"`
	Policy    string            `json:"policy"`
	Hash      string            `json:"hash"`
	Grants    int               `json:"grants"`
	Artefacts map[string]string `json:"artefacts"`
}

const manifestNote = "Generated by `mcpolicy build`; do not edit. ${PROJECT_ROOT} stands for the folder holding the policies, ${HOME} for the user's home folder."

// Artefacts renders every output file, keyed by slash path relative to the
// output folder. The same plans always give the same bytes.
func Artefacts(plans []*compiler.Plan) (map[string][]byte, error) {
	out := map[string][]byte{}
	m := Manifest{Generator: "mcpolicy", Schema: schema.Version, Note: manifestNote, Servers: []ManifestEntry{}}
	// Each plan renders on its own (the backends read nothing but the
	// plan): in parallel, collected in the plans' order.
	type rendered struct {
		json  []byte
		grant int
		files [][]emit.File
		errs  []error
	}
	r := make([]rendered, len(plans))
	parallel.For(len(plans), func(i int) {
		p := plans[i]
		r[i] = rendered{json: p.JSON(), grant: len(p.Grants()), files: make([][]emit.File, len(p.Backends))}
		for j, backend := range p.Backends {
			files, err := render(p, backend)
			if err != nil {
				r[i].errs = append(r[i].errs, err)
				continue
			}
			r[i].files[j] = files
		}
	})
	var errs []error
	for i, p := range plans {
		e := ManifestEntry{Name: p.Server, Policy: p.PolicyFile, Hash: p.Hash, Grants: r[i].grant, Artefacts: map[string]string{}}
		planFile := path.Join("plan", p.Server+".json")
		out[planFile] = r[i].json
		e.Artefacts["plan"] = planFile
		// The tool surface the relay enforces: one file whatever the
		// backends, whose digest each backend's artefact carries.
		if tools, _ := emit.ToolsFile(p); tools != nil {
			name := artefact.ToolsPath(p.Server)
			out[name] = tools
			e.Artefacts["tools"] = name
		}
		errs = append(errs, r[i].errs...)
		for j, backend := range p.Backends {
			files := r[i].files[j]
			if files == nil {
				continue
			}
			for _, f := range files {
				out[f.Name] = f.Data
			}
			e.Artefacts[backend] = files[0].Name
		}
		m.Servers = append(m.Servers, e)
	}
	errs = append(errs, checkAcross(plans)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	out["manifest.json"] = append(b, '\n')
	return out, nil
}

// checkAcross asks each backend whose servers' artefacts share a place
// (emit.Across) about the plans it builds.
func checkAcross(plans []*compiler.Plan) []error {
	var errs []error
	for _, name := range registry.Names() {
		b, err := registry.Lookup(name)
		if err != nil {
			continue
		}
		a, ok := b.(emit.Across)
		if !ok {
			continue
		}
		var built []*compiler.Plan
		for _, p := range plans {
			if slices.Contains(p.Backends, name) {
				built = append(built, p)
			}
		}
		if err := a.CheckAcross(built); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// render emits one backend's artefacts for a plan, main file first, with
// machine-neutral paths.
func render(p *compiler.Plan, name string) ([]emit.File, error) {
	b, err := registry.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", p.Server, err)
	}
	return b.Artefacts(p, DefaultOut)
}

// Write replaces the output folder's artefacts with files. Each file is
// written to a temporary name and renamed, so no reader sees half a file;
// files the build no longer produces are removed. untrusted are the
// folders a server may write (hostfile.WriteFile): below them no symlink
// on the way to an artefact is followed, for a write or a removal.
func Write(outDir string, files map[string][]byte, untrusted []string) error {
	existing, err := listFiles(outDir)
	if err != nil {
		return err
	}
	guard := hostfile.NewGuard(untrusted) // once: a build writes files for every server
	guard.Hold()
	defer guard.Release()
	// Each file on its own (read back, written if it changed), in parallel.
	names := sortedKeys(files)
	errs := make([]error, len(names))
	parallel.For(len(names), func(i int) {
		target := filepath.Join(outDir, filepath.FromSlash(names[i]))
		if guard.Holds(target, files[names[i]]) {
			return
		}
		errs[i] = guard.WriteFile(target, files[names[i]], 0o644)
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for _, name := range existing {
		if _, keep := files[name]; !keep {
			if err := guard.Remove(filepath.Join(outDir, filepath.FromSlash(name))); err != nil {
				return err
			}
		}
	}
	return nil
}

// Drift is how an output folder differs from what a build would write.
type Drift struct {
	Missing  []string // would be written
	Stale    []string // content differs: the plan changed
	Tampered []string // content differs, but for the same plan: edited by something else than a build
	Extra    []string // would be removed
}

// Empty reports whether the output is up to date.
func (d Drift) Empty() bool { return len(d.Missing)+len(d.Stale)+len(d.Tampered)+len(d.Extra) == 0 }

var planHash = lazyre.New(`sha256:[0-9a-f]{64}`)

// sameHashes reports whether two renderings name the same plan hashes:
// every artefact carries the hash of the plan it was built from.
func sameHashes(old, new []byte) bool {
	a, b := planHash.Regexp().FindAll(old, -1), planHash.Regexp().FindAll(new, -1)
	if len(b) == 0 || len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// Check compares the output folder with files, writing nothing.
func Check(outDir string, files map[string][]byte) (Drift, error) {
	var d Drift
	existing, err := listFiles(outDir)
	if err != nil {
		return d, err
	}
	have := map[string]bool{}
	for _, n := range existing {
		have[n] = true
		if _, ok := files[n]; !ok {
			d.Extra = append(d.Extra, n)
		}
	}
	for _, name := range sortedKeys(files) {
		if !have[name] {
			d.Missing = append(d.Missing, name)
			continue
		}
		// Regular, bounded and without waiting: a server that can write
		// the output folder swapped in a FIFO or a link to /dev/zero
		// after listFiles saw a file (pre-commit runs --check).
		old, err := hostfile.ReadRegular(filepath.Join(outDir, filepath.FromSlash(name)), hostfile.MaxArtefact)
		if err != nil {
			return d, err
		}
		switch {
		case bytes.Equal(old, files[name]):
		case sameHashes(old, files[name]):
			d.Tampered = append(d.Tampered, name)
		default:
			d.Stale = append(d.Stale, name)
		}
	}
	return d, nil
}

// listFiles returns the regular files under dir as sorted slash paths; a
// missing dir has none.
func listFiles(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return fs.SkipAll
			}
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(names)
	return names, err
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// MarkUnbuildable sets each target's Unbuildable to its plan's Problems,
// the targets in parallel.
func MarkUnbuildable(targets []*readback.Target) {
	parallel.For(len(targets), func(i int) {
		if targets[i].Plan != nil {
			targets[i].Unbuildable = Problems(targets[i].Plan)
		}
	})
}

// Problems says, for each backend the plan lists, why that backend cannot
// build it (lint reports them: a policy that does not build is not clean).
func Problems(p *compiler.Plan) []readback.Problem {
	var out []readback.Problem
	for _, backend := range p.Backends {
		_, err := render(p, backend)
		if err == nil {
			continue
		}
		pr := readback.Problem{Pos: p.Pos, Msg: err.Error()}
		var ne *emit.NotEnforceableError
		if errors.As(err, &ne) {
			pr.Msg = fmt.Sprintf("%s is not enforceable by backend %s", ne.Restriction, ne.Backend)
			if ne.Field != "" {
				pr.Pos = ne.Pos
			}
			if ne.Alternative != "" {
				pr.Msg += "; " + ne.Alternative
			}
		}
		out = append(out, pr)
	}
	return out
}
