// Package verify computes, from a plan alone, what a confined process must
// and must not be able to do, so that tests can ask the kernel the same
// questions under every backend and compare. A disagreement is a bug in an
// emitter (or a backend) — never a matter of interpretation.
package verify

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/protect"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
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
	// Egress is the stand-in internet; nil: no network probes beyond
	// Listener.
	Egress *Egress
}

// Egress is the stand-in internet around a plan with an allowlist:
// servers on an address only this machine's lo answers (TEST-NET-3, never
// routed), and the names the egress proxy resolves (through
// egress.HostsResolver, never DNS).
type Egress struct {
	Upstream  netip.Addr // where the stand-in servers listen
	HTTPPorts []int      // plain HTTP servers on Upstream (the first one also on 127.0.0.1)
	TLSPort   int        // an HTTPS server on Upstream
	// Hosts is the proxy's name table (canonical name → address): names
	// of the upstream, and names that lead somewhere private.
	Hosts map[string]netip.Addr
}

// Ports lists every stand-in port, the TLS one last.
func (e *Egress) Ports() []int {
	return append(append([]int(nil), e.HTTPPorts...), e.TLSPort)
}

// URL is the address fetched for host:port: https on the TLS port (a
// CONNECT tunnel through the proxy), http elsewhere (plain forwarding).
func (e *Egress) URL(host string, port int) string {
	scheme := "http"
	if port == e.TLSPort {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/"
}

// Expectation is one access and what the plan says about it.
type Expectation struct {
	probe.Attempt
	Allowed bool
	Why     string
	// Want, when set, is the class (see Class) the result must have: the
	// plan decides not only whether a destination is reached but who
	// says no. Unset: only allowed ("ok") or denied (anything else).
	Want string
}

// The classes network answers are compared by.
const (
	WantOK = "ok"
	// WantProxyRefused: the egress proxy refused the destination.
	WantProxyRefused = "http 403"
	// WantErrno: the sandbox's network stack said no (an errno, or a
	// timeout): the answer to anything that tries to go around the proxy.
	// Which errno is the backend's business (an empty network namespace
	// says ENETUNREACH, Landlock EACCES).
	WantErrno = "errno"
)

var errnoName = regexp.MustCompile(`^E[A-Z0-9]+$|^errno [0-9]+$`)

// Class maps a probe result to the class expectations name: "ok" and
// "http N" (the probe reports a refused CONNECT by its status too) stay as
// they are; errno names and timeouts are WantErrno; anything else is
// itself.
func Class(result string) string {
	switch {
	case result == "ok", strings.HasPrefix(result, "http "):
		return result
	case result == "timeout", errnoName.MatchString(result):
		return WantErrno
	}
	return result
}

// Agrees reports whether a probe's result is what the plan says.
func (e Expectation) Agrees(result string) bool {
	if e.Want != "" {
		return Class(result) == e.Want
	}
	return (result == "ok") == e.Allowed
}

// Says is what the plan says, for messages.
func (e Expectation) Says() string {
	switch {
	case e.Want == WantProxyRefused:
		return "refused by the proxy (" + e.Want + ")"
	case e.Want == WantErrno:
		return "denied by the network stack (an errno)"
	case e.Want != "":
		return e.Want
	case e.Allowed:
		return "allowed"
	}
	return "denied"
}

// cover is one granted subtree, in the view's terms.
type cover struct {
	at   string
	rw   bool
	kind coverKind
}

// coverKind orders covers at the same path: the greater is the one the
// process meets.
type coverKind int

const (
	// coverFixedTop: a read-write mount of the project root, whose top
	// level the launcher fixes: the root bound read-only, and below it
	// nothing but the entries present at launch (an absent one cannot be
	// created, nor read).
	coverFixedTop coverKind = iota
	// coverEntry: an entry of a fixed top level, bound again read-write.
	coverEntry
	// coverMount: a mount, the scratch, the baseline. A policy's own mount
	// exactly on a fixed top level's entry takes its place (bwrap binds
	// it later; the engine launcher leaves the entry to it).
	coverMount
	// coverProtected: a protected name, bound read-only over all else.
	coverProtected
)

// Expectations lists the accesses to try for a plan and whether each must
// succeed. Where a mounted folder holds probe.txt and inner/probe.txt on
// the host, they are read and written too.
//
// A mount of the project root (source ".") also has each of its top-level
// entries tried: a file read and written, a folder's probe.txt read and
// written and a new file created in it, and a new top-level name created.
// Read-write, the root's top level is fixed at launch (runtime/launch/bwrap.go
// fixedTop, runtime/launch/engine.go engineFixedTop): the root read-only, each
// entry present then bound again on top, read-write unless protected, no
// new name at the top; a policy's mount on an entry decides that entry.
// Landlock does the same in its launcher's minimal root (user namespaces;
// without them it refuses such a plan at launch), at the host's paths.
func Expectations(p *compiler.Plan, m compiler.Machine, f Fixture, view View, baseline []string) []Expectation {
	var covers []cover
	type root struct{ base, host, what string }
	var roots []root
	type top struct {
		at, host, what string
		entries        []os.DirEntry
	}
	var tops []top // mounts of the project root
	unprot := p.UnprotectedNames()
	for _, mt := range p.Mounts {
		at, host := mt.Target, m.Resolve(mt.Source)
		if view == HostView {
			at = host
		}
		roots = append(roots, root{at, host, "mount " + mt.Target})
		if mt.Source != (compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}) {
			covers = append(covers, cover{at, mt.Mode == compiler.ReadWrite, coverMount})
			continue
		}
		entries, _ := os.ReadDir(host) // as the launcher finds them
		tops = append(tops, top{at, host, "mount " + mt.Target, entries})
		if !mt.FixedTop() {
			covers = append(covers, cover{at, false, coverMount})
			continue
		}
		covers = append(covers, cover{at, false, coverFixedTop})
		for _, e := range entries {
			c := cover{path.Join(at, e.Name()), true, coverEntry}
			if protect.Except(e.Name(), unprot) != "" {
				c.rw, c.kind = false, coverProtected
			}
			covers = append(covers, c)
		}
	}
	for _, pr := range p.Protected {
		at := pr.Target
		if view == HostView {
			at = m.Resolve(pr.Source)
		}
		covers = append(covers, cover{at, false, coverProtected})
	}
	if p.Scratch != nil {
		covers = append(covers, cover{p.Scratch.Target, true, coverMount})
	}
	if view == HostView {
		for _, b := range baseline {
			covers = append(covers, cover{b, false, coverMount})
		}
	}

	// allowed answers from the covers: the deepest one decides (mounts
	// stack; at the same path the greater kind), in the host view too:
	// Landlock's launcher stacks the same mounts in its minimal root, and
	// the rights its rules add up to never reach below a read-only grant
	// (the build refuses read-only inside read-write). Below a fixed top
	// level only its entries exist, in either view.
	allowed := func(target string, write bool) bool {
		best, found := -1, false
		for i, c := range covers {
			if target == c.at || strings.HasPrefix(target, strings.TrimSuffix(c.at, "/")+"/") {
				found = true
				if b := covers[max(best, 0)]; best < 0 || len(c.at) > len(b.at) || len(c.at) == len(b.at) && c.kind > b.kind {
					best = i
				}
			}
		}
		switch {
		case !found:
			return false
		case covers[best].kind == coverFixedTop && target != covers[best].at:
			return false // absent at launch: no such entry
		case !write:
			return true
		default:
			return covers[best].rw
		}
	}

	var es []Expectation
	add := func(op probe.Op, target, why string, write bool) {
		es = append(es, Expectation{probe.Attempt{Op: op, Target: target}, allowed(target, write), why, ""})
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
	for _, t := range tops {
		add(probe.Create, path.Join(t.at, "new-top.txt"), t.what+", a new top-level name", true)
		for _, e := range t.entries {
			at, host, what := path.Join(t.at, e.Name()), filepath.Join(t.host, e.Name()), t.what+", top-level entry "+e.Name()
			if !e.IsDir() {
				add(probe.Read, at, what, false)
				add(probe.Write, at, what, true)
				continue
			}
			if exists(filepath.Join(host, "probe.txt")) {
				add(probe.Read, path.Join(at, "probe.txt"), what, false)
				add(probe.Write, path.Join(at, "probe.txt"), what, true)
			}
			add(probe.Create, path.Join(at, "new-entry.txt"), what, true)
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
	rootList := Expectation{probe.Attempt{Op: probe.List, Target: "/"}, view == SandboxView, "list /", ""}
	es = append(es, rootList)
	es = append(es, Expectation{probe.Attempt{Op: probe.Connect, Target: f.Listener}, false, "TCP to the host's loopback", ""})
	if f.Egress != nil {
		es = append(es, egressExpectations(p, f.Egress)...)
	}
	return es
}

// egressExpectations: around the proxy nothing is reached, whatever the
// plan; through it (only with an allowlist) exactly what the proxy's own
// rules allow: a listed host:port (a wildcard's names below it, never its
// apex) whose address is not private unless the rule names that address.
func egressExpectations(p *compiler.Plan, e *Egress) []Expectation {
	bypass := net.JoinHostPort(e.Upstream.String(), strconv.Itoa(e.HTTPPorts[0]))
	es := []Expectation{
		{probe.Attempt{Op: probe.Connect, Target: bypass}, false, "TCP to an upstream, around the proxy", WantErrno},
		{probe.Attempt{Op: probe.UDP, Target: bypass}, false, "UDP to an upstream", WantErrno},
	}
	if p.Network.Mode != "allowlist" {
		// No proxy to ask: the fetch goes direct, and must not get there.
		return append(es, Expectation{probe.Attempt{Op: probe.Fetch, Target: e.URL(e.Upstream.String(), e.HTTPPorts[0])}, false, "fetch with network none", WantErrno})
	}
	allow := p.Network.Rules()
	names := make([]string, 0, len(e.Hosts)+1)
	for n := range e.Hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	names = append(names, e.Upstream.String()) // an address, as a URL may name it
	for _, host := range names {
		for _, port := range e.Ports() {
			want, why := fetchOutcome(allow, e.Hosts, host, port)
			es = append(es, Expectation{probe.Attempt{Op: probe.Fetch, Target: e.URL(host, port)}, want == WantOK, why, want})
		}
	}
	return es
}

// fetchOutcome is the proxy's decision for host:port, from the allowlist
// and the name table alone.
func fetchOutcome(allow allowlist.List, hosts map[string]netip.Addr, host string, port int) (want, why string) {
	dest := net.JoinHostPort(host, strconv.Itoa(port))
	rule, ok := allow.Match(host, port)
	if !ok {
		why := "fetch " + dest + ": not in the allowlist"
		if w := "*." + host + ":" + strconv.Itoa(port); allowlistHas(allow, w) {
			why = "fetch " + dest + ": the apex of " + w
		}
		return WantProxyRefused, why
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		var found bool
		if addr, found = hosts[host]; !found {
			return WantProxyRefused, "fetch " + dest + ": allowed by " + rule.String() + ", but no address"
		}
	}
	addr = addr.Unmap()
	if allowlist.Private(addr) && rule.Addr != addr {
		return WantProxyRefused, "fetch " + dest + ": allowed by " + rule.String() + ", but resolves to the private " + addr.String()
	}
	return WantOK, "fetch " + dest + ": allowed by " + rule.String()
}

func allowlistHas(l allowlist.List, entry string) bool {
	for _, r := range l {
		if r.String() == entry {
			return true
		}
	}
	return false
}
