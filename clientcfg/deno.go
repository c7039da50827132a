package clientcfg

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// Deno runs a script under its own permission system: without a
// permission flag the script can open no file, host, variable, program or
// library (Deno asks on a terminal, and a server spoken to over stdio has
// none, so every ask is a denial); each --allow-X grants one kind, every
// value or the list it is given. Lint reads the flags as the grants.
// -A, --allow-run and --allow-ffi leave the model: everything, or a
// program or a native library Deno does not check, so the server is as
// unconfined as node.

// denoShort are deno's one-letter permission flags.
var denoShort = map[byte]string{'A': "--allow-all", 'R': "--allow-read", 'W': "--allow-write", 'N': "--allow-net",
	'E': "--allow-env", 'S': "--allow-sys", 'I': "--allow-import", 'P': "--permission-set"}

// denoValue are deno run's options that take the next argument.
var denoValue = map[string]bool{"-c": true, "--config": true, "--import-map": true, "--cert": true, "--location": true,
	"--seed": true, "--ext": true, "--preload": true, "--require": true, "--conditions": true}

// denoGrant is one permission flag: its kind (read, write, net, env,
// sys, import, run, ffi, all; deny-read...), its list ("" when it has
// none: every value), and where it is written.
type denoGrant struct {
	kind, list string
	at         arg
}

// deno reads deno run [flags] SCRIPT [args] (or deno SCRIPT, deno serve):
// reports whether it did; another subcommand (task, eval, install...)
// runs on the host as it is.
func (e *entry) deno(prog string, cmd arg, args []arg) bool {
	i := 0
	switch {
	case len(args) == 0:
		return false
	case args[0].s == "run" || args[0].s == "serve":
		i = 1
	case strings.HasPrefix(args[0].s, "-") || !strings.ContainsAny(args[0].s, ".:/\\"):
		return false // deno task, deno eval...: not a script run under permissions
	}
	var grants []denoGrant
	script := -1
	for ; i < len(args) && script < 0; i++ {
		a := args[i]
		name, val, joined := strings.Cut(a.s, "=")
		switch {
		case a.s == "--":
		case strings.HasPrefix(name, "--allow-") || strings.HasPrefix(name, "--deny-"):
			kind := strings.TrimPrefix(strings.TrimPrefix(name, "--"), "allow-")
			grants = append(grants, denoGrant{kind, val, a})
		case name == "--permission-set":
			grants = append(grants, denoGrant{"set", val, a})
		case denoCluster(name):
			for _, c := range []byte(name[1:]) {
				kind := strings.TrimPrefix(strings.TrimPrefix(denoShort[c], "--"), "allow-")
				if kind == "permission-set" {
					kind = "set"
				}
				g := denoGrant{kind: kind, at: a}
				if len(name) == 2 && joined {
					g.list = val
				}
				grants = append(grants, g)
			}
		case denoValue[name] && !joined:
			i++
		case strings.HasPrefix(a.s, "-"):
		default:
			script = i
		}
	}
	if script < 0 {
		return false // no script: nothing runs
	}
	e.t.Launcher = prog
	name := prog
	if len(e.via) > 0 {
		name += " (through " + strings.Join(e.via, ", ") + ")"
	}
	serverArgs := args[script+1:]
	escapes := false
	for _, g := range grants {
		what := ""
		switch g.kind {
		case "all":
			what = "every Deno permission granted: as unconfined as node"
		case "run":
			what = "the programs it runs are outside Deno's permissions (they can open every file, host and variable): as unconfined as node"
		case "ffi":
			what = "the native libraries it loads are outside Deno's permissions: as unconfined as node"
		}
		if what != "" {
			escapes = true
			e.flag(readback.FlagDangerousMode, fmt.Sprintf("deno %s: %s", g.at.s, what), g.at.pos)
		}
	}
	e.dangerousArgs(serverArgs, true)
	if escapes {
		e.flag(readback.FlagUnconfined, name, cmd.pos)
		for _, g := range e.hostGrants(prog, args) {
			e.flag(g.kind(), fmt.Sprintf("%s runs unconfined on the host and is handed %s%s", prog, g.what, g.how), g.pos)
		}
		e.unconfinedExtras(prog, cmd, args)
		return true
	}
	var items []string
	for _, g := range grants {
		flag := "--" + g.kind
		if !strings.HasPrefix(g.kind, "deny-") {
			flag = "--allow-" + g.kind
		}
		switch {
		case g.kind == "set":
			items = append(items, "the permission set of its deno.json (-P, not read by lint)")
			continue
		case g.list == "":
			items = append(items, g.kind+" (every "+denoEvery(g.kind)+")")
		default:
			items = append(items, g.kind+"="+g.list)
		}
		switch g.kind {
		case "read", "write":
			verb := g.kind
			if g.list == "" {
				e.flag(readback.FlagHostGrant, fmt.Sprintf("deno %s without a list: every file the user can %s", flag, verb), g.at.pos)
				continue
			}
			for _, p := range strings.Split(g.list, ",") {
				if what := e.wideGrant(p); what != "" {
					e.flag(readback.FlagHostGrant, fmt.Sprintf("deno %s=%s lets %s %s %s", flag, g.list, name, verb, what), g.at.pos)
					break
				}
			}
		case "env":
			if g.list == "" {
				e.flag(readback.FlagRuntimeEnvAll, fmt.Sprintf("deno %s without a list: %s reads every variable of the environment the client starts it with, the secrets in it too", g.at.s, name), g.at.pos)
			}
		}
	}
	if len(items) == 0 {
		e.flag(readback.FlagRuntimePermissions, fmt.Sprintf("%s runs %s with no permission flag: Deno denies it every file, host, variable, program and native library (it cannot ask over stdio)", name, args[script].s), cmd.pos)
		return true
	}
	e.flag(readback.FlagRuntimePermissions, fmt.Sprintf("%s runs %s under Deno's permissions, which grant %s; any other file, host, variable, program or native library is denied (Deno cannot ask over stdio)", name, args[script].s, strings.Join(items, ", ")), cmd.pos)
	return true
}

// denoCluster reports whether s is deno's one-letter permission flags
// (-A, -R, -RN): every letter one of denoShort.
func denoCluster(s string) bool {
	if len(s) < 2 || s[0] != '-' || s[1] == '-' {
		return false
	}
	for _, c := range []byte(s[1:]) {
		if denoShort[c] == "" {
			return false
		}
	}
	return true
}

// denoEvery says what a permission without a list grants every one of.
func denoEvery(kind string) string {
	switch strings.TrimPrefix(kind, "deny-") {
	case "read", "write":
		return "file"
	case "net", "import":
		return "host"
	case "env":
		return "variable"
	case "sys":
		return "system information"
	case "run":
		return "program"
	case "ffi":
		return "library"
	}
	return "value"
}
