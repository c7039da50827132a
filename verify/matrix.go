// Package verify computes, from a plan alone, what a confined process must
// and must not be able to do, so that tests can ask the kernel the same
// questions under every backend and compare. A disagreement is a bug in an
// emitter (or a backend) — never a matter of interpretation.
package verify

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/probe"
)

// View is how a backend shows the host to the process.
type View int

const (
	// SandboxView: mounts appear at their targets, nothing else of the host
	// exists (docker, podman, bwrap).
	SandboxView View = iota
	// HostView: the host's own paths, filtered by rules (landlock).
	HostView
)

// Fixture is the world around the project a test builds.
type Fixture struct {
	Home     string // planted home: .aws/credentials, .ssh/id_ed25519
	Outside  string // a folder beside the project root, never granted
	Listener string // a TCP listener on the host's loopback, host:port
	// Extra are host paths the process may read although the policy does
	// not list them (e.g. the probe binary's folder when it is granted).
}

// Expectation is one access and what the plan says about it.
type Expectation struct {
	probe.Attempt
	Allowed bool
	Why     string
}

// cover is one granted subtree, in the view's terms.
type cover struct {
	at string
	rw bool
}

// Expectations lists the accesses to try for a plan and whether each must
// succeed. Where a mounted folder holds probe.txt and inner/probe.txt on
// the host, they are read and written too.
func Expectations(p *compiler.Plan, m compiler.Machine, f Fixture, view View, baseline []string) []Expectation {
	var covers []cover
	type root struct{ base, host, what string }
	var roots []root
	for _, mt := range p.Mounts {
		at, host := mt.Target, m.Resolve(mt.Source)
		if view == HostView {
			at = host
		}
		covers = append(covers, cover{at, mt.Mode == compiler.ReadWrite})
		roots = append(roots, root{at, host, "mount " + mt.Target})
	}
	for _, pr := range p.Protected {
		at := pr.Target
		if view == HostView {
			at = m.Resolve(pr.Source)
		}
		covers = append(covers, cover{at, false})
	}
	if p.Scratch != nil {
		covers = append(covers, cover{p.Scratch.Target, true})
	}
	if view == HostView {
		for _, b := range baseline {
			covers = append(covers, cover{b, false})
		}
	}

	// allowed answers from the covers: the deepest one decides in a
	// sandbox (mounts stack); in the host view rights add up.
	allowed := func(target string, write bool) bool {
		best, found, anyRW := -1, false, false
		for i, c := range covers {
			if target == c.at || strings.HasPrefix(target, strings.TrimSuffix(c.at, "/")+"/") {
				found = true
				anyRW = anyRW || c.rw
				if best < 0 || len(c.at) > len(covers[best].at) {
					best = i
				}
			}
		}
		switch {
		case !found:
			return false
		case !write:
			return true
		case view == HostView:
			return anyRW
		default:
			return covers[best].rw
		}
	}

	var es []Expectation
	add := func(op probe.Op, target, why string, write bool) {
		es = append(es, Expectation{probe.Attempt{Op: op, Target: target}, allowed(target, write), why})
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	for i, r := range roots {
		add(probe.List, r.base, r.what, false)
		add(probe.Create, path.Join(r.base, fmt.Sprintf("new-%d.txt", i)), r.what, true)
		if exists(filepath.Join(r.host, "probe.txt")) {
			add(probe.Read, path.Join(r.base, "probe.txt"), r.what, false)
			add(probe.Write, path.Join(r.base, "probe.txt"), r.what, true)
		}
		if exists(filepath.Join(r.host, "inner", "probe.txt")) {
			add(probe.Read, path.Join(r.base, "inner", "probe.txt"), r.what+", nested", false)
			add(probe.Create, path.Join(r.base, "inner", fmt.Sprintf("new-%d.txt", i)), r.what+", nested", true)
		}
	}
	for _, pr := range p.Protected {
		at := pr.Target
		if view == HostView {
			at = m.Resolve(pr.Source)
		}
		if strings.HasSuffix(pr.Name, "hooks") || pr.Name == ".vscode" || pr.Name == ".cursor" || pr.Name == "mcpolicy.d" {
			add(probe.Create, path.Join(at, "planted"), "protected "+pr.Name, true)
		} else {
			add(probe.Write, at, "protected "+pr.Name, true)
		}
	}
	if p.Scratch != nil {
		add(probe.Create, path.Join(p.Scratch.Target, "scratch-new"), "scratch", true)
	}
	add(probe.Read, filepath.Join(f.Home, ".aws", "credentials"), "planted credentials", false)
	add(probe.Read, filepath.Join(f.Home, ".ssh", "id_ed25519"), "planted ssh key", false)
	add(probe.List, f.Home, "home folder", false)
	add(probe.Read, filepath.Join(f.Outside, "probe.txt"), "folder beside the project", false)
	add(probe.Create, filepath.Join(f.Outside, "new.txt"), "folder beside the project", true)
	add(probe.Read, "/etc/shadow", "/etc/shadow", false)
	add(probe.Create, "/mcpolicy-probe-root", "the root filesystem", true)
	rootList := Expectation{probe.Attempt{Op: probe.List, Target: "/"}, view == SandboxView, "list /"}
	es = append(es, rootList)
	es = append(es, Expectation{probe.Attempt{Op: probe.Connect, Target: f.Listener}, false, "TCP to the host's loopback"})
	return es
}
