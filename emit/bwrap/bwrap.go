// Package bwrap emits bubblewrap invocations for a plan: an argv (the
// arguments after "bwrap") and a POSIX shell wrapper that also passes the
// plan's environment variables without putting their values in any argv.
//
// The sandbox starts from nothing: new user, mount, PID, network, IPC and
// UTS namespaces, an empty root that is remounted read-only, a private /proc
// and a minimal /dev; then the runtime baseline, the grants and the
// protected paths are added back, in that order.
package bwrap

import (
	"os"
	"sort"
	"strconv"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
)

// Backend is the name used in artefact paths and messages: the program's
// (launch checks a spec names it).
const Backend = artefact.BwrapProgram

// Program is bubblewrap's executable.
const Program = artefact.BwrapProgram

// DefaultPath is PATH inside the sandbox.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// Layout is what the host's root looks like. On merged-/usr systems /bin,
// /lib, /lib64 and /sbin are symlinks into /usr and are recreated as such;
// elsewhere they are bound read-only when they exist.
type Layout struct {
	MergedUsr bool
}

// Merged is the layout committed artefacts assume: every current major
// distribution (Debian 12+, Ubuntu, Fedora, Arch) ships merged /usr.
var Merged = Layout{MergedUsr: true}

// DetectLayout reads the layout of this machine.
func DetectLayout() Layout {
	fi, err := os.Lstat("/bin")
	return Layout{MergedUsr: err == nil && fi.Mode()&os.ModeSymlink != 0}
}

// usrLinks are the top-level names merged-/usr turns into links.
var usrLinks = []string{"bin", "lib", "lib64", "sbin"}

// Args returns the arguments after "bwrap". Host paths are rendered by r.
// envFD, when > 0, inserts "--args FD" where the passthrough --setenv
// arguments belong (the shell wrapper feeds them there).
func Args(p *compiler.Plan, r compiler.Resolver, layout Layout, envFD int) ([]string, error) {
	if err := emit.Check(p, Backend, Enforcement(p)); err != nil {
		return nil, err
	}
	if len(p.Command) == 0 {
		return nil, &emit.NotEnforceableError{Pos: p.Pos, Server: p.Server, Backend: Backend,
			Restriction: "a server without a command", Alternative: `set "command" (the argv to run) in the policy`}
	}
	uid, gid, err := compiler.UserIDs(p, r)
	if err != nil {
		return nil, err
	}
	a := []string{
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--uid", uid, "--gid", gid,
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--clearenv",
	}
	a = append(a, setenvArgs(p, r)...)
	if envFD > 0 {
		a = append(a, "--args", strconv.Itoa(envFD))
	}
	// /proc/keys lists the names of every key the invoking user's uid can
	// view, across all its keyrings: masked, as Docker masks it.
	a = append(a, "--proc", "/proc", "--ro-bind", "/dev/null", "/proc/keys", "--ro-bind", "/dev/null", "/proc/key-users", "--dev", "/dev")

	// The baseline, then the runtime packs' paths (${HOME}/... in a
	// committed spec, which the launcher expands): each where it exists.
	for _, b := range p.BaselinePaths(r) {
		switch {
		case b == "/usr":
			a = append(a, "--ro-bind", "/usr", "/usr")
			for _, l := range usrLinks {
				if layout.MergedUsr {
					a = append(a, "--symlink", "usr/"+l, "/"+l)
				} else {
					a = append(a, "--ro-bind-try", "/"+l, "/"+l)
				}
			}
		default:
			a = append(a, "--ro-bind-try", b, b)
		}
	}

	// Grants, parents before children so a nested target lands on top.
	type grant struct {
		target string
		args   []string
	}
	var grants []grant
	for _, m := range p.Mounts {
		op := "--ro-bind"
		if m.Mode == compiler.ReadWrite {
			op = "--bind"
		}
		grants = append(grants, grant{m.Target, []string{op, r.Resolve(m.Source), compiler.HomePath(m.Target, r)}})
	}
	for _, s := range p.Tmpfs() { // the scratch, and the packs' caches
		grants = append(grants, grant{s.Target, []string{"--size", strconv.FormatInt(s.SizeBytes, 10), "--tmpfs", compiler.HomePath(s.Target, r)}})
	}
	sort.SliceStable(grants, func(i, j int) bool { return grants[i].target < grants[j].target })
	for _, g := range grants {
		a = append(a, g.args...)
	}
	// Protected paths go after every grant: the read-only bind lands on top
	// of the read-write one that holds it.
	for _, pr := range p.Protected {
		a = append(a, "--ro-bind", r.Resolve(pr.Source), compiler.HomePath(pr.Target, r))
	}
	command := p.Command
	if p.Network.Mode == "allowlist" {
		// The network namespace stays empty: the forwarder, run by bwrap in
		// front of the server, listens on its loopback and carries every
		// connection to the egress proxy's socket, which decides.
		a = append(a, "--ro-bind", r.Resolve(compiler.SelfPath), sandbox.Forwarder,
			"--ro-bind", r.Resolve(compiler.EgressSocketPath), sandbox.Socket)
		for _, kv := range sandbox.ProxyEnv(p.Network.ProxyPort) {
			a = append(a, "--setenv", kv[0], kv[1])
		}
		command = append(append(sandbox.ForwardCommand(p.Network.ProxyPort, false), "--"), p.Command...)
	}
	// Hidden paths after every other mount, so nothing lands on a mask:
	// mcpolicy-launch expands each pattern at spawn and masks each match.
	for _, m := range p.Mounts {
		for _, h := range m.Hide {
			a = append(a, artefact.BwrapHideOp, r.Resolve(m.Source), compiler.HomePath(m.Target, r), h)
		}
	}
	// bwrap's root is a writable tmpfs; after the mount points exist, make
	// it read-only (not recursive: the grants keep their own mode). So is
	// its /dev, device nodes aside: /dev/shm in it was writable storage
	// bounded by nothing but the host's memory, beside a scratch of 64m
	// (red team); docker's is masked too.
	a = append(a, "--remount-ro", "/", "--remount-ro", "/dev")
	if p.Workdir != "" {
		a = append(a, "--chdir", compiler.HomePath(p.Workdir, r))
	}
	a = append(a, "--")
	for _, w := range command {
		a = append(a, p.HomeWord(w, r))
	}
	for _, s := range a {
		if err := emit.CheckSafe(p.Server, "argument", s); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// home is HOME inside the sandbox: the home of the user who starts the
// server when a target is "~/..." (where those targets are), else the
// scratch space when there is one, otherwise the read-only root.
func home(p *compiler.Plan, r compiler.Resolver) string {
	if p.HomeTargets() {
		return compiler.HomePath("~", r)
	}
	if p.Scratch != nil {
		return p.Scratch.Target
	}
	return "/"
}

// setenvArgs set PATH and HOME, then the policy's constant values (its
// own PATH or HOME in place of the default): fixed in the artefact, so
// neither the client's environment nor the env file can change them.
func setenvArgs(p *compiler.Plan, r compiler.Resolver) []string {
	var a []string
	set := map[string]bool{}
	for _, e := range p.EnvValues() {
		set[e.Name] = true
	}
	for _, kv := range [][2]string{{"PATH", DefaultPath}, {"HOME", home(p, r)}} {
		if !set[kv[0]] {
			a = append(a, "--setenv", kv[0], kv[1])
		}
	}
	for _, e := range p.EnvValues() {
		a = append(a, "--setenv", e.Name, p.HomeWord(compiler.ResolveValue(e.Value, r), r))
	}
	return a
}

// EnvArgs returns the --setenv arguments for the plan's passthrough names
// that are set in env, for the --args file descriptor (NUL-separated).
func EnvArgs(p *compiler.Plan, lookup func(string) (string, bool)) []string {
	var a []string
	for _, e := range p.Env {
		if v, ok := lookup(e.Name); ok {
			a = append(a, "--setenv", e.Name, v)
		}
	}
	return a
}
