package bwrap

import (
	"path"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/argv"
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
	p := &compiler.Plan{
		Server: e.Server(), Pos: e.Target().Pos, Mounts: []compiler.Mount{}, Env: []compiler.EnvGrant{},
		Protected: []compiler.Protected{}, Backends: []string{Backend},
		User: compiler.User{UID: -1, GID: -1},
	}
	e.Target().Plan = p
	p.Subtractions.NoNewPrivileges, p.Subtractions.DropAllCaps, p.Subtractions.NonRootUser = true, true, true
	unshareNet, newSession, dieWithParent := false, false, false
	shareNetPos := cmd.Pos
	size := ""
	var overlaySrc []string

	mount := func(src, dst string, mode compiler.Mode, a argv.Arg) {
		p.Mounts = append(p.Mounts, compiler.Mount{Source: e.HostPath(src), Target: path.Clean(dst), Mode: mode, Pos: a.Pos})
	}
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
			e.Flag(readback.FlagJoinedArg, a.S, a.Pos)
			split := []argv.Arg{}
			for _, w := range strings.Fields(a.S) {
				split = append(split, argv.Arg{S: w, Pos: a.Pos})
			}
			args = append(args[:i:i], append(split, args[i+1:]...)...)
			continue
		}
		if !known {
			e.Flag(readback.FlagUnknown, a.S, a.Pos)
			i++
			continue
		}
		if i+n >= len(args) {
			e.Flag(readback.FlagUnknown, a.S+" (missing values)", a.Pos)
			i = len(args)
			break
		}
		v := args[i+1 : i+1+n]
		i += 1 + n
		switch a.S {
		case "--ro-bind", "--ro-bind-try":
			mount(v[0].S, v[1].S, compiler.ReadOnly, a)
		case "--bind", "--bind-try", "--dev-bind", "--dev-bind-try":
			if path.Clean(argv.Slash(v[0].S)) == "/" && path.Clean(v[1].S) == "/" {
				e.Flag(readback.FlagBwrapBindRoot, a.S+" / /", a.Pos)
			}
			if argv.EngineSocket(v[0].S) {
				e.Flag(readback.FlagDockerSocket, v[0].S, v[0].Pos)
			}
			mount(v[0].S, v[1].S, compiler.ReadWrite, a)
		case "--size":
			size = v[0].S
		case "--tmpfs":
			n, err := strconv.ParseInt(size, 10, 64)
			switch {
			case err != nil || n <= 0:
				e.Flag(readback.FlagUnboundedTmpfs, v[0].S, v[0].Pos)
			case p.Scratch == nil:
				p.Scratch = &compiler.Scratch{Target: path.Clean(v[0].S), SizeBytes: n, Pos: a.Pos}
			}
			size = ""
		case "--unshare-all", "--unshare-net":
			unshareNet = true
		case "--share-net":
			unshareNet, shareNetPos = false, a.Pos
		case "--new-session":
			newSession = true
		case "--die-with-parent":
			dieWithParent = true
		case "--setenv":
			p.Env = append(p.Env, compiler.EnvGrant{Name: v[0].S, Pos: v[0].Pos})
			e.Target().EnvPassed = append(e.Target().EnvPassed, v[0].S)
			e.DangerousEnv(v[0].S, v[1].S, v[1].Pos)
			if e.Secret(v[0].S, v[1].S) {
				e.Flag(readback.FlagSecretInline, v[0].S, v[1].Pos)
			}
		case "--chdir":
			p.Workdir = v[0].S
		case "--uid", "--gid":
			if v[0].S == compiler.UIDPlaceholder || v[0].S == compiler.GIDPlaceholder { // user: "invoker"
				p.User.Invoker, p.User.UID, p.User.GID = true, -1, -1
				if a.S == "--uid" {
					p.UserPos, p.Subtractions.NonRootUser = v[0].Pos, true
				}
				continue
			}
			id, err := strconv.Atoi(v[0].S)
			if err != nil {
				id = -1
			}
			if a.S == "--uid" {
				p.User.UID, p.UserPos = id, v[0].Pos
				p.Subtractions.NonRootUser = id != 0
			} else {
				p.User.GID = id
			}
		case "--cap-add":
			p.Subtractions.DropAllCaps = false
			for _, c := range argv.Caps(v[0].S) {
				e.Flag(readback.FlagCapAdd, c, v[0].Pos)
			}
		case "--remount-ro":
			if path.Clean(v[0].S) == "/" {
				p.Subtractions.ReadOnlyRoot = true
			}
		case "--overlay-src":
			overlaySrc = append(overlaySrc, v[0].S)
		case "--overlay":
			mount(v[0].S, v[2].S, compiler.ReadWrite, a)
			for _, s := range overlaySrc {
				mount(s, v[2].S, compiler.ReadOnly, a)
			}
			overlaySrc = nil
		case "--tmp-overlay", "--ro-overlay":
			for _, s := range overlaySrc {
				mount(s, v[0].S, compiler.ReadOnly, a)
			}
			overlaySrc = nil
		case "--userns", "--userns2", "--pidns", "--bind-fd", "--ro-bind-fd", "--args":
			// Namespaces, folders or arguments passed as descriptors:
			// what they hold cannot be read off the command line.
			e.Flag(readback.FlagUnknown, a.S, a.Pos)
		}
	}
	e.DangerousArgs(args[i:], false)
	for ; i < len(args); i++ {
		p.Command = append(p.Command, args[i].S)
	}
	if unshareNet {
		p.Network.Mode = "none"
		p.Subtractions.NoNetwork = true
	} else {
		e.Flag(readback.FlagBwrapShareNet, "", shareNetPos)
	}
	if !newSession {
		e.Flag(readback.FlagBwrapNoNewSession, "", cmd.Pos)
	}
	if !dieWithParent {
		e.Flag(readback.FlagBwrapNoDie, "", cmd.Pos)
	}
}
