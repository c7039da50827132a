// Package landlock lowers a plan into a Landlock ruleset: which host
// hierarchies the server may read, write and execute, what else is denied,
// and how it is started. Landlock does not remap paths: the server sees the
// host's paths, so mount targets only decide where the workdir and the
// command are found. The ruleset is applied by `mcpolicy exec` (package
// launch); this package only describes it, deterministically.
package landlock

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/schema"
)

// Backend is the name used in artefact paths and messages.
const Backend = "landlock"

// MinABI is the oldest Landlock ABI mcpolicy runs on: ABI 3 adds the
// truncate right; below it, truncate(2) is not controlled at all.
const MinABI = 3

// ScopeABI is the ABI that scopes abstract unix sockets and signals.
const ScopeABI = 6

// Devices every process may use: writes to /dev/null, reads of the others.
var (
	DevicesRW = []string{"/dev/null"}
	DevicesRO = []string{"/dev/zero", "/dev/random", "/dev/urandom"}
)

// Ruleset is what `mcpolicy exec` enforces for one server.
type Ruleset struct {
	Server    string   `json:"server"`
	Plan      string   `json:"plan"`
	Baseline  []string `json:"baseline"`  // read and execute; skipped where missing
	ReadOnly  []string `json:"readOnly"`  // read and execute, recursively
	ReadWrite []string `json:"readWrite"` // also create, write, remove, truncate
	DevicesRO []string `json:"devicesReadOnly"`
	DevicesRW []string `json:"devicesReadWrite"`
	// Scratch, with the landlock-scratch-dir degradation: a private
	// directory made at launch, writable, exported as TMPDIR.
	Scratch bool     `json:"scratch"`
	Network string   `json:"network"` // "none": an empty network namespace, else TCP denied
	Env     []string `json:"env"`
	User    string   `json:"user"`
	Workdir string   `json:"workdir,omitempty"`
	Command []string `json:"command"`
	Accept  []string `json:"accept"`
}

// Host is what the machine offers; enforceability depends on it.
type Host struct {
	ABI    int  // Landlock ABI version; 0 when Landlock is absent
	UserNS bool // unprivileged user (and so network) namespaces work
}

// Best is the host committed artefacts are checked against: everything the
// backend can use is there, so only the plan's own demands can fail.
var Best = Host{ABI: 7, UserNS: true}

// Build lowers a plan; r renders host paths.
func Build(p *compiler.Plan, r compiler.Resolver) (*Ruleset, error) {
	if err := emit.Check(p, Backend, Enforcement(p, Best)); err != nil {
		return nil, err
	}
	if len(p.Command) == 0 {
		return nil, &emit.NotEnforceableError{Pos: p.Pos, Server: p.Server, Backend: Backend,
			Restriction: "a server without a command", Alternative: `set "command" (the argv to run) in the policy`}
	}
	rs := &Ruleset{
		Server: p.Server, Plan: p.Hash, Baseline: append([]string{}, p.Runtime.ReadOnly...),
		ReadOnly: []string{}, ReadWrite: []string{},
		DevicesRO: DevicesRO, DevicesRW: DevicesRW, Scratch: p.Scratch != nil,
		Network: p.Network.Mode, Env: p.Env, User: p.User.String(), Accept: p.Accept,
	}
	for _, m := range p.Mounts {
		if m.Mode == compiler.ReadWrite {
			rs.ReadWrite = append(rs.ReadWrite, r.Resolve(m.Source))
		} else {
			rs.ReadOnly = append(rs.ReadOnly, r.Resolve(m.Source))
		}
	}
	// Landlock grants are a union: a read-only rule below a read-write one
	// changes nothing, so such a nesting would silently be read-write.
	for _, ro := range rs.ReadOnly {
		for _, rw := range rs.ReadWrite {
			if within(ro, rw) {
				return nil, &emit.NotEnforceableError{Pos: p.Pos, Field: schema.FieldPath("servers", p.Server, "mounts"),
					Server: p.Server, Backend: Backend,
					Restriction: fmt.Sprintf("read-only %s inside read-write %s (Landlock rights add up: it would be writable)", ro, rw),
					Alternative: "use the bwrap or docker backend, or mount the outer folder read-only"}
			}
		}
	}
	if p.Workdir != "" {
		host, ok := hostPath(p, r, p.Workdir)
		if !ok {
			return nil, &emit.NotEnforceableError{Pos: p.Pos, Field: schema.FieldPath("servers", p.Server, "workdir"),
				Server: p.Server, Backend: Backend, Restriction: fmt.Sprintf("workdir %s outside every mount (Landlock runs with host paths)", p.Workdir),
				Alternative: "set workdir to a mount target or a folder below one"}
		}
		rs.Workdir = host
	}
	rs.Command = append([]string{}, p.Command...)
	if host, ok := hostPath(p, r, p.Command[0]); ok {
		rs.Command[0] = host
	}
	for _, s := range append(append(append(append([]string{}, rs.Baseline...), rs.ReadOnly...), rs.ReadWrite...), rs.Command...) {
		if err := emit.CheckSafe(p.Server, "path or argument", s); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// hostPath maps a sandbox path at or below a mount target to the host path.
func hostPath(p *compiler.Plan, r compiler.Resolver, sandbox string) (string, bool) {
	best := -1
	for i, m := range p.Mounts {
		if sandbox == m.Target || strings.HasPrefix(sandbox, strings.TrimSuffix(m.Target, "/")+"/") {
			if best < 0 || len(m.Target) > len(p.Mounts[best].Target) {
				best = i
			}
		}
	}
	if best < 0 {
		return "", false
	}
	m := p.Mounts[best]
	return path.Join(r.Resolve(m.Source), strings.TrimPrefix(sandbox, m.Target)), true
}

// within reports whether p is dir or below it (clean paths).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// JSON renders the ruleset for review, with a trailing newline.
func (rs *Ruleset) JSON() []byte {
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		panic("internal error: ruleset does not marshal: " + err.Error())
	}
	return append(b, '\n')
}
