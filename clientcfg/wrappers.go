package clientcfg

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

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
// (envmcp@1.2.0, @scope/name@latest, and PyPI's name==1.0, name[extra]>=2).
func packageName(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at > 0 {
		s = s[:at]
	}
	if i := strings.IndexAny(s, "=<>~![ "); i > 0 {
		s = s[:i]
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

// runSpec is how a wrapper that runs the rest of its arguments as a
// command is read: the options that take a value in the next argument
// (or glued, -n10, --user=x), how many words come between the options
// and the command (timeout's DURATION, chrt's priority, taskset's mask),
// and the options after which there is no command (taskset -p PID).
type runSpec struct {
	value   map[string]bool
	skip    int
	noCmd   map[string]bool
	shortOK bool // a short option's value may be glued (-n10, -uroot)
}

// wordSet is a set of the words ws.
func wordSet(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// runWrappers are the programs that run their command in place, changing
// only how it runs (priority, user, session, buffering, a time limit):
// the server is the command.
var runWrappers = map[string]runSpec{
	"sudo": {value: wordSet("-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host", "-p", "--prompt",
		"-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U", "--other-user", "-R", "--chroot"), shortOK: true,
		noCmd: wordSet("-l", "--list", "-v", "--validate", "-k", "-K", "--remove-timestamp", "-e", "--edit", "-V", "--version")},
	"doas":       {value: wordSet("-u", "-C"), shortOK: true, noCmd: wordSet("-L")},
	"nohup":      {},
	"nice":       {value: wordSet("-n", "--adjustment"), shortOK: true},
	"ionice":     {value: wordSet("-c", "--class", "-n", "--classdata"), shortOK: true, noCmd: wordSet("-p", "--pid", "-P", "--pgid", "-u", "--uid")},
	"setsid":     {},
	"stdbuf":     {value: wordSet("-i", "--input", "-o", "--output", "-e", "--error"), shortOK: true},
	"timeout":    {value: wordSet("-s", "--signal", "-k", "--kill-after"), skip: 1, shortOK: true},
	"chrt":       {value: wordSet("-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"), skip: 1, noCmd: wordSet("-p", "--pid", "-m", "--max")},
	"taskset":    {skip: 1, noCmd: wordSet("-p", "--pid")},
	"caffeinate": {value: wordSet("-t", "-w")},
	"xargs": {value: wordSet("-a", "--arg-file", "-d", "--delimiter", "-E", "-e", "-I", "-L", "-l", "-n", "--max-args", "-P", "--max-procs",
		"-s", "--max-chars", "--process-slot-var"), shortOK: true},
}

// unwrapRun reads PROG [options] [skipped words] CMD...: the command runs
// with the wrapper's changes; sudo and doas run it as root unless -u
// names another user, a dangerous mode of its own.
func (e *entry) unwrapRun(prog string, cmd arg, args []arg) (arg, []arg, string, bool) {
	lower := strings.ToLower(prog)
	spec := runWrappers[lower]
	user := "root"
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a.s == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a.s, "-") || a.s == "-" || lower == "nice" && len(a.s) > 1 && a.s[1] >= '0' && a.s[1] <= '9' {
			if lower == "nice" && strings.HasPrefix(a.s, "-") { // nice -10 CMD, the old form
				continue
			}
			break
		}
		name, val, joined := strings.Cut(a.s, "=")
		if spec.noCmd[name] {
			return arg{}, nil, "", false
		}
		switch {
		case spec.value[name] && !joined:
			if i+1 < len(args) {
				val = args[i+1].s
				i++
			}
		case spec.value[name]:
		case spec.shortOK && !strings.HasPrefix(a.s, "--") && len(a.s) > 2 && spec.value[a.s[:2]]:
			name, val = a.s[:2], a.s[2:] // -n10, -uroot
		}
		if name == "-u" || name == "--user" {
			user = val
		}
	}
	i += spec.skip
	if i >= len(args) {
		return arg{}, nil, "", false // no command (xargs alone runs echo)
	}
	if (lower == "sudo" || lower == "doas") && (user == "root" || user == "0" || user == "#0") {
		e.flag(readback.FlagDangerousMode, fmt.Sprintf("%s: the server runs as root", prog), cmd.pos)
	}
	return args[i], args[i+1:], prog, true
}

// secretRunners are the secret managers that resolve secrets into the
// environment of the command they run: the options of their run command
// that take a value (every other option is a switch).
var secretRunners = map[string]map[string]bool{
	"doppler": wordSet("-p", "--project", "-c", "--config", "--token", "--fallback", "--mount", "--mount-format", "--mount-template",
		"--mount-max-reads", "--name-transformer", "--scope", "--configuration", "--api-host", "--dashboard-host", "--only-secrets",
		"--watch", "--fallback-passphrase"),
	"infisical": wordSet("--env", "-e", "--path", "--projectId", "--token", "--tags", "-t", "--domain", "--watch-interval",
		"--project-config-dir"),
	"aws-vault": wordSet("-d", "--duration", "-t", "--mfa-token", "--region", "--prompt", "--backend", "--ec2-server", "--stdout"),
}

// unwrapSecrets reads doppler run [flags] [--command STR | -- CMD],
// infisical run [flags] [--command STR | -- CMD] and aws-vault exec
// PROFILE [flags] [--] CMD: the manager fetches secrets (or AWS
// credentials) into the command's environment and runs it: the server is
// handed secrets (e.secretsBy).
func (e *entry) unwrapSecrets(prog string, args []arg) (arg, []arg, string, bool) {
	lower := strings.ToLower(prog)
	sub, value := "run", secretRunners[lower]
	if lower == "aws-vault" {
		sub = "exec"
	}
	i := 0
	for i < len(args) && strings.HasPrefix(args[i].s, "-") && args[i].s != "--" { // global options: doppler --token X run
		if _, _, joined := strings.Cut(args[i].s, "="); value[args[i].s] && !joined {
			i++
		}
		i++
	}
	if i >= len(args) || args[i].s != sub {
		return arg{}, nil, "", false
	}
	via := prog + " " + sub
	i++
	if lower == "aws-vault" { // the profile comes first
		if i >= len(args) || strings.HasPrefix(args[i].s, "-") {
			return arg{}, nil, "", false
		}
		i++
	}
	for ; i < len(args); i++ {
		a := args[i]
		name, val, joined := strings.Cut(a.s, "=")
		switch {
		case a.s == "--":
			inner, rest, _, ok := words(args[i+1:], posixShell, via)
			return e.secretsOf(via, inner, rest, via, ok)
		case name == "--command" && lower != "aws-vault": // run through a shell: sh -c STR
			s := arg{val, a.pos}
			if !joined {
				if i+1 >= len(args) {
					return arg{}, nil, "", false
				}
				s = args[i+1]
			}
			inner, rest, _, ok := words([]arg{s}, posixShell, via)
			if ok {
				e.via = append(e.via, via)
				return e.secretsOf(via, inner, rest, "sh -c", ok)
			}
			return arg{}, nil, "", false
		case value[name] && !joined:
			i++
		case strings.HasPrefix(a.s, "-"):
		default:
			return e.secretsOf(via, a, args[i+1:], via, true)
		}
	}
	return arg{}, nil, "", false
}

// secretsOf records the secret manager that hands the command secrets.
func (e *entry) secretsOf(by string, inner arg, rest []arg, via string, ok bool) (arg, []arg, string, bool) {
	if ok {
		e.secretsBy = by
	}
	return inner, rest, via, ok
}

// unwrapDotenv reads dotenv-cli's dotenv [-e FILE]... [-v NAME=V]
// [-c [ENV]] [-p NAME] -- CMD: the env files (default .env) are loaded
// into the command's environment.
func (e *entry) unwrapDotenv(prog string, args []arg) (arg, []arg, string, bool) {
	var files []arg
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.s == "-e" && i+1 < len(args):
			files = append(files, args[i+1])
			i++
		case a.s == "-v" && i+1 < len(args):
			e.assign(args[i+1])
			i++
		case a.s == "-p" && i+1 < len(args):
			return arg{}, nil, "", false // prints a variable
		case a.s == "--":
			inner, rest, _, ok := words(args[i+1:], posixShell, prog)
			if !ok {
				return arg{}, nil, "", false
			}
			if len(files) == 0 {
				files = []arg{{".env", inner.pos}}
			}
			e.envFiles = append(e.envFiles, files...)
			return inner, rest, prog, true
		}
	}
	return arg{}, nil, "", false // dotenv-cli needs -- before the command
}

// unwrapUv reads uv run [options] CMD... (CMD runs in the project's
// environment, with --env-file's variables) and uv tool run PKG (uvx).
func (e *entry) unwrapUv(prog string, args []arg) (arg, []arg, string, bool) {
	if len(args) >= 2 && args[0].s == "tool" && args[1].s == "run" {
		return e.unwrapPackage(prog+" tool run", args[2:])
	}
	if len(args) == 0 || args[0].s != "run" {
		return arg{}, nil, "", false
	}
	var files []arg
	for i := 1; i < len(args); i++ {
		a := args[i]
		name, val, joined := strings.Cut(a.s, "=")
		switch {
		case a.s == "--":
			if i+1 >= len(args) {
				return arg{}, nil, "", false
			}
			e.envFiles = append(e.envFiles, files...)
			return args[i+1], args[i+2:], prog + " run", true
		case name == "--env-file" && joined:
			files = append(files, arg{val, a.pos})
		case name == "--env-file" && i+1 < len(args):
			files = append(files, args[i+1])
			i++
		case (runnerValue[name] || uvValue[name]) && !joined:
			i++
		case strings.HasPrefix(a.s, "-"):
		default:
			if strings.HasSuffix(a.s, ".py") || strings.HasSuffix(a.s, ".pyw") { // a script: the server itself
				return arg{}, nil, "", false
			}
			e.envFiles = append(e.envFiles, files...)
			return a, args[i+1:], prog + " run", true
		}
	}
	return arg{}, nil, "", false
}

// uvValue are uv run's options with a value beyond the runners' ones.
var uvValue = map[string]bool{"--extra": true, "--group": true, "--only-group": true, "--no-group": true, "--index": true,
	"--default-index": true, "--extra-index-url": true, "--find-links": true, "-w": true, "--with-editable": true,
	"--cache-dir": true, "--color": true, "--allow-insecure-host": true, "--env-file": true, "--exclude-newer": true,
	"--resolution": true, "--prerelease": true, "--refresh-package": true, "--reinstall-package": true, "--no-binary-package": true,
	"--no-build-package": true, "--link-mode": true, "--keyring-provider": true, "--config-file": true, "--script": true,
	"--with-requirements": true, "--python-preference": true, "--upgrade-package": true, "-P": true}

// psValue are PowerShell's options that take a value in the next
// argument (-File and the command options are read apart).
var psValue = map[string]bool{"-executionpolicy": true, "-ep": true, "-ex": true, "-windowstyle": true, "-w": true,
	"-workingdirectory": true, "-wd": true, "-configurationname": true, "-config": true, "-outputformat": true, "-of": true,
	"-o": true, "-inputformat": true, "-inp": true, "-if": true, "-psconsolefile": true, "-version": true, "-v": true,
	"-settingsfile": true, "-settings": true, "-custompipename": true, "-configurationfile": true, "-encodedarguments": true,
	"-encodeda": true, "-ea": true}

// psPrefix reports whether o is a prefix of -name at least min long:
// PowerShell takes any unambiguous prefix of a parameter (-comm,
// -encodedc).
func psPrefix(o, name string, min int) bool {
	return len(o) >= min && strings.HasPrefix(name, o)
}

// unwrapPowerShell reads powershell/pwsh [options] -Command STR,
// -CommandWithArgs STR ARGS (pwsh 7.4), -EncodedCommand B64 (-enc, -e,
// -ec: base64 of UTF-16LE, decoded and read), and a bare first word:
// Windows PowerShell takes it as -Command, pwsh as -File (a script, not
// looked through). A command that does not decode still runs through
// PowerShell: it is recorded in via, so the entry is a shell's.
func (e *entry) unwrapPowerShell(prog string, args []arg) (arg, []arg, string, bool) {
	windows := strings.EqualFold(prog, "powershell")
	for i := 0; i < len(args); i++ {
		o := strings.ToLower(args[i].s)
		switch {
		case o == "-commandwithargs" || o == "-cwa" || psPrefix(o, "-commandwithargs", len("-commandw")):
			return words(args[i+1:], windowsShell, prog+" "+args[i].s)
		case o == "-c" || psPrefix(o, "-command", 4):
			return words(args[i+1:], windowsShell, prog+" "+args[i].s)
		case o == "-e" || o == "-ec" || psPrefix(o, "-encodedcommand", 4):
			via := prog + " " + args[i].s
			if i+1 < len(args) {
				if s, ok := decodePS(args[i+1].s); ok {
					return words([]arg{{s, args[i+1].pos}}, windowsShell, via)
				}
			}
			e.via = append(e.via, via+" (a command that does not decode)")
			return arg{}, nil, "", false
		case psValue[o]:
			i++
		case o == "-file" || o == "-f":
			return arg{}, nil, "", false
		case strings.HasPrefix(o, "-") || strings.HasPrefix(o, "/"): // -NoProfile, /NoLogo
		case windows: // Windows PowerShell's default parameter is -Command
			return words(args[i:], windowsShell, prog)
		default: // pwsh's is -File: a script
			return arg{}, nil, "", false
		}
	}
	return arg{}, nil, "", false
}

// decodePS decodes PowerShell's -EncodedCommand: base64 of the command
// in UTF-16LE.
func decodePS(s string) (string, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) == 0 || len(b)%2 != 0 {
		return "", false
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	out := string(utf16.Decode(u))
	if strings.ContainsRune(out, utf8.RuneError) || strings.TrimSpace(out) == "" {
		return "", false
	}
	return out, true
}
