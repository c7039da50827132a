// Package compiler lowers validated policies into plans: one normalized,
// backend-neutral description per server of what it is granted and what is
// taken away. Emitters read plans; nothing reads policies after this.
package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/credential"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/schema"
)

// Plan is the IR for one server. It is written to disk as JSON for review,
// so every field that is serialized is deterministic and machine-neutral.
type Plan struct {
	Server      string   `json:"server"`
	PolicyFile  string   `json:"policyFile"` // relative to the project root, slash-separated
	Description string   `json:"description,omitempty"`
	Image       string   `json:"image,omitempty"`
	Command     []string `json:"command,omitempty"`
	Workdir     string   `json:"workdir,omitempty"`
	User        User     `json:"user"`
	Mounts      []Mount  `json:"mounts"`
	Scratch     *Scratch `json:"scratch,omitempty"`
	// Proc: the server reads its own /proc, a procfs of its own PID
	// namespace (bwrap, docker, podman and kubernetes give every server
	// one; landlock mounts it only then). Not a grant: no backend shows
	// more than the server's own processes.
	Proc bool `json:"proc,omitempty"`
	// MoreScratch are the scratch tmpfs after the first, in the policy's
	// order, when it lists more than one (Scratch is the first).
	MoreScratch []Scratch  `json:"moreScratch,omitempty"`
	Env         []EnvGrant `json:"env"` // sorted by name
	// SetEnv are the variables the policy sets to constant values, sorted
	// by name: each wins over the client's and the env file's value.
	SetEnv       []EnvValue     `json:"setEnv,omitempty"`
	Network      Network        `json:"network"`
	Protected    []Protected    `json:"protected"`
	Backends     []string       `json:"backends"`
	Runtime      Runtime        `json:"runtime"`
	Accept       []Accepted     `json:"accept"`      // sorted by name
	Unprotected  []Unprotection `json:"unprotected"` // sorted by name
	Subtractions Subtractions   `json:"subtractions"`
	// ProgramPins are the host files the server runs (its program, a
	// script it is given) that some server's read-write grant holds: the
	// client entry pins each one's digest, and the launcher refuses other
	// bytes. Sorted; absent when none.
	ProgramPins []HostPath `json:"programPins,omitempty"`
	// Packs are the runtime packs the server uses, each one grant; their
	// paths are bound read-only where they exist (BaselinePaths).
	Packs []Pack `json:"packs,omitempty"`
	// Tools is the tool surface the relay on the stdio pipe enforces (the
	// policy's tools section, its pin embedded): nil when the policy has
	// none, and then no relay runs and the plan is what it was without.
	Tools *toolpolicy.Policy `json:"tools,omitempty"`
	// Credentials are the values the server may use but never holds,
	// sorted by name: it is given a placeholder, and the egress proxy
	// injects each value on requests to its destinations alone. Absent
	// when none: the plan is then what it was without.
	Credentials []credential.Grant `json:"credentials,omitempty"`
	Hash        string             `json:"hash"`

	// Source positions, kept for messages, lint and diff; not serialized, so
	// moving a line in the policy does not change the plan. Elements of a
	// list carry their own.
	Pos       position.Pos `json:"-"`
	LimitsPos position.Pos `json:"-"`
	UserPos   position.Pos `json:"-"`
	ProcPos   position.Pos `json:"-"`
	ToolsPos  ToolsPos     `json:"-"`
	// CredentialPos are the credentials' positions, by name.
	CredentialPos map[string]CredentialPos `json:"-"`
	Absent        []AbsentProtected        `json:"-"`
	// Waivers acknowledge lint findings; they confine nothing, so they are
	// not part of the plan's JSON or hash.
	Waivers []schema.Waiver `json:"-"`
	// OthersWritable are the read-write mount sources of the policy's
	// other servers outside the project, sorted: a bwrap wrapper refuses a launcher found in
	// one, which that server could have written (as the client entry's
	// launcher check does). They are the policy's, not this server's: no
	// grant of this plan, so outside its JSON and its hash, and absent
	// from a plan read back from JSON (which writes no wrapper).
	OthersWritable []HostPath `json:"-"`
	// sources are the mounts as written, for the checks across servers.
	sources []*mountSource
}

// Field is the path of the server's entry, or of a section below it, as
// errors show it (servers."code-index".limits): emitters name the field
// they cannot enforce without reading the policy.
func (p *Plan) Field(section ...string) string {
	return schema.FieldPath(append([]string{"servers", p.Server}, section...)...)
}

// Runtime is the named baseline of read-only host paths for host backends.
type Runtime struct {
	Name     string   `json:"name"`
	ReadOnly []string `json:"readOnly"`
}

// Accepts reports whether the policy accepts the named degradation.
func (p *Plan) Accepts(name string) bool {
	for _, a := range p.Accept {
		if a.Name == name {
			return true
		}
	}
	return false
}

// EnvNames are the names of the environment variables passed through.
func (p *Plan) EnvNames() []string { return names(p.Env, func(e EnvGrant) string { return e.Name }) }

// AcceptNames are the names of the accepted degradations.
func (p *Plan) AcceptNames() []string {
	return names(p.Accept, func(a Accepted) string { return a.Name })
}

// UnprotectedNames are the protected names left writable.
func (p *Plan) UnprotectedNames() []string {
	return names(p.Unprotected, func(u Unprotection) string { return u.Name })
}

// WritableSources are the host folders (or files) the server may write:
// every read-write mount's source on m. What mcpolicy writes on the host
// must not be reached through them.
func (p *Plan) WritableSources(m Machine) []string {
	var out []string
	for _, mt := range p.Mounts {
		if mt.Mode == ReadWrite {
			out = append(out, m.Resolve(mt.Source))
		}
	}
	return out
}

// names maps a list to its names, nil for nil: an artefact's JSON tells
// null from [].
func names[E any](es []E, name func(E) string) []string {
	if es == nil {
		return nil
	}
	ns := make([]string, len(es))
	for i, e := range es {
		ns[i] = name(e)
	}
	return ns
}

// EnvGrant is an environment variable passed through from the host.
type EnvGrant struct {
	Name string
	Pos  position.Pos
}

// EnvValue is an environment variable the policy sets to a constant,
// non-secret value (setenv).
type EnvValue struct {
	Name  string       `json:"name"`
	Value string       `json:"value"`
	Pos   position.Pos `json:"-"`
}

// SetEnvNames are the names of the variables the policy sets.
func (p *Plan) SetEnvNames() []string {
	return names(p.SetEnv, func(e EnvValue) string { return e.Name })
}

// Accepted is a degradation the policy accepts.
type Accepted struct {
	Name string
	Pos  position.Pos
}

// Unprotection is a protected name (e.g. ".env*") the policy leaves
// writable inside read-write mounts.
type Unprotection struct {
	Name string
	Pos  position.Pos
}

// Each prints as its name, as the plain strings these were did.

func (e EnvGrant) String() string     { return e.Name }
func (a Accepted) String() string     { return a.Name }
func (u Unprotection) String() string { return u.Name }

// The plan's JSON (and so its hash) holds each of these as its name alone:
// a position is not part of what confines the server.

func (e EnvGrant) MarshalJSON() ([]byte, error)      { return json.Marshal(e.Name) }
func (e *EnvGrant) UnmarshalJSON(b []byte) error     { return json.Unmarshal(b, &e.Name) }
func (a Accepted) MarshalJSON() ([]byte, error)      { return json.Marshal(a.Name) }
func (a *Accepted) UnmarshalJSON(b []byte) error     { return json.Unmarshal(b, &a.Name) }
func (u Unprotection) MarshalJSON() ([]byte, error)  { return json.Marshal(u.Name) }
func (u *Unprotection) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &u.Name) }

// User is the numeric identity the server runs as, or (Invoker) the user
// who starts it, resolved at launch (UID and GID are then -1).
type User struct {
	UID     int  `json:"uid"`
	GID     int  `json:"gid"`
	Invoker bool `json:"invoker,omitempty"`
}

func (u User) String() string {
	if u.Invoker {
		return InvokerUser
	}
	return fmt.Sprintf("%d:%d", u.UID, u.GID)
}

// Root reports whether the server runs as uid 0 whoever starts it.
func (u User) Root() bool { return !u.Invoker && u.UID == 0 }

// RootGroup reports whether a non-root server runs in root's group (gid
// 0): the host's, under a root launcher or a rootful engine, whose files
// (root:root 0640, 0660) it then reads and writes.
func (u User) RootGroup() bool { return !u.Invoker && u.UID != 0 && u.GID == 0 }

// InvokerUser is the policy's `user: "invoker"`: the server runs as the
// user who starts it (never root: the launch refuses), so a read-write
// mount is written as that user under docker and podman too.
const InvokerUser = "invoker"

// Mode of a mount.
type Mode string

const (
	ReadOnly  Mode = "ro"
	ReadWrite Mode = "rw"
)

// Mount grants a host path at Target.
type Mount struct {
	Source HostPath `json:"source"`
	Target string   `json:"target"`
	Mode   Mode     `json:"mode"`
	// Hide are the paths below Source the server cannot reach (mounts[].hide):
	// sorted, each once, the last element possibly a glob; each is masked at
	// spawn (EACCES). HidePos holds each one's position.
	Hide    []string       `json:"hide,omitempty"`
	HidePos []position.Pos `json:"-"`
	Pos     position.Pos   `json:"-"`
}

// FixedTop reports whether the launcher fixes the mount's top level at
// spawn: a read-write mount of the project root itself is bound read-only
// and each existing top-level entry bound again on top (protected ones
// read-only), so no entry can be created, removed or renamed there.
func (m Mount) FixedTop() bool {
	return m.Mode == ReadWrite && m.Source == HostPath{Base: ProjectRoot, Rel: "."}
}

// Scratches are every scratch tmpfs: Scratch, then MoreScratch.
func (p *Plan) Scratches() []Scratch {
	if p.Scratch == nil {
		return nil
	}
	return append([]Scratch{*p.Scratch}, p.MoreScratch...)
}

// Scratch is one bounded tmpfs.
type Scratch struct {
	Target    string       `json:"target"`
	SizeBytes int64        `json:"sizeBytes"`
	Pos       position.Pos `json:"-"`
}

// Network is none unless Allow lists destinations. An allowlist is
// enforced by mcpolicy's egress proxy, which the sandbox reaches at
// 127.0.0.1:ProxyPort: inside the sandbox's own network namespace (bwrap,
// docker, podman), or on the host's loopback (seatbelt).
type Network struct {
	Mode      string        `json:"mode"`            // "none" or "allowlist"
	Allow     []Destination `json:"allow,omitempty"` // sorted by canonical spelling
	ProxyPort int           `json:"proxyPort,omitempty"`
	Pos       position.Pos  `json:"-"`
}

// Destination is one allowed egress destination, parsed once by the
// compiler. In JSON it is its canonical spelling, "host:port".
type Destination struct {
	allowlist.Rule
	Pos position.Pos
}

func (d Destination) MarshalJSON() ([]byte, error) { return json.Marshal(d.Rule.String()) }

func (d *Destination) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	r, err := allowlist.ParseRule(s)
	d.Rule = r
	return err
}

// MustDestinations parses entries, in order and without positions, for
// plans written by hand (tests); it panics on one that does not parse.
func MustDestinations(entries ...string) []Destination {
	ds := make([]Destination, len(entries))
	for i, e := range entries {
		r, err := allowlist.ParseRule(e)
		if err != nil {
			panic(err)
		}
		ds[i] = Destination{Rule: r}
	}
	return ds
}

// Entries are the destinations' canonical spellings, in order.
func (n Network) Entries() []string {
	es := make([]string, len(n.Allow))
	for i, d := range n.Allow {
		es[i] = d.Rule.String()
	}
	return es
}

// Rules is the allowlist the egress proxy enforces.
func (n Network) Rules() allowlist.List {
	l := make(allowlist.List, len(n.Allow))
	for i, d := range n.Allow {
		l[i] = d.Rule
	}
	return l
}

// ProxyPort is the loopback port of a server's egress proxy: derived from
// the server's name so artefacts are deterministic, in 20000-29999, away
// from the ports development servers usually take.
func ProxyPort(server string) int {
	h := fnv.New32a()
	h.Write([]byte(server))
	return 20000 + int(h.Sum32()%10000)
}

// Protected is a path inside a read-write mount that stays read-only.
type Protected struct {
	Source HostPath `json:"source"`
	Target string   `json:"target"`
	Name   string   `json:"name"` // the protected name it matched, e.g. ".env*"
}

// AbsentProtected is a protected name that did not exist when the plan was
// compiled: it cannot be mounted read-only, so a server with rw access to
// the folder could create it. Reported by explain.
type AbsentProtected struct {
	Target string
	Name   string
}

// Subtractions are what every plan takes away; limits are optional ones.
type Subtractions struct {
	NoNetwork       bool  `json:"noNetwork"`
	ReadOnlyRoot    bool  `json:"readOnlyRoot"`
	DropAllCaps     bool  `json:"dropAllCapabilities"`
	NoNewPrivileges bool  `json:"noNewPrivileges"`
	NonRootUser     bool  `json:"nonRootUser"`
	MemoryBytes     int64 `json:"memoryBytes,omitempty"`
	Pids            int64 `json:"pids,omitempty"`
	MilliCPUs       int64 `json:"milliCPUs,omitempty"`
	// Hidden counts the mounts' hidden paths (mounts[].hide): each one a
	// subtraction.
	Hidden int `json:"hidden,omitempty"`
}

// computeHash fills Hash with a digest of what confines the server: the
// serialized plan without the hash, the policy file's name and the
// description, so moving a policy or rewording it keeps the hash.
func (p *Plan) computeHash() {
	c := *p
	c.Hash, c.PolicyFile, c.Description = "", "", ""
	if p.Tools != nil { // its copy of the file's name too
		t := *p.Tools
		t.PolicyFile = ""
		c.Tools = &t
	}
	b, err := json.Marshal(&c)
	if err != nil {
		panic("internal error: plan does not marshal: " + err.Error())
	}
	sum := sha256.Sum256(b)
	p.Hash = "sha256:" + hex.EncodeToString(sum[:])
}

// JSON returns the plan as indented JSON with a trailing newline.
func (p *Plan) JSON() []byte {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		panic("internal error: plan does not marshal: " + err.Error())
	}
	return append(b, '\n')
}

// HostPathOf maps a sandbox path at or below a mount target to the host
// path it shows, for backends that do not remap paths (Landlock, seatbelt):
// the deepest mount holding it decides.
func (p *Plan) HostPathOf(sandbox string) (HostPath, bool) {
	best := -1
	for i, m := range p.Mounts {
		if sandbox == m.Target || strings.HasPrefix(sandbox, strings.TrimSuffix(m.Target, "/")+"/") {
			if best < 0 || len(m.Target) > len(p.Mounts[best].Target) {
				best = i
			}
		}
	}
	if best < 0 {
		return HostPath{}, false
	}
	m := p.Mounts[best]
	return HostPath{Base: m.Source.Base, Rel: path.Join(m.Source.Rel, strings.TrimPrefix(sandbox, m.Target))}, true
}
