package compiler

import (
	"path"
	"path/filepath"
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
