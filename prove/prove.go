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
	"encoding/json"
	"fmt"
	"github.com/mcpolicy/mcpolicy/egress"
	"github.com/mcpolicy/mcpolicy/supervise"
	"golang.org/x/sys/unix"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/launch"
	"github.com/mcpolicy/mcpolicy/probe"
	"github.com/mcpolicy/mcpolicy/protect"
	"mvdan.cc/sh/v3/syntax"
)

// Backends prove knows, in report order.
var Backends = []string{"bwrap", "landlock", "docker", "podman"}

// Options say what to prove and with what.
type Options struct {
	Backends []string // default: all of Backends
	Probes   []string // extra host paths to try to read
	Self     string   // this mcpolicy binary (the probe and the launcher)
	Policy   string   // the policy path as given, for reproduce commands
	// Call, when set, also starts the real server in the same confinement
	// and puts this tool call to it: the controlled comparison.
	Call *ToolCall
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
}

// Report is the evidence for one server.
type Report struct {
	Server      string          `json:"server"`
	PolicyFile  string          `json:"policyFile"`
	Plan        string          `json:"plan"`
	Kernel      string          `json:"kernel"`
	LandlockABI int             `json:"landlockABI"`
	Backends    []BackendReport `json:"backends"`
}

type attempt struct {
	what   string
	op     probe.Op
	host   string // the host path (landlock's view); "" for non-paths
	target string // the sandbox path (docker, bwrap); == host when not under a mount
	expect string
	cat    bool // reproducible with cat/ls/sh
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
// project, writes into read-only grants and protected paths, the network.
func attempts(p *compiler.Plan, m compiler.Machine, extra []string, listener string, pl *planted) []attempt {
	var as []attempt
	home := m.Home
	deny := func(what string, op probe.Op, host string) {
		as = append(as, attempt{what, op, host, host, "denied", true})
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
	// the project in it.
	if sib := sibling(m.ProjectRoot); sib != "" {
		deny("beside the project, in its parent folder", probe.List, sib)
	}
	for _, x := range extra {
		deny("--probe "+x, probe.Read, x)
	}
	as = append(as, attempt{"the root folder", probe.List, "/", "/", "", true})
	for i, mt := range p.Mounts {
		host := m.Resolve(mt.Source)
		if f := firstFile(host); f != "" {
			rel, _ := filepath.Rel(host, f)
			as = append(as, attempt{"the granted " + string(mt.Mode) + " mount " + mt.Target, probe.Read, f, filepath.Join(mt.Target, rel), "allowed", true})
		}
		if mt.Mode == compiler.ReadOnly {
			name := fmt.Sprintf(".mcpolicy-prove-%d", i)
			as = append(as, attempt{"a write into the read-only mount " + mt.Target, probe.Create, filepath.Join(host, name), filepath.Join(mt.Target, name), "denied", true})
		}
	}
	protected := append([]compiler.Protected{}, p.Protected...)
	for _, mt := range p.Mounts {
		if !mt.FixedTop() {
			continue
		}
		// The launcher fixes this mount's top level: a new name cannot be
		// created, and every protected name present is read-only.
		name := ".mcpolicy-prove-new"
		as = append(as, attempt{"a new top-level name in " + mt.Target, probe.Create, filepath.Join(m.Resolve(mt.Source), name), filepath.Join(mt.Target, name), "denied", true})
		entries, _ := os.ReadDir(m.Resolve(mt.Source))
		for _, e := range entries {
			if n := protect.Match(e.Name()); n != "" && e.Type()&os.ModeSymlink == 0 {
				protected = append(protected, compiler.Protected{Source: mt.Source.Join(e.Name()), Target: filepath.Join(mt.Target, e.Name()), Name: n})
			}
		}
	}
	for _, pr := range protected {
		host := m.Resolve(pr.Source)
		op := probe.Write
		if fi, err := os.Stat(host); err == nil && fi.IsDir() {
			op = probe.Create
			host, pr.Target = filepath.Join(host, "planted"), filepath.Join(pr.Target, "planted")
		}
		as = append(as, attempt{"protected " + pr.Name, op, host, pr.Target, "denied", true})
	}
	as = append(as, attempt{"TCP to a listener on the host's loopback", probe.Connect, listener, listener, "denied", false})
	// Channels the plan does not model, each planted by prove: the
	// invoker's environment, its session keyring, a named unix socket.
	as = append(as, attempt{"the invoker's environment (any readable /proc/PID/environ)", probe.Environ, pl.env, pl.env, "denied", false})
	if pl.key != "" {
		as = append(as, attempt{"the invoker's session keyring", probe.Keyring, pl.key, pl.key, "denied", false})
	}
	as = append(as, attempt{"a unix socket on the host, outside the grants", probe.Unix, pl.socket, pl.socket, "denied", false})
	return as
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
	os.Chmod(dir, 0o755)
	os.Chmod(pl.socket, 0o777) // reachable by the sandbox's user if nothing else stops it
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
			unix.KeyctlInt(unix.KEYCTL_INVALIDATE, pl.keyID, 0, 0, 0)
		}
	}, nil
}

// replant puts the key into the current session keyring: launching bwrap
// moves this process to a new one (launch.FreshSessionKeyring).
func (pl *planted) replant() {
	if pl.key == "" {
		return
	}
	id, err := unix.AddKey("user", pl.key, []byte("planted"), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		pl.key = "" // no keyrings here: nothing to leak
		return
	}
	pl.keyID = id
}

// sibling is an entry of the project's parent other than the project.
func sibling(root string) string {
	entries, err := os.ReadDir(filepath.Dir(root))
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(root) && e.IsDir() {
			return filepath.Join(filepath.Dir(root), e.Name())
		}
	}
	return ""
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
	if len(o.Backends) == 0 {
		o.Backends = Backends
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	pl, unplant, err := plant()
	if err != nil {
		return nil, err
	}
	defer unplant()
	as := attempts(p, m, o.Probes, l.Addr().String(), pl)
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	rep := &Report{Server: p.Server, PolicyFile: p.PolicyFile, Plan: p.Hash, Kernel: strings.TrimSpace(string(kernel)),
		LandlockABI: launch.DetectHost().ABI}
	for _, b := range o.Backends {
		pl.replant()
		br := BackendReport{Backend: b}
		var results []probe.Result
		var view func(attempt) string
		image := ""
		switch b {
		case "bwrap":
			view = func(a attempt) string { return a.target }
			br.Version, results, br.Probe, err = runBwrap(p, m, as, o)
		case "landlock":
			view = func(a attempt) string { return a.host }
			br.Version, results, br.Probe, err = runLandlock(p, as, o)
		case "docker", "podman":
			view = func(a attempt) string { return a.target }
			br.Version, results, br.Probe, err = runEngine(b, p, m, as, o)
			if err == nil {
				image, _ = standIn(b, o.Self)
			}
		default:
			return nil, fmt.Errorf("unknown backend %q (backends: %s)", b, strings.Join(Backends, ", "))
		}
		if err != nil {
			br.Skipped = err.Error()
			rep.Backends = append(rep.Backends, br)
			continue
		}
		for i, a := range as {
			r := results[i]
			row := Row{What: a.what, Op: string(a.op), Target: view(a), Expect: a.expect, Result: r.Result, Meaning: Meaning(r.Result)}
			switch a.op {
			case probe.Connect:
				row.Target = "127.0.0.1:PORT" // the port changes each run; reports must diff clean
			case probe.Environ:
				row.Target = "MCPOLICY_PROVE_CANARY_PID"
			case probe.Keyring:
				row.Target = "user key mcpolicy-prove-PID"
			case probe.Unix:
				row.Target = "/tmp/mcpolicy-prove-sock-*/host.sock"
			}
			switch {
			case b == "landlock" && r.Result == "ENOENT":
				row.Meaning = "does not exist on this host (Landlock shows the host's own paths)"
			case a.op == probe.Connect && r.Result == "EACCES":
				row.Meaning = "refused by policy: TCP connect denied"
			case a.op == probe.Environ && r.Result == "ENOENT":
				row.Meaning = "no process in view shows the variable"
			case a.op == probe.Environ && r.Result == "ok":
				row.Meaning = "a process in view shows the invoker's environment"
			}
			row.Agrees = a.expect == "" || (a.expect == "allowed") == (r.Result == "ok")
			row.Reproduce = reproduce(b, p, m, o, a.op, view(a), image)
			br.Rows = append(br.Rows, row)
		}
		if o.Call != nil {
			probeResult := ""
			for i, a := range as {
				if a.host == o.Call.Target && a.op == probe.Read {
					probeResult = results[i].Result
				}
			}
			br.Server = callServer(b, p, m, o, probeResult)
		}
		rep.Backends = append(rep.Backends, br)
	}
	return rep, nil
}

func probeArgs(as []attempt, view func(attempt) string) []string {
	var args []string
	for _, a := range as {
		args = append(args, string(a.op)+":"+view(a))
	}
	return args
}

func parse(out []byte, n int) ([]probe.Result, error) {
	var rs []probe.Result
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var r probe.Result
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading the probe's answers: %v (output: %q)", err, out)
		}
		rs = append(rs, r)
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

func runBwrap(p *compiler.Plan, m compiler.Machine, as []attempt, o Options) (string, []probe.Result, string, error) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		return "", nil, "", fmt.Errorf("bwrap is not installed")
	}
	if p.Network.Mode == "allowlist" {
		return runSupervised("bwrap", p, m, as, o, egress.ForwarderBinary)
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
	b, err := launch.PrepareBwrap(&launch.BwrapSpec{Backend: bwrap.Backend, Server: q.Server, Plan: q.Hash, Args: args}, m.ProjectRoot, m.Home, nil)
	if err != nil {
		return "", nil, "", err
	}
	cmd, err := b.Command(f)
	if err != nil {
		return "", nil, "", err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, "", fmt.Errorf("bwrap: %v: %s", err, stderr.String())
	}
	rs, err := parse(out, len(as))
	return version("bwrap", "--version"), rs, "the artefact's argv as mcpolicy-launch runs it (mount sources by descriptor, the project's top level fixed), unchanged but for the command: the probe comes in as an open file descriptor (/proc/self/fd/3), with no mount added", err
}

func runLandlock(p *compiler.Plan, as []attempt, o Options) (string, []probe.Result, string, error) {
	if launch.DetectHost().ABI < launch.MinABI {
		return "", nil, "", fmt.Errorf("this kernel has no usable Landlock")
	}
	args := []string{"exec", "--policy", o.Policy, "--server", p.Server}
	for _, a := range probeArgs(as, func(a attempt) string { return a.host }) {
		args = append(args, "--probe="+a)
	}
	// A server with an image only has no host command; in probe mode the
	// command is never run, but the ruleset needs one.
	args = append(args, "--", "/usr/bin/true")
	cmd := exec.Command(o.Self, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, "", fmt.Errorf("mcpolicy exec: %v: %s", err, stderr.String())
	}
	rs, err := parse(out, len(as))
	return fmt.Sprintf("Landlock ABI %d", launch.DetectHost().ABI), rs,
		"the ruleset and namespaces of mcpolicy exec; the probe runs in the confined launcher in place of exec'ing the server, so no rule is added for it", err
}

// runSupervised runs the probe as the server of a plan with an egress
// allowlist, the way mcpolicy run starts it: the proxy, then the sandbox
// whose only way out it is. The probe is mcpolicy itself, already in the
// sandbox as the forwarder (bwrap) or in the stand-in image (engines).
func runSupervised(backend string, p *compiler.Plan, m compiler.Machine, as []attempt, o Options, probeBin string) (string, []probe.Result, string, error) {
	q := *p
	q.Command = append([]string{probeBin, "probe"}, probeArgs(as, func(a attempt) string { return a.target })...)
	var out, stderr bytes.Buffer
	code, err := supervise.Run(context.Background(), &q, supervise.Options{
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
	if backend != "bwrap" {
		how += fmt.Sprintf("; stand-in image %s", p.Image)
	}
	name, arg := backend, "--version"
	return version(name, arg), rs, how, err
}

// runEngine runs the artefact's docker arguments with a stand-in image that
// holds only the probe: the server's own image may not be on this machine,
// and a probe inside it would need a mount the artefact does not have.
func runEngine(engine string, p *compiler.Plan, m compiler.Machine, as []attempt, o Options) (string, []probe.Result, string, error) {
	if err := exec.Command(engine, "info").Run(); err != nil {
		return "", nil, "", fmt.Errorf("%s is not usable here", engine)
	}
	image, err := standIn(engine, o.Self)
	if err != nil {
		return "", nil, "", err
	}
	if p.Network.Mode == "allowlist" {
		q := *p
		q.Image = image
		return runSupervised(engine, &q, m, as, o, "/mcpolicy-probe")
	}
	q := *p
	q.Image = image
	q.Command = append([]string{"/mcpolicy-probe", "probe"}, probeArgs(as, func(a attempt) string { return a.target })...)
	args, err := docker.Args(&q, m)
	if err != nil {
		return "", nil, "", err
	}
	// As mcpolicy-launch runs it: sources checked, the top level fixed.
	if args, err = (launch.Engine{Path: engine, Root: m.ProjectRoot, Home: m.Home, Unprotected: q.Unprotected, Verifier: o.Self}).Prepare(args); err != nil {
		return "", nil, "", err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(engine, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, "", fmt.Errorf("%s run: %v: %s", engine, err, stderr.String())
	}
	rs, err := parse(out, len(as))
	return version(engine, "--version"), rs,
		fmt.Sprintf("the artefact's arguments with a stand-in image %s holding only the probe (the server's image %q is not needed); flags and mounts unchanged", image, p.Image), err
}

// standIn imports (once) an image of the static probe and empty folders.
func standIn(engine, self string) (string, error) {
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
	sum := sha256.Sum256(bin)
	tag := "mcpolicy-prove:" + hex.EncodeToString(sum[:6])
	if engine == "podman" {
		tag = "localhost/" + tag
	}
	if exec.Command(engine, "image", "inspect", tag).Run() == nil {
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
	cmd := exec.Command(engine, "import", "-", tag)
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s import: %v: %s", engine, err, out)
	}
	return tag, nil
}

// reproduce is a command a reviewer can paste to see the same errno with
// ordinary tools.
func reproduce(backend string, p *compiler.Plan, m compiler.Machine, o Options, op probe.Op, target, image string) string {
	tool := map[probe.Op][]string{
		probe.Read: {"cat", target}, probe.List: {"ls", target}, probe.Write: {"sh", "-c", ": >> \"$0\"", target},
		probe.Create: {"sh", "-c", ": > \"$0\"", target},
	}[op]
	if tool == nil {
		return ""
	}
	var argv []string
	switch {
	case p.Network.Mode == "allowlist":
		// The sandbox needs the egress proxy running: mcpolicy run starts
		// both, with the command (and, for an engine, the image) replaced.
		argv = []string{"mcpolicy", "run", "--policy", o.Policy, "--server", p.Server, "--backend", backend}
		if backend != "bwrap" {
			argv = append(argv, "--image", image, "--", "/mcpolicy-probe", "probe", string(op)+":"+target)
		} else {
			argv = append(append(argv, "--"), tool...)
		}
	case backend == "bwrap":
		q := *p
		q.Command = tool
		args, err := bwrap.Args(&q, m, bwrap.DetectLayout(), 0)
		if err != nil {
			return ""
		}
		argv = append([]string{"bwrap"}, args...)
	case backend == "landlock":
		argv = append([]string{"mcpolicy", "exec", "--policy", o.Policy, "--server", p.Server, "--"}, tool...)
	default:
		q := *p
		q.Image, q.Command = image, []string{"/mcpolicy-probe", "probe", string(op) + ":" + target}
		args, err := docker.Args(&q, m)
		if err != nil {
			return ""
		}
		argv = append([]string{backend}, args...)
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
