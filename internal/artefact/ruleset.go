package artefact

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"

	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
)

// MinABI is the oldest Landlock ABI mcpolicy runs on: ABI 3 adds the
// truncate right; below it, truncate(2) is not controlled at all.
const MinABI = 3

// ScopeABI is the ABI that scopes abstract unix sockets and signals.
const ScopeABI = 6

// Degradations a policy may accept for this backend (see the schema).
const (
	AcceptTCPOnly    = "landlock-tcp-only"
	AcceptNoScope    = "landlock-no-scope"
	AcceptScratchDir = "landlock-scratch-dir"
	// AcceptUnixSockets: without namespaces the host's named unix sockets
	// (/run/docker.sock, D-Bus, ssh-agent...) stay reachable; Landlock has
	// no right for connect(2) to a path.
	AcceptUnixSockets = "landlock-unix-sockets"
)

// Ruleset is what the launcher enforces for one server. Committed
// artefacts hold it with ${PROJECT_ROOT} and ${HOME} placeholders.
type Ruleset struct {
	Server    string   `json:"server"`
	Plan      string   `json:"plan"`
	Baseline  []string `json:"baseline"`  // read and execute; skipped where missing
	ReadOnly  []string `json:"readOnly"`  // read and execute, recursively
	ReadWrite []string `json:"readWrite"` // also create, write, remove, truncate
	// FixedTop is the read-write grant of the project root, whose top
	// level the launcher fixes in its minimal root: the folder bound
	// read-only and each entry present at launch bound again on top,
	// read-write unless a protected name not in Unprotected. Landlock's
	// rights on it stay read-write; the read-only mount refuses new names.
	FixedTop    string   `json:"fixedTop,omitempty"`
	Unprotected []string `json:"unprotected,omitempty"`
	// Protected are the protected entries of the other read-write grants
	// (host paths), each bound read-only over itself in the minimal root;
	// one missing at launch is skipped.
	Protected []string `json:"protected,omitempty"`
	DevicesRO []string `json:"devicesReadOnly"`
	DevicesRW []string `json:"devicesReadWrite"`
	// Scratch is a bounded tmpfs mounted over this host path in a private
	// mount namespace (or, with landlock-scratch-dir and no namespaces, a
	// private directory exported as TMPDIR).
	Scratch     string `json:"scratch,omitempty"`
	ScratchSize int64  `json:"scratchSize,omitempty"`
	// Proc: a procfs of the server's own PID namespace at /proc, read-only
	// (the launcher's namespaces only: without them the launch is refused,
	// never the host's /proc granted).
	Proc bool `json:"proc,omitempty"`
	// MoreScratch are the other scratch tmpfs, each over its host path in
	// the minimal root; they need namespaces (no private directory
	// stands in for them).
	MoreScratch []ScratchTmpfs `json:"moreScratch,omitempty"`
	Network     string         `json:"network"` // "none"
	Env         []string       `json:"env"`     // names passed through
	// SetEnv are the policy's constant values, set after everything else
	// the server's environment holds: they win.
	SetEnv  []EnvValue `json:"setEnv,omitempty"`
	User    string     `json:"user"`
	Workdir string     `json:"workdir,omitempty"`
	Command []string   `json:"command"`
	Accept  []string   `json:"accept"`
	// ProgramPins: as BwrapSpec's.
	ProgramPins []string `json:"programPins,omitempty"`
	// Tools: as BwrapSpec's.
	Tools string `json:"tools,omitempty"`
	// ToolPaths are the sandbox paths the tool surface's path constraints
	// (under) name, each with the host path the server sees there:
	// Landlock does not remap paths, so the relay holds a path argument
	// to the host paths (LocalTools). Sorted by Sandbox.
	ToolPaths []PathMap `json:"toolPaths,omitempty"`
	// Hidden are the hidden paths below the grants (mounts[].hide): the
	// launcher expands each in the minimal root and masks every match
	// (user namespaces only: without them the launch is refused).
	Hidden []HiddenPath `json:"hidden,omitempty"`
}

// HiddenPath is one hidden pattern below a granted host path.
type HiddenPath struct {
	Source  string `json:"source"`  // the grant's host path
	Pattern string `json:"pattern"` // below it; its last element may be a glob
}

// ScratchTmpfs is one more bounded tmpfs of a ruleset.
type ScratchTmpfs struct {
	Target string `json:"target"`
	Size   int64  `json:"size"`
}

// ScratchTargets are the host paths of every scratch tmpfs, the first first.
func (rs *Ruleset) ScratchTargets() []string {
	if rs.Scratch == "" {
		return nil
	}
	out := []string{rs.Scratch}
	for _, s := range rs.MoreScratch {
		out = append(out, s.Target)
	}
	return out
}

// EnvValue is one variable a policy sets to a constant value (setenv).
type EnvValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// WithSetEnv returns environ (NAME=value entries) with each of set in place
// of any entry of the same name: the policy's value wins.
func WithSetEnv(environ []string, set []EnvValue) []string {
	if len(set) == 0 {
		return environ
	}
	names := map[string]bool{}
	for _, e := range set {
		names[e.Name] = true
	}
	out := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			out = append(out, kv)
		}
	}
	for _, e := range set {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

// Accepts reports whether the policy accepted the named degradation.
func (rs *Ruleset) Accepts(name string) bool {
	for _, a := range rs.Accept {
		if a == name {
			return true
		}
	}
	return false
}

// JSON renders the ruleset for review, with a trailing newline.
func (rs *Ruleset) JSON() []byte {
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		panic("internal error: ruleset does not marshal: " + err.Error())
	}
	return append(b, '\n')
}

// Expand replaces the ${PROJECT_ROOT} and ${HOME} placeholders a
// committed ruleset holds at the start of its paths, its workdir and its
// command's words (a flag's value too: --dir=${PROJECT_ROOT}/x). Both
// values must be absolute: an empty one would turn "${HOME}/x" into "/x".
func (rs *Ruleset) Expand(projectRoot, home string) error {
	var bad error
	fix := func(p string) string {
		for ph, v := range map[string]string{"${PROJECT_ROOT}": projectRoot, "${HOME}": home} {
			if p == ph || strings.HasPrefix(p, ph+"/") {
				if !filepath.IsAbs(v) {
					bad = fmt.Errorf("%s in %s needs an absolute value, got %q", ph, p, v)
				}
				return v + strings.TrimPrefix(p, ph)
			}
		}
		return p
	}
	for _, list := range [][]string{rs.Baseline, rs.ReadOnly, rs.ReadWrite, rs.Protected} {
		for i := range list {
			list[i] = fix(list[i])
		}
	}
	for i := range rs.Hidden {
		rs.Hidden[i].Source = fix(rs.Hidden[i].Source)
	}
	rs.FixedTop, rs.Workdir = fix(rs.FixedTop), fix(rs.Workdir)
	for i := range rs.ToolPaths {
		rs.ToolPaths[i].Host = fix(rs.ToolPaths[i].Host)
	}
	for i := range rs.SetEnv { // a runtime pack's value below the home
		rs.SetEnv[i].Value = fix(rs.SetEnv[i].Value)
	}
	for i, a := range rs.Command {
		if flag, v, ok := strings.Cut(a, "="); ok && i > 0 && strings.HasPrefix(v, "${") {
			rs.Command[i] = flag + "=" + fix(v)
		} else {
			rs.Command[i] = fix(a)
		}
	}
	return bad
}

// RulesetBackend is the backend whose artefacts are rulesets: the name a
// launch of one records (writereport).
const RulesetBackend = backendtraits.Landlock

// LSM is Landlock's name in the kernel's list of security modules
// (/sys/kernel/security/lsm).
const LSM = backendtraits.Landlock

// PathMap is a sandbox path and the host path a Landlock server sees for
// it (a ${PROJECT_ROOT}/${HOME} placeholder until Expand).
type PathMap struct {
	Sandbox string `json:"sandbox"`
	Host    string `json:"host"`
}

// LocalTools is the tool surface as a server under this ruleset sees its
// paths: each under path a ToolPaths entry names becomes its host path,
// and a relative argument resolves against the ruleset's (host) workdir.
// Without a path constraint the surface is returned as it is.
func (rs *Ruleset) LocalTools(p *toolpolicy.Policy) *toolpolicy.Policy {
	if p == nil || len(p.Args) == 0 {
		return p
	}
	c := *p
	c.Args = make([]toolpolicy.ArgRule, len(p.Args))
	for i, a := range p.Args {
		if len(a.Under) > 0 {
			under := make([]string, len(a.Under))
			for j, u := range a.Under {
				under[j] = u
				for _, m := range rs.ToolPaths {
					if m.Sandbox == u {
						under[j] = m.Host
					}
				}
			}
			a.Under = under
			if a.Workdir != "" {
				a.Workdir = rs.Workdir
			}
		}
		c.Args[i] = a
	}
	return &c
}
