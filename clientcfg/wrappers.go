package clientcfg

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// Wrappers looked through to the server they start (op run, envmcp, npx
// envmcp, npx deno), and the ones that confine it by their own means
// (deno's permissions, deno.go; ToolHive's container): read by host.

// opValue are the options of op run (and op's global ones) that take a
// value in the next argument.
var opValue = map[string]bool{"--env-file": true, "--account": true, "--config": true, "--session": true,
	"--encoding": true}

// unwrapOp reads 1Password's op run [--env-file F] [--no-masking] ... --
// CMD...: op resolves the op:// references in its environment and the env
// files into the secrets they name, then runs CMD with them: the server is
// handed secrets (e.secretsBy).
func (e *entry) unwrapOp(prog string, args []arg) (arg, []arg, string, bool) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i].s, "-") && args[i].s != "--" { // op --account X run
		if opValue[args[i].s] {
			i++
		}
		i++
	}
	if i >= len(args) || args[i].s != "run" {
		return arg{}, nil, "", false // op read, op inject, op signin...: not a wrapper
	}
	for i++; i < len(args); i++ {
		a := args[i]
		name, val, joined := strings.Cut(a.s, "=")
		switch {
		case a.s == "--":
			inner, rest, via, ok := words(args[i+1:], posixShell, prog+" run")
			return e.secretsFrom(prog, inner, rest, via, ok)
		case name == "--env-file" && joined:
			e.envFiles = append(e.envFiles, arg{val, a.pos})
		case name == "--env-file" && i+1 < len(args):
			e.envFiles = append(e.envFiles, args[i+1])
			i++
		case opValue[name] && !joined:
			i++
		case strings.HasPrefix(a.s, "-"):
		default: // op run CMD: cobra takes the first word that is no option as the command
			return e.secretsFrom(prog, args[i], args[i+1:], prog+" run", true)
		}
	}
	return arg{}, nil, "", false
}

// secretsFrom records that the command is run by op, which hands it
// secrets.
func (e *entry) secretsFrom(prog string, inner arg, rest []arg, via string, ok bool) (arg, []arg, string, bool) {
	if ok {
		e.secretsBy = prog + " run"
	}
	return inner, rest, via, ok
}

// unwrapEnvmcp reads envmcp [--env-file F | -e F] CMD...: envmcp loads the
// env file (by default a .env.mcp in the working folder or one above it,
// else ~/.env.mcp) into the environment, puts its values in place of the
// $NAME words of CMD, and runs CMD.
func (e *entry) unwrapEnvmcp(prog string, args []arg) (arg, []arg, string, bool) {
	file := arg{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, joined := strings.Cut(a.s, "=")
		switch {
		case (name == "--env-file" || name == "-e") && joined:
			file = arg{val, a.pos}
		case (a.s == "--env-file" || a.s == "-e") && i+1 < len(args):
			file = args[i+1]
			i++
		case a.s == "--":
			inner, rest, _, ok := words(args[i+1:], posixShell, prog)
			return e.envFrom(prog, file, inner, rest, ok)
		case strings.HasPrefix(a.s, "-"):
			return arg{}, nil, "", false // --help, --version: no command
		default:
			return e.envFrom(prog, file, args[i], args[i+1:], true)
		}
	}
	return arg{}, nil, "", false
}

// envFrom records the env file envmcp loads into the server.
func (e *entry) envFrom(prog string, file arg, inner arg, rest []arg, ok bool) (arg, []arg, string, bool) {
	if !ok {
		return arg{}, nil, "", false
	}
	if file.s == "" {
		file = arg{".env.mcp (in the working folder or above, else ~/.env.mcp)", inner.pos}
	}
	e.envFiles = append(e.envFiles, file)
	return inner, rest, prog, true
}

// packageWrappers are the packages a package runner (npx -y NAME) starts
// that are themselves wrappers: looked through as if run directly.
var packageWrappers = map[string]bool{"envmcp": true, "deno": true}

// unwrapPackage reads npx [-y] envmcp ... and npx [-y] deno ...: the
// package is a wrapper or a runtime read on its own (envmcp, deno); any
// other package is the server, run by the runner on the host.
func (e *entry) unwrapPackage(prog string, args []arg) (arg, []arg, string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, joined := strings.Cut(a.s, "=")
		switch {
		case a.s == "--":
		case runnerValue[name] && !joined:
			i++
		case strings.HasPrefix(a.s, "-"):
		default:
			pkg := packageName(a.s)
			if !packageWrappers[pkg] {
				return arg{}, nil, "", false
			}
			if pkg == "envmcp" {
				return e.unwrapEnvmcp(prog+" envmcp", args[i+1:])
			}
			return arg{pkg, a.pos}, args[i+1:], prog, true
		}
	}
	return arg{}, nil, "", false
}

// packageName is a package as a runner names it, without its version
// (envmcp@1.2.0, @scope/name@latest).
func packageName(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at > 0 {
		s = s[:at]
	}
	return s
}

// confinedBy reads a program that confines the server by its own means,
// and reports whether it did: deno run with its permission flags (deno.go),
// and ToolHive's thv run and thv proxy, which start the server in a
// container. Under a client sandbox (srt deno ...) the sandbox is the
// finding.
func (e *entry) confinedBy(prog string, cmd arg, args []arg) bool {
	if e.sandbox != nil {
		return false
	}
	switch strings.ToLower(prog) {
	case "deno":
		return e.deno(prog, cmd, args)
	case "thv":
		return e.toolhive(prog, cmd, args)
	}
	return false
}

// thvBool are thv run's options that take no value; every other option
// takes the next argument unless it is joined (--name=x).
var thvBool = map[string]bool{"-f": true, "--foreground": true, "--isolate-network": true, "--enable-audit": true,
	"--debug": true, "--trust-proxy-headers": true, "--otel-insecure": true,
	"--otel-enable-prometheus-metrics-path": true, "--jwks-allow-private-ip": true, "--print-resolved-overlays": true,
	"--ignore-globally": true}

// toolhive reads thv run [flags] IMAGE_OR_NAME [-- args] and thv proxy
// [stdio] NAME: ToolHive runs the server in a container it configures
// from a permission profile (--permission-profile; by default a registry
// server's own profile, else "network": outbound network open, no host
// files), plus the --volume mounts it is given. The profile's network
// rules are enforced only with --isolate-network. Lint reads the flags,
// not the profile's file nor the registry.
func (e *entry) toolhive(prog string, cmd arg, args []arg) bool {
	if len(args) == 0 || args[0].s != "run" && args[0].s != "proxy" {
		return false
	}
	e.t.Launcher = prog
	name := prog + " " + args[0].s
	if len(e.via) > 0 {
		name += " (through " + strings.Join(e.via, ", ") + ")"
	}
	if args[0].s == "proxy" {
		target := ""
		for i := 1; i < len(args); i++ {
			a := args[i]
			n, _, joined := strings.Cut(a.s, "=")
			switch {
			case a.s == "stdio" && target == "" && i == 1:
			case strings.HasPrefix(a.s, "-") && !joined && !thvBool[n] && i+1 < len(args):
				i++
			case strings.HasPrefix(a.s, "-"):
			case target == "":
				target = a.s
			}
		}
		if target == "" {
			target = "a server"
		}
		e.flag(readback.FlagToolHive, fmt.Sprintf("%s bridges to %s, which ToolHive runs in a container configured when it was started (thv run): its permission profile, mounts and network are not in this entry, so lint cannot judge them", name, target), cmd.pos)
		return true
	}
	profile, isolate, server := "", false, ""
	var volumes []arg
	for i := 1; i < len(args); i++ {
		a := args[i]
		n, v, joined := strings.Cut(a.s, "=")
		value := func() (arg, bool) {
			if joined {
				return arg{v, a.pos}, true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return arg{}, false
		}
		switch {
		case a.s == "--":
			i = len(args) // the server's own arguments, inside the container
		case n == "--permission-profile":
			if p, ok := value(); ok {
				profile = p.s
			}
		case n == "--volume" || n == "-v":
			if p, ok := value(); ok {
				volumes = append(volumes, p)
			}
		case n == "--isolate-network":
			isolate = !joined || !falsy.MatchString(v)
		case strings.HasPrefix(a.s, "-") && thvBool[n]:
		case strings.HasPrefix(a.s, "-"):
			value()
		case server == "":
			server = a.s
		}
	}
	if server == "" {
		server = "a server"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s runs %s in a container ToolHive configures: no host files but the --volume mounts and what the permission profile lists", name, server)
	switch profile {
	case "":
		b.WriteString("; no --permission-profile: a registry server gets the registry's profile, any other \"network\" (outbound network open), and lint reads neither")
	case "none":
		b.WriteString("; --permission-profile none: no network")
	case "network":
		b.WriteString("; --permission-profile network: outbound network open")
	default:
		fmt.Fprintf(&b, "; --permission-profile %s: a file lint does not read", profile)
	}
	if !isolate && profile != "none" {
		b.WriteString("; without --isolate-network the profile's network rules are not enforced")
	}
	e.flag(readback.FlagToolHive, b.String(), cmd.pos)
	for _, v := range volumes {
		host, rest, _ := strings.Cut(v.s, ":")
		if len(host) == 1 && isLetter(host[0]) { // C:\Users\x:/data
			h, r, _ := strings.Cut(rest, ":")
			host, rest = host+":"+h, r
		}
		mode := "read-write"
		if strings.HasSuffix(rest, ":ro") {
			mode = "read-only"
		}
		if what := e.wideGrant(host); what != "" {
			e.flag(readback.FlagHostGrant, fmt.Sprintf("%s mounts %s into the server's container (--volume, %s)", name, what, mode), v.pos)
		}
	}
	return true
}
