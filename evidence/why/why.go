// Package why answers, from compiled plans alone, whether a server can
// reach one thing — a host path, a path inside its sandbox, a host:port,
// an environment variable — on each backend it is built for: how (read,
// write, exec, connect), through which grant (with the grant's position in
// the policy), and otherwise what stops it (no grant, a read-only mount,
// a protected name, the fixed top level, the read-only root, network none,
// the egress proxy's allowlist, its private-address rule).
//
// Each backend says what it makes of a plan through the emit.View it
// implements beside its emitter (the registry, emit/registry, finds it):
// how paths are named and combine (mounts at their targets, the deepest
// deciding, a read-only mount inside a read-write one staying read-only
// and a protected entry of a read-write mount a read-only bind on top; or
// host paths whose rights add up; or host paths the deepest rule
// decides), what of the host it shows besides the grants (a runtime
// baseline such as /usr, devices; an image's own files instead), how its
// scratch is mounted, what its environment holds and how its network is
// left. why models those layers and asks no backend by name.
// Destinations go through the egress proxy's own matcher (package
// allowlist). Symlinks are followed on this machine when the path exists
// here, and the answer says so.
//
// The package reads nothing but the plans, the target and, when
// Machine.FS is set, this machine's file system (symlinks, which entries
// of a fixed top level exist).
package why

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/position"
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
	Server    string       `json:"server"`
	Pos       position.Pos `json:"pos"`
	Plan      string       `json:"plan"`
	Reachable bool         `json:"reachable"` // on at least one backend
	Backends  []Verdict    `json:"backends"`
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
	Kind    string       `json:"kind"`
	Summary string       `json:"summary"`
	Pos     position.Pos `json:"pos"`
}

// Stop is one thing that takes access away.
type Stop struct {
	Rule   string       `json:"rule"`
	Detail string       `json:"detail"`
	Pos    position.Pos `json:"pos,omitzero"`
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
	StopCredential  = "credential" // the server holds a placeholder
	StopRefused     = "backend-refuses"
	StopNoExec      = "noexec"
	StopAbsentProt  = "protected-absent" // not a stop: a name that can be created
	StopPortMissing = "other-port"
	// StopHidden (hidden.go): a mount's hide entry masks it.
)

// Ask answers t for each plan, on each backend that runs its artefacts
// (podman beside docker), or only on backend when it is not empty.
func Ask(plans []*compiler.Plan, t Target, m Machine, backend string) (*Answer, error) {
	a := &Answer{Target: t}
	real, err := a.resolve(m)
	if err != nil {
		return nil, err
	}
	if backend != "" {
		if _, err := registry.Lookup(backend); err != nil {
			return nil, err
		}
	}
	for _, p := range plans {
		sa := ServerAnswer{Server: p.Server, Pos: m.pos(p.Pos), Plan: p.Hash, Backends: []Verdict{}}
		for _, be := range planBackends(p) {
			if backend != "" && be.Name() != backend {
				continue
			}
			v := verdict(p, m, be, t, real, a)
			sa.Reachable = sa.Reachable || v.Reachable
			sa.Backends = append(sa.Backends, v)
		}
		a.Servers = append(a.Servers, sa)
	}
	a.Notes = dedup(a.Notes)
	return a, nil
}

// resolve fills the answer's Resolved and the notes it depends on; for a
// host path it returns the real path answered for.
func (a *Answer) resolve(m Machine) (real string, err error) {
	t := a.Target
	switch t.Kind {
	case HostPath:
		var notes []string
		real, notes = m.realPath(t.Path)
		a.Resolved = m.show(real)
		a.Notes = append(a.Notes, notes...)
	case SandboxPath:
		a.Resolved = t.Path
		if inProc(t.Path) {
			a.Notes = append(a.Notes, procNote)
		}
	case Destination:
		h, err := allowlist.Canonical(t.Host)
		if err != nil {
			return "", fmt.Errorf("%s: not a host name: %v", t.Raw, err)
		}
		a.Resolved = net.JoinHostPort(h, strconv.Itoa(t.Port))
		if h != strings.ToLower(t.Host) {
			a.Notes = append(a.Notes, fmt.Sprintf("%s is spelled %s as the proxy compares names (IDNA, lower case, no trailing dot)", t.Host, h))
		}
	case EnvName:
		a.Resolved = t.Name
	default:
		return "", fmt.Errorf("unknown target kind %q", t.Kind)
	}
	return real, nil
}

// verdict answers t for plan p on one backend; real is the host path
// answered for, and a collects the notes of the sandbox's symlinks.
func verdict(p *compiler.Plan, m Machine, be emit.Backend, t Target, real string, a *Answer) Verdict {
	v := Verdict{Backend: be.Name(), Access: []Access{}}
	if err := be.Check(p); err != nil {
		v.Refused = strings.ReplaceAll(err.Error(), m.ProjectRoot+string(filepath.Separator), "")
		v.Stops = append(v.Stops, Stop{Rule: StopRefused, Detail: "the backend refuses this plan at compile time: nothing runs on it"})
		return v
	}
	e := newEval(p, m, be)
	switch t.Kind {
	case HostPath:
		e.hostPath(&v, real)
	case SandboxPath:
		if inProc(t.Path) {
			e.proc(&v, t.Path)
			break
		}
		e.sandboxPath(&v, t.Path, a)
	case Destination:
		e.destination(&v, t)
	case EnvName:
		e.env(&v, t.Name)
	}
	v.Reachable = len(v.Access) > 0
	hidden(p, m, t, real, &v, e.model == emit.HostPathsDeepestRule) // hidden.go
	return v
}

// planBackends are the backends that run the plan's artefacts (podman
// beside docker), in report order.
func planBackends(p *compiler.Plan) []emit.Backend {
	var bs []emit.Backend
	for _, be := range registry.All() {
		if emit.BuiltFor(p, be) {
			bs = append(bs, be)
		}
	}
	return bs
}
