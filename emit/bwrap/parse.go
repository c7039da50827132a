package bwrap

import (
	"path"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/argv"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// bwrapArgs is how many values each bwrap option takes (bwrap has no
// --opt=value form). Options not handled in Parse confine nothing the
// linter looks at, except those reported as unknown there.
var bwrapArgs = map[string]int{
	"--ro-bind": 2, "--ro-bind-try": 2, "--bind": 2, "--bind-try": 2, "--dev-bind": 2, "--dev-bind-try": 2,
	"--tmpfs": 1, "--size": 1, "--perms": 1, "--chmod": 2, "--dir": 1, "--symlink": 2, "--proc": 1,
	"--dev": 1, "--mqueue": 1, "--file": 2, "--bind-data": 2, "--ro-bind-data": 2, "--remount-ro": 1,
	"--setenv": 2, "--unsetenv": 1, "--clearenv": 0, "--chdir": 1, "--uid": 1, "--gid": 1,
	"--hostname": 1, "--argv0": 1, "--exec-label": 1, "--file-label": 1, "--lock-file": 1,
	"--sync-fd": 1, "--info-fd": 1, "--json-status-fd": 1, "--block-fd": 1, "--userns-block-fd": 1,
	"--seccomp": 1, "--add-seccomp-fd": 1, "--args": 1, "--cap-add": 1, "--cap-drop": 1,
	"--unshare-all": 0, "--unshare-user": 0, "--unshare-user-try": 0, "--unshare-ipc": 0,
	"--unshare-pid": 0, "--unshare-net": 0, "--unshare-uts": 0, "--unshare-cgroup": 0,
	"--unshare-cgroup-try": 0, "--share-net": 0, "--disable-userns": 0, "--assert-userns-disabled": 0,
	"--die-with-parent": 0, "--new-session": 0, "--as-pid-1": 0, "--level-prefix": 0,
	"--userns": 1, "--userns2": 1, "--pidns": 1, "--bind-fd": 2, "--ro-bind-fd": 2,
	"--overlay-src": 1, "--overlay": 3, "--tmp-overlay": 1, "--ro-overlay": 1,
}

// Parse reads a bwrap command line into the entry's plan and flags (lint
// reads hand-written entries this way). Defaults are bwrap's: no namespace is
// unshared unless asked (so the network is shared), no_new_privs is always
// set, and an unprivileged bwrap keeps no capability unless --cap-add.
func Parse(e argv.Entry, cmd argv.Arg, args []argv.Arg) {
	r := &bwrapRun{e: e, shareNetPos: cmd.Pos, p: &compiler.Plan{
		Server: e.Server(), Pos: e.Target().Pos, Mounts: []compiler.Mount{}, Env: []compiler.EnvGrant{},
		Protected: []compiler.Protected{}, Backends: []string{Backend},
		User: compiler.User{UID: -1, GID: -1},
	}}
	e.Target().Plan = r.p
	r.p.Subtractions.NoNewPrivileges, r.p.Subtractions.DropAllCaps, r.p.Subtractions.NonRootUser = true, true, true
	rest := r.options(args)
	e.DangerousArgs(rest, false)
	for _, a := range rest {
		r.p.Command = append(r.p.Command, a.S)
	}
	r.finish(cmd)
}

// bwrapRun is one bwrap command line being read: the plan, and what an
// option says that a later one or the end decides.
type bwrapRun struct {
	e                                     argv.Entry
	p                                     *compiler.Plan
	unshareNet, newSession, dieWithParent bool
	shareNetPos                           position.Pos
	size                                  string   // --size, for the next --tmpfs
	overlaySrc                            []string // --overlay-src, for the next overlay
}

// options reads bwrap's options, up to "--" or the first word that is
// none, and returns the command after them.
func (r *bwrapRun) options(args []argv.Arg) []argv.Arg {
	i := 0
	for i < len(args) {
		a := args[i]
		if a.S == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a.S, "--") {
			break
		}
		n, known := bwrapArgs[a.S]
		if head, _, _ := strings.Cut(a.S, " "); !known && bwrapArgs[head] > 0 {
			// "--ro-bind /usr /usr": one argument, an unknown option to bwrap.
			r.e.Flag(readback.FlagJoinedArg, a.S, a.Pos)
			split := []argv.Arg{}
			for _, w := range strings.Fields(a.S) {
				split = append(split, argv.Arg{S: w, Pos: a.Pos})
			}
			args = append(args[:i:i], append(split, args[i+1:]...)...)
			continue
		}
		if !known {
			r.e.Flag(readback.FlagUnknown, a.S, a.Pos)
			i++
			continue
		}
		if i+n >= len(args) {
			r.e.Flag(readback.FlagUnknown, a.S+" (missing values)", a.Pos)
			return nil
		}
		r.option(a, args[i+1:i+1+n])
		i += 1 + n
	}
	return args[i:]
}

// option reads one option a with its values v.
func (r *bwrapRun) option(a argv.Arg, v []argv.Arg) {
	switch a.S {
	case "--ro-bind", "--ro-bind-try":
		r.mount(v[0].S, v[1].S, compiler.ReadOnly, a)
	case "--bind", "--bind-try", "--dev-bind", "--dev-bind-try":
		if path.Clean(argv.Slash(v[0].S)) == "/" && path.Clean(v[1].S) == "/" {
			r.e.Flag(readback.FlagBwrapBindRoot, a.S+" / /", a.Pos)
		}
		if argv.EngineSocket(v[0].S) {
			r.e.Flag(readback.FlagDockerSocket, v[0].S, v[0].Pos)
		}
		if strings.HasPrefix(a.S, "--dev-bind") { // device nodes work through it: /dev/sda, /dev/mem, ttys
			r.e.Flag(readback.FlagHostDevice, a.S+" "+v[0].S, a.Pos)
		}
		r.mount(v[0].S, v[1].S, compiler.ReadWrite, a)
	case "--size":
		r.size = v[0].S
	case "--tmpfs":
		r.tmpfs(a, v[0])
	case "--unshare-all", "--unshare-net":
		r.unshareNet = true
	case "--share-net":
		r.unshareNet, r.shareNetPos = false, a.Pos
	case "--new-session":
		r.newSession = true
	case "--die-with-parent":
		r.dieWithParent = true
	case "--setenv":
		r.setenv(v[0], v[1])
	case "--chdir":
		r.p.Workdir = v[0].S
	case "--uid", "--gid":
		r.id(a, v[0])
	case "--cap-add":
		r.p.Subtractions.DropAllCaps = false
		for _, c := range argv.Caps(v[0].S) {
			r.e.Flag(readback.FlagCapAdd, c, v[0].Pos)
		}
	case "--remount-ro":
		if path.Clean(v[0].S) == "/" {
			r.p.Subtractions.ReadOnlyRoot = true
		}
	case "--overlay-src":
		r.overlaySrc = append(r.overlaySrc, v[0].S)
	case "--overlay":
		r.mount(v[0].S, v[2].S, compiler.ReadWrite, a)
		r.overlay(v[2], a)
	case "--tmp-overlay", "--ro-overlay":
		r.overlay(v[0], a)
	case "--userns", "--userns2", "--pidns", "--bind-fd", "--ro-bind-fd", "--args":
		// Namespaces, folders or arguments passed as descriptors:
		// what they hold cannot be read off the command line.
		r.e.Flag(readback.FlagUnknown, a.S, a.Pos)
	}
}

func (r *bwrapRun) mount(src, dst string, mode compiler.Mode, a argv.Arg) {
	r.p.Mounts = append(r.p.Mounts, compiler.Mount{Source: r.e.HostPath(src), Target: path.Clean(dst), Mode: mode, Pos: a.Pos})
}

// overlay shows the --overlay-src folders read-only at dst: the writes
// go to the upper folder or to memory.
func (r *bwrapRun) overlay(dst, a argv.Arg) {
	for _, s := range r.overlaySrc {
		r.mount(s, dst.S, compiler.ReadOnly, a)
	}
	r.overlaySrc = nil
}

// tmpfs is the scratch where the --size before it bounds it (the first
// one only), and flagged where nothing does.
func (r *bwrapRun) tmpfs(a, dst argv.Arg) {
	n, err := strconv.ParseInt(r.size, 10, 64)
	switch {
	case err != nil || n <= 0:
		r.e.Flag(readback.FlagUnboundedTmpfs, dst.S, dst.Pos)
	case r.p.Scratch == nil:
		r.p.Scratch = &compiler.Scratch{Target: path.Clean(dst.S), SizeBytes: n, Pos: a.Pos}
	}
	r.size = ""
}

// setenv grants the variable, flagging a dangerous or secret value
// written in the entry.
func (r *bwrapRun) setenv(name, value argv.Arg) {
	r.p.Env = append(r.p.Env, compiler.EnvGrant{Name: name.S, Pos: name.Pos})
	r.e.Target().EnvPassed = append(r.e.Target().EnvPassed, name.S)
	r.e.DangerousEnv(name.S, value.S, value.Pos)
	if r.e.Secret(name.S, value.S) {
		r.e.Flag(readback.FlagSecretInline, name.S, value.Pos)
	}
}

// id reads --uid or --gid: a number, or the invoking user's placeholder.
func (r *bwrapRun) id(a, v argv.Arg) {
	p := r.p
	if v.S == compiler.UIDPlaceholder || v.S == compiler.GIDPlaceholder { // user: "invoker"
		p.User.Invoker, p.User.UID, p.User.GID = true, -1, -1
		if a.S == "--uid" {
			p.UserPos, p.Subtractions.NonRootUser = v.Pos, true
		}
		return
	}
	id, err := strconv.Atoi(v.S)
	if err != nil {
		id = -1
	}
	if a.S == "--uid" {
		p.User.UID, p.UserPos = id, v.Pos
		p.Subtractions.NonRootUser = id != 0
	} else {
		p.User.GID = id
	}
}

// finish flags what bwrap's defaults leave: the network shared, no new
// session (the terminal's ioctls), no death with the parent.
func (r *bwrapRun) finish(cmd argv.Arg) {
	if r.unshareNet {
		r.p.Network.Mode = "none"
		r.p.Subtractions.NoNetwork = true
	} else {
		r.e.Flag(readback.FlagBwrapShareNet, "", r.shareNetPos)
	}
	if !r.newSession {
		r.e.Flag(readback.FlagBwrapNoNewSession, "", cmd.Pos)
	}
	if !r.dieWithParent {
		r.e.Flag(readback.FlagBwrapNoDie, "", cmd.Pos)
	}
}
