package cli

// The --format json output of build and explain (args prints JSON
// only). Shapes are documented in docs/commands.md; keys are lowercase
// and a position is {"file", "line", "col"}, as in every other command's
// JSON (TestGrammarJSON).

import (
	"encoding/json"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/seccomp"
)

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// relPos is a position with its file relative to the project root, as
// lint and why write it.
func relPos(root string, p position.Pos) position.Pos {
	if filepath.IsAbs(p.File) && root != "" {
		if r, err := filepath.Rel(root, p.File); err == nil && !strings.HasPrefix(r, "..") {
			p.File = filepath.ToSlash(r)
		}
	}
	return p
}

// buildJSON is build --format json: the output folder, the servers
// built and the files written (relative to it, sorted).
type buildJSON struct {
	Out     string   `json:"out"`
	Servers []string `json:"servers"`
	Files   []string `json:"files"`
}

func writeBuildJSON(w io.Writer, dir string, plans []*compiler.Plan, files map[string][]byte) error {
	out := buildJSON{Out: dir, Servers: []string{}, Files: []string{}}
	for _, p := range plans {
		out.Servers = append(out.Servers, p.Server)
	}
	for f := range files {
		out.Files = append(out.Files, f)
	}
	sort.Strings(out.Files)
	return writeJSON(w, out)
}

// buildCheckJSON is build --check --format json: "current", "stale" or
// "tampered", and the files of each kind (relative to the output folder).
type buildCheckJSON struct {
	Out      string   `json:"out"`
	State    string   `json:"state"`
	Missing  []string `json:"missing"`
	Stale    []string `json:"stale"`
	Extra    []string `json:"extra"`
	Tampered []string `json:"tampered"`
}

func writeBuildCheckJSON(w io.Writer, dir string, d *project.Drift) error {
	out := buildCheckJSON{Out: dir, State: "current", Missing: orEmpty(d.Missing), Stale: orEmpty(d.Stale),
		Extra: orEmpty(d.Extra), Tampered: orEmpty(d.Tampered)}
	switch {
	case len(d.Tampered) > 0:
		out.State = "tampered"
	case !d.Empty():
		out.State = "stale"
	}
	return writeJSON(w, out)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// explainJSON is explain --format json: each selected server's grants,
// numbered as the text numbers them (the n-th is grants[n-1]), the
// secret-looking files it can read and carry away, and with --backend
// what that backend enforces of the plan here.
type explainJSON struct {
	Servers []explainServer `json:"servers"`
}

type explainServer struct {
	Server      string          `json:"server"`
	Pos         position.Pos    `json:"pos"`
	Description string          `json:"description,omitempty"`
	Plan        string          `json:"plan"`
	Backends    []string        `json:"backends"`
	Grants      []explainGrant  `json:"grants"`
	Secrets     []explainSecret `json:"secrets"`
	Enforcement *explainBackend `json:"enforcement,omitempty"`
}

type explainGrant struct {
	Kind    string       `json:"kind"`
	Summary string       `json:"summary"`
	Pos     position.Pos `json:"pos"`
}

type explainSecret struct {
	Path    string       `json:"path"` // on this machine
	At      string       `json:"at"`   // in the sandbox
	Fix     string       `json:"fix"`
	Pos     position.Pos `json:"pos"` // the mount's
	Warning string       `json:"warning"`
}

type explainBackend struct {
	Backend string       `json:"backend"`
	Rows    []explainRow `json:"rows"`
	// Syscalls are what mcpolicy's seccomp filter takes away, on the
	// backends that load it (bwrap, landlock).
	Syscalls []explainSyscall `json:"syscalls,omitempty"`
	// Refused: the backend refuses the plan here, and why.
	Refused string `json:"refused,omitempty"`
}

type explainRow struct {
	Restriction string       `json:"restriction"`
	Support     string       `json:"support"`
	How         string       `json:"how"`
	Degradation string       `json:"degradation,omitempty"`
	Alternative string       `json:"alternative,omitempty"`
	Field       string       `json:"field,omitempty"`
	Pos         position.Pos `json:"pos,omitzero"`
}

type explainSyscall struct {
	Name   string `json:"name"`
	Action string `json:"action"`
	Reason string `json:"reason"`
}

func writeExplainJSON(w io.Writer, root, backend string, plans []*compiler.Plan) error {
	out := explainJSON{Servers: []explainServer{}}
	home, _ := os.UserHomeDir()
	for _, p := range plans {
		s := explainServer{Server: p.Server, Pos: relPos(root, p.Pos), Description: p.Description, Plan: p.Hash,
			Backends: p.Backends, Grants: []explainGrant{}, Secrets: []explainSecret{}}
		for _, g := range p.Grants() {
			s.Grants = append(s.Grants, explainGrant{Kind: string(g.Kind), Summary: g.Summary, Pos: relPos(root, g.Pos)})
		}
		for _, r := range compiler.ReadableSecrets(p, compiler.Machine{ProjectRoot: root, Home: home}) {
			s.Secrets = append(s.Secrets, explainSecret{Path: r.Host, At: path.Join(r.Mount.Target, r.Rel), Fix: r.Fix(),
				Pos: relPos(root, r.Mount.Pos), Warning: r.Warning(p)})
		}
		if backend != "" {
			e, err := explainEnforcement(p, root, backend)
			if err != nil {
				return err
			}
			s.Enforcement = e
		}
		out.Servers = append(out.Servers, s)
	}
	return writeJSON(w, out)
}

func explainEnforcement(p *compiler.Plan, root, backend string) (*explainBackend, error) {
	rows, err := enforcement(p, backend)
	if err != nil {
		return nil, err
	}
	e := &explainBackend{Backend: backend, Rows: []explainRow{}}
	for _, r := range rows {
		e.Rows = append(e.Rows, explainRow{Restriction: string(r.Restriction), Support: string(r.Support), How: r.How,
			Degradation: r.Degradation, Alternative: r.Alternative, Field: r.Field, Pos: relPos(root, r.Pos)})
	}
	if loadsSeccomp(backend) {
		for _, r := range seccomp.Rules(seccomp.Options{}) {
			e.Syscalls = append(e.Syscalls, explainSyscall{Name: r.Name, Action: r.Action, Reason: r.Reason})
		}
	}
	if err := emit.Check(p, backend, rows); err != nil {
		e.Refused = err.Error()
	}
	return e, nil
}

// loadsSeccomp: the launcher loads mcpolicy's seccomp filter with the
// backend's artefact (a bwrap spec, a Landlock ruleset), as printSyscalls
// lists it.
func loadsSeccomp(backend string) bool {
	b, err := registry.Lookup(backend)
	if err != nil {
		return false
	}
	k := b.Runtime().Sandbox
	return k == artefact.Bwrap || k == artefact.Landlock
}
