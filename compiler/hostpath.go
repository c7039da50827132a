package compiler

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Base says what a host path is relative to. Plans never hold a path of the
// machine that compiled them: project and home paths stay symbolic until an
// emitter is given a Resolver.
type Base string

const (
	ProjectRoot Base = "PROJECT_ROOT"
	Home        Base = "HOME"
	Absolute    Base = ""

	// The egress proxy's host paths, known only when `mcpolicy run`
	// starts it: the mcpolicy executable (bound read-only into the
	// sandbox to forward loopback to the proxy) and the proxy's socket.
	Self         Base = "MCPOLICY"
	EgressSocket Base = "MCPOLICY_EGRESS_SOCKET"
)

// SelfPath and EgressSocketPath are the host paths of those two.
var (
	SelfPath         = HostPath{Base: Self, Rel: "."}
	EgressSocketPath = HostPath{Base: EgressSocket, Rel: "."}
)

// HostPath is a host path as a base and a clean, slash-separated remainder.
type HostPath struct {
	Base Base   `json:"base,omitempty"`
	Rel  string `json:"path"` // "." for the base itself; absolute when Base is Absolute
}

// Join returns the host path of a name below p.
func (p HostPath) Join(name string) HostPath {
	return HostPath{Base: p.Base, Rel: path.Join(p.Rel, name)}
}

// Placeholder renders the path for committed artefacts: ${PROJECT_ROOT}/src.
func (p HostPath) Placeholder() string {
	if p.Base == Absolute {
		return p.Rel
	}
	if p.Rel == "." {
		return "${" + string(p.Base) + "}"
	}
	return "${" + string(p.Base) + "}/" + p.Rel
}

func (p HostPath) String() string { return p.Placeholder() }

// Resolver turns host paths into paths of one machine.
type Resolver interface {
	Resolve(HostPath) string
}

// Placeholders is the Resolver for committed, machine-neutral output.
type Placeholders struct{}

func (Placeholders) Resolve(p HostPath) string { return p.Placeholder() }

// Machine resolves host paths on this machine.
type Machine struct {
	ProjectRoot string // absolute
	Home        string // absolute
	// Invoker is the user starting the server, for `user: "invoker"`;
	// nil leaves ${UID} and ${GID} for the launcher to resolve at spawn.
	Invoker *User
	// Set by the egress supervisor; when empty, those paths stay
	// placeholders.
	Self         string
	EgressSocket string
}

func (m Machine) Resolve(p HostPath) string {
	switch p.Base {
	case ProjectRoot:
		return filepath.Join(m.ProjectRoot, filepath.FromSlash(p.Rel))
	case Home:
		return filepath.Join(m.Home, filepath.FromSlash(p.Rel))
	case Self, EgressSocket:
		v := map[Base]string{Self: m.Self, EgressSocket: m.EgressSocket}[p.Base]
		if v == "" {
			return p.Placeholder()
		}
		return filepath.Join(v, filepath.FromSlash(p.Rel))
	}
	return filepath.FromSlash(p.Rel)
}

// LaunchPaths keeps the project and home as placeholders, for the launcher
// to open below them without following symlinks (launch.PrepareBwrap);
// every other host path is the machine's.
type LaunchPaths struct{ Machine Machine }

func (l LaunchPaths) Resolve(p HostPath) string {
	if p.Base == ProjectRoot || p.Base == Home {
		return p.Placeholder()
	}
	return l.Machine.Resolve(p)
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	if dir == string(filepath.Separator) {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// InvokerPlaceholders are what a plan with `user: "invoker"` carries in
// place of its ids until the launcher, at spawn, knows who starts it.
const (
	UIDPlaceholder = "${UID}"
	GIDPlaceholder = "${GID}"
)

// UserIDs renders the plan's user as the uid and gid a backend passes:
// its numbers; for "invoker", the invoking user's where r is a Machine
// that knows them, else the placeholders. An invoker who is root is
// refused: the default never becomes root by who happens to launch it.
func UserIDs(p *Plan, r Resolver) (uid, gid string, err error) {
	if !p.User.Invoker {
		return strconv.Itoa(p.User.UID), strconv.Itoa(p.User.GID), nil
	}
	if m, ok := r.(Machine); ok && m.Invoker != nil {
		if m.Invoker.UID == 0 || m.Invoker.GID == 0 {
			return "", "", InvokerRootError(p.Server)
		}
		return strconv.Itoa(m.Invoker.UID), strconv.Itoa(m.Invoker.GID), nil
	}
	return UIDPlaceholder, GIDPlaceholder, nil
}

// InvokerRootError refuses `user: "invoker"` started by root.
func InvokerRootError(server string) error {
	return fmt.Errorf("server %q runs as the invoking user (user: \"invoker\"), and that is root here: refusing to run it as root; start it as your own user, or set user: \"UID:GID\"", server)
}

// CurrentUser is the user this process runs as (Machine.Invoker).
func CurrentUser() *User {
	return &User{UID: os.Getuid(), GID: os.Getgid()}
}

// HomeTargets reports whether any mount or scratch target, or the
// workdir, is "~/...": the server then runs with the home of the user who
// starts it at the same path as on the host.
func (p *Plan) HomeTargets() bool {
	if InHome(p.Workdir) {
		return true
	}
	for _, t := range planTargets(p) {
		if InHome(t) {
			return true
		}
	}
	return false
}

// HomePath renders a "~/..." sandbox path by r as the home's path
// (${HOME}/... for committed artefacts); any other path is returned as it is.
func HomePath(sandbox string, r Resolver) string {
	if sandbox == "~" {
		return r.Resolve(HostPath{Base: Home, Rel: "."})
	}
	if rest, ok := strings.CutPrefix(sandbox, "~/"); ok {
		return r.Resolve(HostPath{Base: Home, Rel: path.Clean(rest)})
	}
	return sandbox
}

// homeInSandbox reports whether the sandbox shows anything at the home's
// path: a "~/..." target or workdir, or a runtime pack's path below the
// home (bound at the same path).
func (p *Plan) homeInSandbox() bool {
	if p.HomeTargets() {
		return true
	}
	for _, hp := range p.PackPaths() {
		if hp.Base == Home {
			return true
		}
	}
	return false
}

// HomeWord renders a command word or constant value: when the sandbox
// shows paths of the home (homeInSandbox), a word "~/..." (whole, or after
// "--flag=") is the home's path, by r. Otherwise, and for any other word,
// it stays as written.
func (p *Plan) HomeWord(w string, r Resolver) string {
	if !p.homeInSandbox() {
		return w
	}
	if InHome(w) {
		return HomePath(w, r)
	}
	if flag, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(flag, "-") && InHome(v) {
		return flag + "=" + HomePath(v, r)
	}
	return w
}
