// Package prove demonstrates a plan's denials with the kernel's own
// answers: it runs a probe — never the server — under the compiled
// confinement of each backend and records what every access returned, as
// a report anyone can re-run (evidence.md, evidence.json).
package prove

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/internal/protect"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// Options say what to prove and with what.
type Options struct {
	// Backends to prove under; each must be one the server is built for
	// (podman runs the docker artefact). Default: every one of Backends the
	// server is built for.
	Backends []string
	// Probes are more paths to try to read: outside every grant the plan
	// expects a denial, inside one a read.
	Probes []string
	Self   string // this mcpolicy binary (the probe and the launcher)
	Policy string // the policy path as given, for reproduce commands
	// Call, when set, also starts the real server in the same confinement
	// and puts this tool call to it: the controlled comparison.
	Call *ToolCall
	// KeepImages leaves the stand-in images prove imported (the docker and
	// podman reproduce commands run them). Without it, everything prove
	// made — images, containers, temporary folders — is gone when Run
	// returns, on success, on failure and on cancellation.
	KeepImages bool
}

// ErrInterrupted is returned when the context is cancelled mid-run; what
// prove made has been removed.
var ErrInterrupted = errors.New("interrupted")

// SelectBackends is what to prove p under: the requested backends, each
// one p is built for, or by default every backend of Backends p is built
// for. A backend prove does not know, or one the server does not list, is
// an error: proving a confinement the server never runs under proves
// nothing about it.
func SelectBackends(p *compiler.Plan, requested []string) ([]string, error) {
	if len(requested) == 0 {
		var out []string
		for _, b := range Backends {
			if builtFor(p, b) {
				out = append(out, b)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("server %q is built for %s only: prove runs %s", p.Server, strings.Join(p.Backends, ", "), strings.Join(Backends, ", "))
		}
		return out, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, b := range requested {
		known := false
		for _, k := range Backends {
			known = known || k == b
		}
		switch {
		case !known:
			return nil, fmt.Errorf("unknown backend %q (backends: %s)", b, strings.Join(Backends, ", "))
		case !builtFor(p, b):
			return nil, fmt.Errorf("server %q is not built for backend %s (its backends: %s): prove runs only what the server runs under", p.Server, b, strings.Join(p.Backends, ", "))
		case !seen[b]:
			seen[b] = true
			out = append(out, b)
		}
	}
	return out, nil
}

// Row is one access and what the kernel answered.
type Row struct {
	What      string `json:"what"`
	Op        string `json:"op"`
	Target    string `json:"target"`
	Expect    string `json:"expect"` // "denied", "allowed" or "" (shown only)
	Result    string `json:"result"` // "ok" or an errno name
	Meaning   string `json:"meaning"`
	Agrees    bool   `json:"agrees"`
	Reproduce string `json:"reproduce"`
	// Skipped says why the row was not run: no target outside every grant
	// could be found for it.
	Skipped string `json:"skipped,omitempty"`
	// Why is what the expectation rests on (the grant, or its absence).
	Why string `json:"why,omitempty"`
	// Grant and Stop are `mcpolicy why`'s answer for the same target, on
	// the same backend, from the same plan and this machine: the grants
	// that make the access reachable ("kind summary (pos)"), else what
	// stops it ("rule (pos): detail", the position when it has one).
	// WhySays is why's prediction in a few words ("readable", "not
	// writable (read-only-mount)"). None of the three for a row not run,
	// nor for an op why has no question for (the keyring).
	Grant   []string `json:"grant,omitempty"`
	Stop    []string `json:"stop,omitempty"`
	WhySays string   `json:"whySays,omitempty"`
	// WhyAgrees says why's prediction and Expect agree: false when why
	// says reachable and prove expects a denial, or the other way round —
	// a bug in one of the two, never the kernel's (Agrees is the
	// kernel's). True when there is nothing to compare: no expectation,
	// no why question, or the row was not run. WhyNote says what differs.
	WhyAgrees bool   `json:"whyAgrees"`
	WhyNote   string `json:"whyNote,omitempty"`
}

// BackendReport is one backend's rows.
type BackendReport struct {
	Backend string `json:"backend"`
	Version string `json:"version"`
	// Probe says how the probe got inside and what, if anything, differs
	// from the artefact.
	Probe   string     `json:"probe"`
	Skipped string     `json:"skipped,omitempty"`
	Rows    []Row      `json:"rows"`
	Server  *ServerRow `json:"server,omitempty"`
	// Tools are the tool layer's rows: calls the relay refuses (policy),
	// not accesses the kernel refuses; none without a tools section.
	Tools []ToolRow `json:"tools,omitempty"`
}

// Report is the evidence for one server.
type Report struct {
	Server      string          `json:"server"`
	PolicyFile  string          `json:"policyFile"`
	Plan        string          `json:"plan"`
	Kernel      string          `json:"kernel"`
	LandlockABI int             `json:"landlockABI"`
	Call        *CallPlan       `json:"call,omitempty"`
	Backends    []BackendReport `json:"backends"`
}

type attempt struct {
	what   string
	op     probe.Op
	host   string // the host path (landlock's view); "" for non-paths
	target string // the sandbox path (docker, bwrap); == host when not under a mount
	expect string
	cat    bool   // reproducible with cat/ls/sh
	skip   string // not run: why
	why    string // what the expectation rests on
	call   bool   // a path of the tool call
}

// Meaning reads an errno for a reviewer.
func Meaning(result string) string {
	switch result {
	case "ok":
		return "allowed"
	case "ENOENT":
		return "not in this process's view of the filesystem at all"
	case "EACCES":
		return "visible, refused by policy"
	case "EPERM":
		return "refused by policy (operation not permitted)"
	case "EROFS":
		return "read-only"
	case "ECONNREFUSED":
		return "no route to the host's listener: the sandbox's own, empty network"
	case "ENETUNREACH":
		return "no network at all"
	case "ENOKEY":
		return "no such key in this process's keyrings: a keyring of its own"
	case "ENOSYS":
		return "the system call is filtered out"
	}
	return result
}

// attempts lists what to try for a plan: the sensitive targets, the
// project, writes into read-only grants and protected paths, the network,
// and the tool call's paths. A denial is expected only of a target
// outside every grant the plan makes (a mount's source or target, nested
// ones, home grants, the scratch, the runtime baseline): one that is not
// is skipped, saying why, never counted as a failure. The order is the
// report's.
func attempts(v planView, extra []string, listener string, pl *planted, cp *CallPlan) []attempt {
	as := sensitive(v)
	as = append(as, extraProbes(v, extra)...)
	if cp != nil {
		as = append(as, callPaths(v, cp)...)
	}
	as = append(as, attempt{what: "the root folder", op: probe.List, host: "/", target: "/", cat: true})
	as = append(as, mountGrants(v)...)
	fixed, protected := fixedTops(v)
	as = append(as, fixed...)
	as = append(as, protectedWrites(v, protected)...)
	return append(as, channels(v, listener, pl)...)
}

// denyOutside is an attempt expected to be denied because host lies
// outside every grant, or skipped, naming the grant, when it does not.
func denyOutside(v planView, what string, op probe.Op, host string) attempt {
	a := attempt{what: what, op: op, host: host, target: host, expect: "denied", cat: true, why: "outside every grant"}
	if g := v.grantOf(host, op); g != "" {
		a.skip = "not outside every grant: " + g
	}
	return a
}

// sensitive is what a server must never reach: the user's credentials,
// keys and home folder, and what lies beside the project.
func sensitive(v planView) []attempt {
	var as []attempt
	m := v.m
	home := m.Home
	deny := func(what string, op probe.Op, host string) {
		as = append(as, denyOutside(v, what, op, host))
	}
	deny("credentials", probe.Read, filepath.Join(home, ".aws", "credentials"))
	keys, _ := filepath.Glob(filepath.Join(home, ".ssh", "id_*"))
	if len(keys) == 0 {
		keys = []string{filepath.Join(home, ".ssh", "id_ed25519")}
	}
	for _, k := range keys {
		deny("ssh key", probe.Read, k)
	}
	deny("gcloud credentials", probe.List, filepath.Join(home, ".config", "gcloud"))
	deny("kube config", probe.Read, filepath.Join(home, ".kube", "config"))
	deny("netrc", probe.Read, filepath.Join(home, ".netrc"))
	deny("docker credentials", probe.Read, filepath.Join(home, ".docker", "config.json"))
	deny("shadow passwords", probe.Read, "/etc/shadow")
	deny("home folder", probe.List, home)
	// The parent itself may exist inside a sandbox as an unrelated folder
	// (/var/tmp is an empty mask in a container): try what lies beside
	// the project in it — a folder the plan grants nothing of.
	if sib, why := sibling(v); sib != "" {
		deny("beside the project, in its parent folder", probe.List, sib)
	} else {
		as = append(as, attempt{what: "beside the project, in its parent folder", op: probe.List, host: filepath.Dir(m.ProjectRoot), target: filepath.Dir(m.ProjectRoot), expect: "denied", skip: why})
	}
	return as
}

// extraProbes are the --probe paths: a read (a listing for a folder),
// expected by where each lies.
func extraProbes(v planView, extra []string) []attempt {
	var as []attempt
	for _, x := range extra {
		if !filepath.IsAbs(x) {
			as = append(as, attempt{what: "--probe " + x, op: probe.Read, host: x, target: x, skip: "not an absolute path"})
			continue
		}
		pc := v.locate(x)
		op := probe.Read
		if fi, err := os.Stat(pc.host); err == nil && fi.IsDir() {
			op = probe.List
		}
		e, why := v.readExpect(pc, op)
		as = append(as, attempt{what: "--probe " + x, op: op, host: pc.host, target: pc.target, expect: e, cat: true, why: why})
	}
	return as
}

// callPaths are the tool call's path arguments, tried as the tool uses
// them, so the probe's answer can be set beside the server's.
func callPaths(v planView, cp *CallPlan) []attempt {
	var as []attempt
	for i, a := range cp.Args {
		pc := place{a.Host, a.Target}
		what := fmt.Sprintf("--tool %s's %s (a %s)", cp.Tool.Name, a.Key, a.Use)
		if a.Use == UseWrite {
			op, at := writeProbe(pc, fmt.Sprintf(".mcpolicy-prove-w%d", i))
			e, why := v.writeExpect(at)
			as = append(as, attempt{what: what, op: op, host: at.host, target: at.target, expect: e, cat: true, why: why, call: true})
			continue
		}
		op := probe.Read
		if fi, err := os.Stat(pc.host); err == nil && fi.IsDir() {
			op = probe.List
		}
		as = append(as, attempt{what: what, op: op, host: pc.host, target: pc.target, expect: a.Expect, cat: true, why: a.Reason, call: true})
	}
	return as
}

// mountGrants shows each mount does what it grants: a file in it is
// readable, and a read-only one refuses a write.
func mountGrants(v planView) []attempt {
	var as []attempt
	p, m := v.p, v.m
	for i, mt := range p.Mounts {
		host := m.Resolve(mt.Source)
		if f := firstFile(host); f != "" {
			rel, _ := filepath.Rel(host, f)
			pc := place{f, filepath.Join(mt.Target, rel)}
			if v.consistent(pc) {
				as = append(as, attempt{what: "the granted " + string(mt.Mode) + " mount " + mt.Target, op: probe.Read, host: f, target: pc.target, expect: "allowed", cat: true, why: "mount " + mt.Target + " holds it"})
			}
		}
		if mt.Mode == compiler.ReadOnly {
			name := fmt.Sprintf(".mcpolicy-prove-%d", i)
			pc := place{filepath.Join(host, name), filepath.Join(mt.Target, name)}
			if e, why := v.writeExpect(pc); e == "denied" {
				as = append(as, attempt{what: "a write into the read-only mount " + mt.Target, op: probe.Create, host: pc.host, target: pc.target, expect: e, cat: true, why: why})
			}
		}
	}
	return as
}

// fixedTops tries a new name at the top of each mount whose top level the
// launcher fixes, and returns the plan's protected paths with the names
// present there added: they are read-only too.
func fixedTops(v planView) ([]attempt, []compiler.Protected) {
	var as []attempt
	p, m := v.p, v.m
	protected := append([]compiler.Protected{}, p.Protected...)
	for _, mt := range p.Mounts {
		if !mt.FixedTop() {
			continue
		}
		// The launcher fixes this mount's top level: a new name cannot be
		// created, and every protected name present is read-only.
		name := ".mcpolicy-prove-new"
		as = append(as, attempt{what: "a new top-level name in " + mt.Target, op: probe.Create, host: filepath.Join(m.Resolve(mt.Source), name), target: filepath.Join(mt.Target, name), expect: "denied", cat: true,
			why: "the launcher fixes " + mt.Target + "'s top level"})
		entries, _ := os.ReadDir(m.Resolve(mt.Source))
		for _, e := range entries {
			if n := protect.Except(e.Name(), p.UnprotectedNames()); n != "" && e.Type()&os.ModeSymlink == 0 {
				protected = append(protected, compiler.Protected{Source: mt.Source.Join(e.Name()), Target: filepath.Join(mt.Target, e.Name()), Name: n})
			}
		}
	}
	return as, protected
}

// protectedWrites tries to write each protected path (to create in it,
// for a folder): each must stay read-only.
func protectedWrites(v planView, protected []compiler.Protected) []attempt {
	var as []attempt
	for _, pr := range protected {
		host := v.m.Resolve(pr.Source)
		op := probe.Write
		if fi, err := os.Stat(host); err == nil && fi.IsDir() {
			op = probe.Create
			host, pr.Target = filepath.Join(host, "planted"), filepath.Join(pr.Target, "planted")
		}
		as = append(as, attempt{what: "protected " + pr.Name, op: op, host: host, target: pr.Target, expect: "denied", cat: true, why: "protected " + pr.Name + " stays read-only"})
	}
	return as
}

// channels are the ways out that are not the plan's paths: the host's
// loopback, and what prove planted (pl) for the probe to look for.
func channels(v planView, listener string, pl *planted) []attempt {
	as := []attempt{{what: "TCP to a listener on the host's loopback", op: probe.Connect, host: listener, target: listener, expect: "denied"}}
	// Channels the plan does not model, each planted by prove: the
	// invoker's environment, its session keyring, a named unix socket.
	as = append(as, attempt{what: "the invoker's environment (any readable /proc/PID/environ)", op: probe.Environ, host: pl.env, target: pl.env, expect: "denied"})
	if pl.key != "" {
		as = append(as, attempt{what: "the invoker's session keyring", op: probe.Keyring, host: pl.key, target: pl.key, expect: "denied"})
	}
	sock := attempt{what: "a unix socket on the host, outside the grants", op: probe.Unix, host: pl.socket, target: pl.socket, expect: "denied"}
	if g := v.grantOf(pl.socket, probe.Unix); g != "" {
		sock.skip = "the temporary folder is not outside every grant: " + g
	}
	return append(as, sock)
}

// planted is what prove leaves on the host for the probe to look for.
type planted struct {
	env    string // a variable in prove's (the invoker's) environment
	key    string // a user key in its session keyring ("" without keyrings)
	keyID  int
	socket string // a listening unix socket outside every grant
}

func plant() (*planted, func(), error) {
	tag := fmt.Sprintf("%d", os.Getpid())
	pl := &planted{env: "MCPOLICY_PROVE_CANARY_" + tag}
	os.Setenv(pl.env, "planted")
	dir, err := os.MkdirTemp("", "mcpolicy-prove-sock-")
	if err != nil {
		return nil, nil, err
	}
	pl.socket = filepath.Join(dir, "host.sock")
	ln, err := net.Listen("unix", pl.socket)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	// Never through a link: a server that may write the temporary folder
	// could have swapped either for one to a file of the user's.
	if err := hostfile.Chmod(dir, 0o755); err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if err := hostfile.Chmod(pl.socket, 0o777); err != nil { // reachable by the sandbox's user if nothing else stops it
		ln.Close()
		os.RemoveAll(dir)
		return nil, nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	pl.key = "mcpolicy-prove-" + tag
	pl.replant()
	return pl, func() {
		os.Unsetenv(pl.env)
		ln.Close()
		os.RemoveAll(dir)
		if pl.keyID > 0 {
			invalidateKey(pl.keyID)
		}
	}, nil
}

// replant puts the key into the current session keyring: launching bwrap
// moves this process to a new one (launch.FreshSessionKeyring).
func (pl *planted) replant() {
	if pl.key == "" {
		return
	}
	id, err := addKey(pl.key)
	if err != nil {
		pl.key = "" // no keyrings here: nothing to leak
		return
	}
	pl.keyID = id
}

// sibling is a folder beside the project, in its parent, outside every
// grant and holding none (a nested mount's source, a home grant): the
// first in name order, or "" and why there is none.
func sibling(v planView) (string, string) {
	root := v.m.ProjectRoot
	entries, err := os.ReadDir(filepath.Dir(root))
	if err != nil {
		return "", "the project's parent folder cannot be read: " + err.Error()
	}
	for _, e := range entries {
		if e.Name() == filepath.Base(root) || !e.IsDir() {
			continue
		}
		cand := filepath.Join(filepath.Dir(root), e.Name())
		if v.grantOf(cand, probe.List) != "" {
			continue
		}
		holds := false
		for i := range v.p.Mounts {
			holds = holds || within(v.source(i), cand)
		}
		if !holds {
			return cand, ""
		}
	}
	return "", "no folder beside the project lies outside every grant"
}

func firstFile(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			return filepath.Join(dir, e.Name())
		}
	}
	return ""
}

// Run proves the plan under each backend this machine can run.
func Run(p *compiler.Plan, m compiler.Machine, o Options) (*Report, error) {
	return RunContext(context.Background(), p, m, o)
}

// RunContext is Run, stopped by ctx: the sandboxes running are ended, and
// everything prove made is removed before it returns ErrInterrupted.
// The steps keep their order: the host is checked before anything is
// made, the listener and the planted canaries are up before the attempts
// name them, and the tool call is planned before its paths are attempted.
func RunContext(ctx context.Context, p *compiler.Plan, m compiler.Machine, o Options) (*Report, error) {
	backends, err := SelectBackends(p, o.Backends)
	if err != nil {
		return nil, err
	}
	if err := hostReady(p, m); err != nil {
		return nil, err
	}
	s := newSession(o.KeepImages)
	defer s.cleanup()
	v := planView{p, m}
	l, err := loopbackListener()
	if err != nil {
		return nil, err
	}
	defer l.Close()
	pl, unplant, err := plant()
	if err != nil {
		return nil, err
	}
	defer unplant()
	rep := newReport(p)
	if o.Call != nil {
		rep.Call = planCall(ctx, s, v, o, backends)
	}
	t := &trial{s: s, v: v, o: o, pl: pl, call: rep.Call}
	t.as = attempts(v, o.Probes, l.Addr().String(), pl, rep.Call)
	t.run = runnable(t.as)
	for _, b := range backends {
		if ctx.Err() != nil {
			return nil, s.interrupt()
		}
		br, err := t.backend(ctx, b)
		if err != nil {
			return nil, err
		}
		rep.Backends = append(rep.Backends, br)
	}
	return rep, nil
}

// hostReady refuses a host prove cannot run safely on.
func hostReady(p *compiler.Plan, m compiler.Machine) error {
	// What this process inherited (a CI runner's descriptor 10) is not
	// the server's.
	if err := launch.CloseInherited(); err != nil {
		return err
	}
	// prove's temporary folders hold what the host runs (a probe's
	// image, its socket) and a socket it opens up: the server must not be able to
	// write there, even as the user it runs as.
	if tmp := os.TempDir(); tmp != "" {
		if g, in := launch.InsideAny(tmp, p.WritableSources(m)); in {
			return fmt.Errorf("the temporary folder %s ($TMPDIR) lies inside %s, which server %s may write: it could replace the scripts and sockets prove makes there; set TMPDIR to a folder outside every read-write grant", tmp, g, p.Server)
		}
	}
	return nil
}

// loopbackListener is a TCP listener on the host's loopback, accepting
// and closing every connection: the probe's connect must reach something
// for a refusal to be the sandbox's.
func loopbackListener() (net.Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l, nil
}

// newReport is the report's header: the server, its plan and this host.
func newReport(p *compiler.Plan) *Report {
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return &Report{Server: p.Server, PolicyFile: p.PolicyFile, Plan: p.Hash, Kernel: strings.TrimSpace(string(kernel)),
		LandlockABI: hostcaps.Detect().ABI}
}

// runnable is the attempts the probe makes; the others are skipped.
func runnable(as []attempt) []attempt {
	var run []attempt
	for _, a := range as {
		if a.skip == "" {
			run = append(run, a)
		}
	}
	return run
}

// trial is what every backend's run shares: the attempts, and what
// RunContext set up for them.
type trial struct {
	s    *session
	v    planView
	o    Options
	pl   *planted
	call *CallPlan
	as   []attempt // every attempt, in report order
	run  []attempt // those of as the probe makes
}

// backend proves the plan under backend b: the probe's run, then a row
// per attempt, then the tool call. The error is only ErrInterrupted; a
// backend that cannot run is a report that says why.
func (t *trial) backend(ctx context.Context, b string) (BackendReport, error) {
	t.pl.replant()
	br := BackendReport{Backend: b}
	// Whatever a probe creates and fails to remove (a weakened sandbox
	// lets it), prove removes: each backend starts from the same files.
	made := snapshotCreates(t.run)
	pr := provers[kind(b)]
	view := func(a attempt) string { return a.target }
	if pr.hostView {
		view = func(a attempt) string { return a.host }
	}
	var results []probe.Result
	var err error
	br.Version, results, br.Probe, err = t.runProbe(ctx, pr, b)
	image := ""
	if pr.standIn {
		image = standInTag(runtimeOf(b).Engine, t.o.Self)
	}
	restore(made)
	if ctx.Err() != nil {
		return br, t.s.interrupt()
	}
	if err != nil {
		br.Skipped = clip(err.Error(), maxSkipped)
		return br, nil
	}
	var probeResult string
	it := &imageTools{}
	if pr.standIn {
		it = inspectImage(ctx, runtimeOf(b).Program, t.v.p.Image, t.o.Self, image, t.o.KeepImages)
	}
	br.Rows, probeResult = t.rows(b, pr, view, results, it)
	if t.o.Call != nil {
		br.Server = callServer(ctx, t.s, b, t.v, t.o, t.call, probeResult)
		if ctx.Err() != nil {
			return br, t.s.interrupt()
		}
	}
	br.Tools = toolRows(ctx, t.s, b, t.v, t.o)
	if ctx.Err() != nil {
		return br, t.s.interrupt()
	}
	return br, nil
}

// snapshotCreates is the host's state at every path the probe will try
// to create, for restore to put back.
func snapshotCreates(run []attempt) []hostState {
	var made []hostState
	for _, a := range run {
		if a.op == probe.Create {
			made = append(made, snapshot(a.host))
		}
	}
	return made
}

// runProbe runs the attempts under backend b: the tool's version, the
// results, and how the probe got in.
func (t *trial) runProbe(ctx context.Context, pr prover, b string) (string, []probe.Result, string, error) {
	// Bounded: whatever the server left in its grants (a FIFO where a
	// probe reads, a swapped path) must not hold prove forever.
	rctx, cancel := context.WithTimeout(ctx, probeRunTimeout)
	defer cancel()
	version, results, how, err := pr.run(rctx, t.s, b, t.v.p, t.v.m, t.run, t.o)
	if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		err = fmt.Errorf("the probe did not finish within %s (a path in the grants that blocks, a FIFO or a hung mount?): %v", probeRunTimeout, err)
	}
	return version, results, how, err
}

// rows is a row per attempt, skipped ones included, each with the
// kernel's answer beside the plan's and why's expectation; and the
// probe's outcome for the tool call's paths ("ok" or the first refusal).
func (t *trial) rows(b string, pr prover, view func(attempt) string, results []probe.Result, it *imageTools) ([]Row, string) {
	byAttempt := map[int]probe.Result{}
	k := 0
	probeResult := ""
	for i, a := range t.as {
		if a.skip == "" {
			byAttempt[i] = results[k]
			k++
		}
	}
	var rows []Row
	for i, a := range t.as {
		row := Row{What: a.what, Op: string(a.op), Target: shownTarget(a, view), Expect: a.expect, Why: a.why}
		row.WhyAgrees = true
		if a.skip != "" {
			row.Skipped, row.Agrees, row.Why = a.skip, true, ""
			rows = append(rows, row)
			continue
		}
		askWhy(&row, t.v, b, pr.hostView, a, t.o.Policy)
		r := byAttempt[i]
		row.Result, row.Meaning = r.Result, meaningOf(a, r.Result, pr.hostView)
		row.Agrees = a.expect == "" || (a.expect == "allowed") == (r.Result == "ok")
		if a.cat {
			row.Reproduce = reproduce(b, t.v.p, t.v.m, t.o, a.op, view(a), it)
		}
		if a.call && (probeResult == "" || probeResult == "ok") {
			probeResult = r.Result
		}
		rows = append(rows, row)
	}
	return rows, probeResult
}

// shownTarget is the attempt's target as the report shows it: what
// changes each run (a port, a pid) is spelled as a placeholder, so
// reports diff clean.
func shownTarget(a attempt, view func(attempt) string) string {
	switch a.op {
	case probe.Connect:
		return "127.0.0.1:PORT" // the port changes each run; reports must diff clean
	case probe.Environ:
		return "MCPOLICY_PROVE_CANARY_PID"
	case probe.Keyring:
		return "user key mcpolicy-prove-PID"
	case probe.Unix:
		return "/tmp/mcpolicy-prove-sock-*/host.sock"
	}
	return view(a)
}

// meaningOf reads the kernel's answer to an attempt: Meaning, except
// where the op or the backend's view gives the errno a narrower sense.
func meaningOf(a attempt, result string, hostView bool) string {
	switch {
	case hostView && result == "ENOENT":
		return "does not exist on this host (Landlock shows the host's own paths)"
	case a.op == probe.Connect && result == "EACCES":
		return "refused by policy: TCP connect denied"
	case a.op == probe.Environ && result == "ENOENT":
		return "no process in view shows the variable"
	case a.op == probe.Environ && result == "ok":
		return "a process in view shows the invoker's environment"
	}
	return Meaning(result)
}

func probeArgs(as []attempt, view func(attempt) string) []string {
	var args []string
	for _, a := range as {
		args = append(args, string(a.op)+":"+view(a))
	}
	return args
}

func parse(out []byte, n int) ([]probe.Result, error) {
	rs, err := probe.Decode(out)
	if err != nil {
		return nil, fmt.Errorf("reading the probe's answers: %v (output: %q)", err, out)
	}
	if len(rs) != n {
		return nil, fmt.Errorf("the probe answered %d of %d attempts (output: %q)", len(rs), n, out)
	}
	return rs, nil
}

func version(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

func runBwrap(ctx context.Context, backend string, p *compiler.Plan, m compiler.Machine, as []attempt, o Options) (string, []probe.Result, string, error) {
	program := runtimeOf(backend).Program
	if _, err := exec.LookPath(program); err != nil {
		return "", nil, "", fmt.Errorf("%s is not installed", program)
	}
	if p.Network.Mode == "allowlist" {
		return runSupervised(ctx, backend, p, m, as, o, sandbox.Forwarder)
	}
	f, err := os.Open(o.Self)
	if err != nil {
		return "", nil, "", err
	}
	defer f.Close()
	q := *p
	q.Command = append([]string{"/proc/self/fd/3", "probe"}, probeArgs(as, func(a attempt) string { return a.target })...)
	// As mcpolicy-launch runs it: sources by descriptor, the top level fixed.
	args, err := bwrap.Args(&q, compiler.LaunchPaths{Machine: m}, bwrap.DetectLayout(), 0)
	if err != nil {
		return "", nil, "", err
	}
	b, err := launch.PrepareBwrap(&launch.BwrapSpec{BwrapSpec: artefact.BwrapSpec{Backend: artefact.BwrapProgram, Server: q.Server, Plan: q.Hash, Args: args}}, m.ProjectRoot, m.Home, nil)
	if err != nil {
		return "", nil, "", err
	}
	bc, err := b.Command(f)
	if err != nil {
		return "", nil, "", err
	}
	// The same command, ended with the run (bwrap --die-with-parent takes
	// the sandbox with it).
	cmd := exec.CommandContext(ctx, bc.Path, bc.Args[1:]...)
	cmd.Env, cmd.ExtraFiles = bc.Env, bc.ExtraFiles
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, "", fmt.Errorf("bwrap: %v: %s", err, stderr.String())
	}
	rs, err := parse(out, len(as))
	return version(program, "--version"), rs, "the artefact's argv as mcpolicy-launch runs it (mount sources by descriptor, the project's top level fixed), unchanged but for the command: the probe comes in as an open file descriptor (/proc/self/fd/3), with no mount added", err
}

func runLandlock(ctx context.Context, p *compiler.Plan, as []attempt, o Options) (string, []probe.Result, string, error) {
	if hostcaps.Detect().ABI < artefact.MinABI {
		return "", nil, "", fmt.Errorf("this kernel has no usable Landlock")
	}
	args := []string{"exec", "--policy", o.Policy, "--server", p.Server}
	for _, a := range probeArgs(as, func(a attempt) string { return a.host }) {
		args = append(args, "--probe="+a)
	}
	// A server with an image only has no host command; in probe mode the
	// command is never run, but the ruleset needs one.
	args = append(args, "--", "/usr/bin/true")
	cmd := exec.CommandContext(ctx, o.Self, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, "", fmt.Errorf("mcpolicy exec: %v: %s", err, stderr.String())
	}
	rs, err := parse(out, len(as))
	return fmt.Sprintf("Landlock ABI %d", hostcaps.Detect().ABI), rs,
		"the ruleset and namespaces of mcpolicy exec; the probe runs in the confined launcher in place of exec'ing the server, so no rule is added for it", err
}

// runSupervised runs the probe as the server of a plan with an egress
// allowlist, the way mcpolicy run starts it: the proxy, then the sandbox
// whose only way out it is. The probe is mcpolicy itself, already in the
// sandbox as the forwarder (bwrap) or in the stand-in image (engines).
func runSupervised(ctx context.Context, backend string, p *compiler.Plan, m compiler.Machine, as []attempt, o Options, probeBin string) (string, []probe.Result, string, error) {
	q := *p
	q.Command = append([]string{probeBin, "probe"}, probeArgs(as, func(a attempt) string { return a.target })...)
	var out, stderr bytes.Buffer
	code, err := supervise.Run(ctx, &q, supervise.Options{
		Backend: backend, Machine: m, Self: o.Self, Stdout: &out, Stderr: &stderr, Log: io.Discard,
	})
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return "", nil, "", fmt.Errorf("mcpolicy run (%s): %v: %s", backend, err, stderr.String())
	}
	rs, err := parse(out.Bytes(), len(as))
	how := fmt.Sprintf("as mcpolicy run starts it: the egress proxy, then the artefact's %s arguments with the probe as the server; the probe is the mcpolicy executable the sandbox already holds as its egress forwarder, so no mount is added", backend)
	rt := runtimeOf(backend)
	if rt.Sandbox != artefact.Bwrap {
		how += fmt.Sprintf("; stand-in image %s", p.Image)
	}
	return version(rt.Program, "--version"), rs, how, err
}

// runEngine runs the artefact's docker arguments with a stand-in image that
// holds only the probe: the server's own image may not be on this machine,
// and a probe inside it would need a mount the artefact does not have.
func runEngine(ctx context.Context, s *session, backend string, p *compiler.Plan, m compiler.Machine, as []attempt, o Options) (string, []probe.Result, string, error) {
	rt := runtimeOf(backend)
	engine := rt.Program
	if err := exec.CommandContext(ctx, engine, "info").Run(); err != nil {
		return "", nil, "", fmt.Errorf("%s is not usable here", engine)
	}
	image, err := standIn(ctx, s, rt, o.Self)
	if err != nil {
		return "", nil, "", err
	}
	if p.Network.Mode == "allowlist" {
		q := *p
		q.Image = image
		return runSupervised(ctx, backend, &q, m, as, o, "/mcpolicy-probe")
	}
	q := *p
	q.Image = image
	q.Command = append([]string{"/mcpolicy-probe", "probe"}, probeArgs(as, func(a attempt) string { return a.target })...)
	args, err := docker.Args(&q, m)
	if err != nil {
		return "", nil, "", err
	}
	// As mcpolicy-launch runs it: sources checked, the top level fixed.
	profile, err := launch.EngineSeccomp()
	if err != nil {
		return "", nil, "", err
	}
	defer profile.Close()
	if args, err = (launch.Engine{Path: engine, Root: m.ProjectRoot, Home: m.Home, Unprotected: q.UnprotectedNames(), Verifier: o.Self,
		Seccomp: "/proc/self/fd/3"}).Prepare(args); err != nil {
		return "", nil, "", err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, engine, s.labelled(engine, args)...)
	cmd.ExtraFiles = []*os.File{profile} // fd 3
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, "", fmt.Errorf("%s run: %v: %s", engine, err, stderr.String())
	}
	rs, err := parse(out, len(as))
	kept := "removed after the run (the reproduce commands run the server's own image)"
	if o.KeepImages {
		kept = "kept (--keep-image)"
	}
	return version(engine, "--version"), rs,
		fmt.Sprintf("the artefact's arguments with a stand-in image %s holding only the probe (the server's image %q is not needed), %s; flags and mounts unchanged, a name and a label added for the clean-up", image, p.Image, kept), err
}

// standInTag names the stand-in image of a probe binary: the same on
// every run with the same binary, so reports diff clean.
func standInTag(engine artefact.EngineTraits, self string) string {
	bin, err := os.ReadFile(self)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(bin)
	return engine.ImportPrefix + "mcpolicy-prove:" + hex.EncodeToString(sum[:6])
}

// standIn imports an image of the static probe and empty folders, unless
// it is there already; the session removes what it imported.
func standIn(ctx context.Context, s *session, rt artefact.Runtime, self string) (string, error) {
	engine := rt.Program
	bin, err := os.ReadFile(self)
	if err != nil {
		return "", err
	}
	if f, err := elf.NewFile(bytes.NewReader(bin)); err == nil {
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				return "", fmt.Errorf("%s is dynamically linked and cannot run in an empty image: build mcpolicy with CGO_ENABLED=0 to prove %s", self, engine)
			}
		}
	}
	tag := standInTag(rt.Engine, self)
	if exec.CommandContext(ctx, engine, "image", "inspect", tag).Run() == nil {
		return tag, nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"tmp/", "run/", "var/", "var/tmp/", "etc/", "dev/", "proc/", "sys/"} {
		tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
	}
	tw.WriteHeader(&tar.Header{Name: "mcpolicy-probe", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))})
	tw.Write(bin)
	tw.Close()
	// Recorded before the import: an import interrupted halfway may still
	// have made the image.
	s.imported(engine, tag)
	cmd := exec.CommandContext(ctx, engine, "import", "-", tag)
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s import: %v: %s", engine, err, out)
	}
	return tag, nil
}

// fixedTop says whether a plan mounts the project root read-write: its
// top level is fixed by the launcher, not by the emitted arguments.
func fixedTop(p *compiler.Plan) bool {
	for _, mt := range p.Mounts {
		if mt.FixedTop() {
			return true
		}
	}
	return false
}

// reproduce is a command a reviewer can paste to see the same errno with
// ordinary tools.
func reproduce(backend string, p *compiler.Plan, m compiler.Machine, o Options, op probe.Op, target string, it *imageTools) string {
	tool := toolOf(op, target)
	if tool == nil {
		return ""
	}
	var argv []string
	switch {
	case p.Network.Mode == "allowlist" || kind(backend) != artefact.Landlock && fixedTop(p):
		// The sandbox needs the egress proxy running, or the launcher to
		// fix a read-write project's top level (bare bwrap or docker
		// arguments bind it whole: a create there would succeed, and write
		// into the project): mcpolicy run starts them, with the command
		// (and, for an engine, the image) replaced.
		argv = append([]string{"mcpolicy"}, artefact.RunPolicyArgs(o.Policy, p.Server, backend)...)
		if kind(backend) != artefact.Bwrap {
			argv = append(argv, "--image", it.standIn, "--", "/mcpolicy-probe", "probe", string(op)+":"+target)
		} else {
			argv = append(append(argv, "--"), tool...)
		}
	case kind(backend) == artefact.Bwrap:
		q := *p
		q.Command = tool
		args, err := bwrap.Args(&q, m, bwrap.DetectLayout(), 0)
		if err != nil {
			return ""
		}
		argv = append([]string{runtimeOf(backend).Program}, args...)
	case kind(backend) == artefact.Landlock:
		argv = append([]string{"mcpolicy", "exec", "--policy", o.Policy, "--server", p.Server, "--"}, tool...)
	default:
		// The server's own image, with the artefact's flags: its own
		// tool as the entrypoint, or the probe bound in.
		flags, command, ok := it.engineCommand(op, target)
		if !ok {
			return ""
		}
		image := it.image
		if it.kept {
			image = it.standIn
		}
		q := *p
		q.Image, q.Command = image, nil
		args, err := docker.Args(&q, m)
		if err != nil || len(args) == 0 {
			return ""
		}
		args = append(append(args[:len(args)-1], flags...), image)
		argv = append(append([]string{backend}, args...), command...)
	}
	var words []string
	for _, a := range argv {
		q, err := syntax.Quote(a, syntax.LangPOSIX)
		if err != nil {
			return ""
		}
		words = append(words, q)
	}
	return strings.Join(words, " ")
}
