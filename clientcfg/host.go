package clientcfg

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/secretshape"
)

// hostRun is what an entry keeps while it reads a command run on the host:
// the wrappers looked through, the client's sandbox when one applies, and
// the variables the entry sets (its env object, Codex's env_vars, an env
// wrapper's assignments), with positions.
type hostRun struct {
	depth   int      // wrappers looked through so far
	via     []string // "sh -c", "cmd /c", "wsl": how the command was reached
	sandbox *clientSandbox
	envKeys []envKey
	// secretsBy names a wrapper that resolves secret references into the
	// server's environment ("op run": op:// references in the env and
	// the env file become the secrets themselves): the server is handed
	// secrets, whatever the entry's values look like.
	secretsBy string
	// envFiles are the files a wrapper loads into the server's
	// environment (op run --env-file, envmcp's --env-file or its
	// default .env.mcp), as written.
	envFiles []arg
	// clientEnvFile is the file the client itself loads into the server's
	// environment (VS Code's envFile), as written.
	clientEnvFile *arg
}

// envKey is one variable the entry sets.
type envKey struct {
	name, value string
	hasValue    bool // a string value (Codex's env_vars names have none)
	pos, valPos position.Pos
}

// maxWrap bounds how many wrappers are looked through (wsl bash -lc "env
// X=1 srt npx ..." is four).
const maxWrap = 6

// wrappers are the programs host looks through to the command they run;
// a command string starting with one is split (see launchers).
var wrappers = []string{"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish", "cmd", "powershell", "pwsh",
	"wsl", "env", "srt", "op", "envmcp", "thv", "sudo", "doas", "nohup", "nice", "ionice", "setsid", "stdbuf", "timeout",
	"chrt", "taskset", "caffeinate", "xargs", "doppler", "infisical", "aws-vault", "dotenv", "uv"}

func init() {
	for _, w := range wrappers {
		launchers[w] = true
	}
}

// host reads a command run directly on the host. A shell, cmd /c,
// PowerShell -Command, wsl or env is looked through to the command it
// runs (the inner words at the position of the argument that holds them);
// srt, or VS Code's sandboxEnabled, is a client sandbox, recorded with what
// it enforces and leaves open; anything else runs unconfined. Arguments and
// the entry's env are read for the home folders, credential stores and
// roots they hand the server, and for dangerous modes.
func (e *entry) host(prog string, cmd arg, args []arg) {
	if e.depth < maxWrap {
		if inner, rest, via, ok := e.unwrap(prog, cmd, args); ok {
			e.depth++
			if via != "" {
				e.via = append(e.via, via)
			}
			e.launch(inner, rest)
			return
		}
	}
	if e.confinedBy(prog, cmd, args) { // wrappers.go: deno's permissions, ToolHive's container
		return
	}
	e.t.Launcher = prog
	e.dangerousArgs(args, true)
	grants := e.hostGrants(prog, args)
	name := prog
	if len(e.via) > 0 {
		name += " (through " + strings.Join(e.via, ", ") + ")"
	}
	if s := e.sandbox; s != nil {
		e.flag(readback.FlagClientSandbox, s.describe(e, name), s.pos)
		for _, w := range s.allowWrite {
			if what := e.wideGrant(w.s); what != "" {
				e.flag(readback.FlagHostGrant, fmt.Sprintf("%s lets %s write %s (allowWrite): as wide as no sandbox there", s.by, prog, what), w.pos)
			}
		}
		// These sandboxes confine writes, not reads: what the server is
		// handed, it reads in full, as unconfined, unless denyRead covers it.
		for _, g := range grants {
			if !e.denied(s.denyRead, g.path) {
				e.flag(g.kind(), fmt.Sprintf("%s runs under %s, which leaves reads open, and is handed %s%s, readable in full", prog, s.by, g.what, g.how), g.pos)
			}
		}
		return
	}
	e.flag(readback.FlagUnconfined, name, cmd.pos)
	for _, g := range grants {
		e.flag(g.kind(), fmt.Sprintf("%s runs unconfined on the host and is handed %s%s", prog, g.what, g.how), g.pos)
	}
	e.unconfinedExtras(prog, cmd, args)
}

// unconfinedExtras flags what makes an unconfined server an error beyond
// its folders: the shell it starts through, the secrets it is handed.
func (e *entry) unconfinedExtras(prog string, cmd arg, args []arg) {
	if sh := e.shell(); sh != "" {
		e.flag(readback.FlagUnconfinedShell, fmt.Sprintf("%s starts through %s, unconfined: the shell's string decides what runs, and nothing confines it", prog, sh), cmd.pos)
	}
	e.runsWhatItIsTold(prog, cmd, args) // runswhat.go
	for _, s := range e.handedSecrets(cmd, args) {
		e.flag(readback.FlagUnconfinedSecret, fmt.Sprintf("%s runs unconfined on the host and is handed %s", prog, s.what), s.pos)
	}
}

// shell is the first shell the command was reached through (sh -c, bash
// -lc, cmd /c, powershell -Command, wsl without --exec), "" for none.
func (e *entry) shell() string {
	for _, v := range e.via {
		w, _, _ := strings.Cut(v, " ")
		if shells[strings.ToLower(w)] && v != "wsl -e" && v != "wsl --exec" {
			return v
		}
	}
	return ""
}

// handedSecrets are the secrets an entry hands the server it runs: the
// variables it sets whose names say secret (by value or by reference:
// ${env:GITHUB_TOKEN} is the token all the same), Codex's forwarded
// env_vars so named, and the values of secret-named options in its
// arguments (--api-key X, --token=${input:pat}), and what a wrapper
// resolves or loads for it: op run's secrets, an env file (op, envmcp).
func (e *entry) handedSecrets(cmd arg, args []arg) []grant {
	var out []grant
	if e.secretsBy != "" {
		what := "the secrets " + e.secretsBy + " puts in its environment"
		if strings.HasPrefix(e.secretsBy, "op ") {
			what = "the secrets " + e.secretsBy + " resolves from op:// references"
		}
		out = append(out, grant{what: what, pos: cmd.pos})
	}
	if f := e.clientEnvFile; f != nil {
		out = append(out, grant{what: "the variables of the env file " + f.s + ", which the client loads (envFile)", pos: f.pos})
	}
	for _, f := range e.envFiles {
		out = append(out, grant{what: "the variables of the env file " + f.s + ", which the wrapper loads", pos: f.pos})
	}
	for _, k := range e.envKeys {
		// A connection string without a password in it hands none.
		noPassword := secretshape.DSNNamed(k.name) && k.hasValue && !isReference(k.value) && !strings.Contains(k.value, "@")
		// A literal value hands a secret when it is one, or a placeholder
		// the user replaces with one; a setting (true, 3, a path) none.
		literal := k.hasValue && !isReference(k.value) && !secretshape.NoSecret(k.value) &&
			(looksLikeSecret(k.name, k.value) || secretshape.Placeholder(k.name, k.value, true) || strings.HasPrefix(strings.TrimSpace(k.value), "$("))
		if secretNamed(k.name) && !noPassword && (!k.hasValue || isReference(k.value) && strings.TrimSpace(k.value) != "" || literal) {
			how := "(env " + k.name + ")"
			if !k.hasValue {
				how = "(env_vars " + k.name + ", forwarded from the client's environment)"
			}
			out = append(out, grant{what: "the secret " + k.name + " " + how, pos: k.valPos})
			continue
		}
		// "X": "${GITHUB_TOKEN}": the variable's name is the secret's,
		// whatever the key it is passed under.
		for _, r := range secretshape.SecretRefs(k.value) {
			if r.Form != "${input:}" || e.secrets.inputs[r.Name] {
				out = append(out, grant{what: "the secret " + r.Name + " (env " + k.name + ")", pos: k.valPos})
				break
			}
		}
	}
	for i, a := range args {
		name, val, joined := strings.Cut(a.s, "=")
		if !strings.HasPrefix(name, "-") || !secretNamed(strings.TrimLeft(name, "-")) {
			continue
		}
		pos := a.pos
		if !joined {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1].s, "-") {
				continue
			}
			val, pos = args[i+1].s, args[i+1].pos
		}
		if strings.TrimSpace(val) != "" && !secretshape.NoSecret(val) {
			out = append(out, grant{what: "the secret passed as " + name, pos: pos})
		}
	}
	return out
}

// unwrap returns the command a wrapper runs, and how it was reached.
func (e *entry) unwrap(prog string, cmd arg, args []arg) (arg, []arg, string, bool) {
	lower := strings.ToLower(prog)
	switch lower {
	case "sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish":
		return e.unwrapShell(prog, args)
	case "cmd":
		for i, a := range args {
			switch o := strings.ToLower(a.s); {
			case o == "/c" || o == "/k":
				return words(cmdQuotes(args[i+1:]), windowsShell, prog+" "+a.s)
			case strings.HasPrefix(o, "/c") || strings.HasPrefix(o, "/k"): // cmd /c"npx -y srv", /cnpx: glued
				glued := append([]arg{{a.s[2:], a.pos}}, args[i+1:]...)
				return words(cmdQuotes(glued), windowsShell, prog+" "+a.s[:2])
			case strings.HasPrefix(o, "/"):
			default:
				return arg{}, nil, "", false
			}
		}
	case "powershell", "pwsh":
		return e.unwrapPowerShell(prog, args)
	case "wsl":
		for i := 0; i < len(args); i++ {
			switch o := args[i].s; o {
			case "-d", "--distribution", "-u", "--user", "--cd", "--shell-type":
				i++
			case "--system", "~":
			case "-e", "--exec", "--":
				return words(args[i+1:], posixShell, prog+" "+o)
			default:
				if strings.HasPrefix(o, "-") {
					return arg{}, nil, "", false // --install, --list...: not a command
				}
				return words(args[i:], posixShell, prog)
			}
		}
	case "env":
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a.s == "-i" || a.s == "--ignore-environment" || a.s == "-0" || a.s == "--null" || strings.HasPrefix(a.s, "--unset=") || strings.HasPrefix(a.s, "--chdir="):
			case a.s == "-u" || a.s == "--unset" || a.s == "-C" || a.s == "--chdir":
				i++
			case a.s == "-S" || a.s == "--split-string":
				return words(args[i+1:], posixShell, prog+" -S")
			case a.s == "--":
				return words(args[i+1:], posixShell, prog)
			case assignment.MatchString(a.s):
				e.assign(a)
			case strings.HasPrefix(a.s, "-"):
				return arg{}, nil, "", false
			default:
				return args[i], args[i+1:], prog, true
			}
		}
	case "srt":
		return e.unwrapSrt(cmd, args)
	case "op":
		return e.unwrapOp(prog, args)
	case "envmcp":
		return e.unwrapEnvmcp(prog, args)
	case "npx", "pnpx", "bunx":
		return e.unwrapPackage(prog, args)
	case "pnpm", "yarn", "npm": // pnpm dlx, yarn dlx, npm exec: npx's twins
		if len(args) > 0 && (args[0].s == "dlx" && lower != "npm" || args[0].s == "exec" && lower == "npm") {
			return e.unwrapPackage(prog+" "+args[0].s, args[1:])
		}
	case "doppler", "infisical", "aws-vault":
		return e.unwrapSecrets(prog, args)
	case "dotenv":
		return e.unwrapDotenv(prog, args)
	case "uv":
		return e.unwrapUv(prog, args)
	}
	if _, ok := runWrappers[lower]; ok {
		return e.unwrapRun(prog, cmd, args)
	}
	return arg{}, nil, "", false
}

// cmdQuotes takes off the quotes cmd /c takes off its command string
// when the whole first argument is one quoted command line: "npx -y srv"
// runs npx. A quoted program path ("C:\Program Files\x.exe" run) keeps
// its quotes.
func cmdQuotes(as []arg) []arg {
	if len(as) == 0 {
		return as
	}
	s := as[0].s
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' || strings.Count(s, `"`) != 2 {
		return as
	}
	first, _, _ := strings.Cut(strings.TrimSpace(s[1:len(s)-1]), " ")
	if strings.ContainsAny(first, `\/`) {
		return as
	}
	out := slices.Clone(as)
	out[0].s = s[1 : len(s)-1]
	return out
}

// unwrapShell reads sh/bash/zsh... -c "COMMAND": a cluster holding c
// (-c, -lc, -ic) takes the next word that is not an option as the command
// string. A script (bash server.sh) is not looked through.
func (e *entry) unwrapShell(prog string, args []arg) (arg, []arg, string, bool) {
	via := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.s == "-o" || a.s == "+o" || a.s == "-O" || a.s == "+O" || a.s == "--rcfile" || a.s == "--init-file":
			i++
		case a.s == "--" && via != "" && i+1 < len(args): // bash -c -- STR: the string follows
			inner, rest, _, ok := words(args[i+1:i+2], posixShell, via)
			return inner, rest, via, ok
		case strings.HasPrefix(a.s, "--"):
			if a.s == "--" {
				return arg{}, nil, "", false
			}
		case (strings.HasPrefix(a.s, "-") || strings.HasPrefix(a.s, "+")) && len(a.s) > 1:
			if strings.ContainsRune(a.s[1:], 'c') {
				via = prog + " " + a.s
			}
		case via != "":
			inner, rest, _, ok := words([]arg{a}, posixShell, via)
			return inner, rest, via, ok
		default:
			return arg{}, nil, "", false
		}
	}
	return arg{}, nil, "", false
}

// unwrapSrt reads srt [-d] [-s|--settings FILE] [-c COMMAND] [--] CMD...:
// the command runs under the sandbox-runtime with FILE's settings
// (default ~/.srt-settings.json).
func (e *entry) unwrapSrt(cmd arg, args []arg) (arg, []arg, string, bool) {
	s := &clientSandbox{by: "srt (sandbox-runtime)", pos: cmd.pos, srt: true, settings: "~/.srt-settings.json"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.s == "-d" || a.s == "--debug":
		case (a.s == "-s" || a.s == "--settings") && i+1 < len(args):
			s.settings, s.settingsSet = args[i+1].s, true
			i++
		case strings.HasPrefix(a.s, "--settings="):
			s.settings, s.settingsSet = strings.TrimPrefix(a.s, "--settings="), true
		case a.s == "--control-fd" && i+1 < len(args):
			s.controlFD = true
			i++
		case a.s == "-c" && i+1 < len(args):
			e.sandbox = s
			return words(args[i+1:i+2], posixShell, "")
		case a.s == "--":
			e.sandbox = s
			return words(args[i+1:], posixShell, "")
		case strings.HasPrefix(a.s, "-"):
		default:
			e.sandbox = s // a sandbox, not a way through: the finding names it
			return args[i], args[i+1:], "", true
		}
	}
	return arg{}, nil, "", false
}

// words turns a wrapper's remaining arguments into the command they run:
// one argument holding a command line is split (splitCommand, in the
// shell's syntax sh), each word at that argument's position; several are
// taken as they are, the first one split when it holds blanks ("npx -y",
// "x").
func words(as []arg, sh syntax, via string) (arg, []arg, string, bool) {
	var out []arg
	for i, a := range as {
		if i > 0 && len(as) > 1 {
			out = append(out, a)
			continue
		}
		ws, _ := splitCommand(a.s, sh)
		for _, w := range ws {
			out = append(out, arg{w, a.pos})
		}
	}
	if len(out) == 0 || out[0].s == "" {
		return arg{}, nil, "", false
	}
	return out[0], out[1:], via, true
}

// assign records an env wrapper's NAME=value as a variable the entry sets.
func (e *entry) assign(a arg) {
	name, val, _ := strings.Cut(a.s, "=")
	e.envKeys = append(e.envKeys, envKey{name: name, value: val, hasValue: true, pos: a.pos, valPos: a.pos})
	e.t.EnvPassed = append(e.t.EnvPassed, name)
	e.dangerousEnv(name, val, a.pos)
}

// grant is a wide host path handed to a server: what it is, how (through
// which variable), where.
type grant struct {
	what, how, path string
	pos             position.Pos
	user            bool // one of the user's folders (userFolderOf), not a home, root or store
}

// kind is the flag a grant is reported by: a user folder its own, so that
// import, which refuses what is too wide for any policy, still grants it.
func (g grant) kind() readback.FlagKind {
	if g.user {
		return readback.FlagUserFolder
	}
	return readback.FlagHostGrant
}

// runners are programs that fetch and start a package; the values of
// their own options (uv --directory, uvx --from, npx --prefix) are where
// they work or what they fetch, not folders handed to the server.
var runners = map[string]bool{"npx": true, "uvx": true, "uv": true, "pnpm": true, "pnpx": true, "yarn": true,
	"bun": true, "bunx": true, "pipx": true, "npm": true, "deno": true}

var runnerValue = map[string]bool{"--directory": true, "--project": true, "--from": true, "--with": true,
	"--prefix": true, "--cwd": true, "-C": true, "--dir": true, "--python": true, "-p": true, "--package": true,
	"--with-requirements": true, "--index-url": true, "--config": true, "--spec": true}

var runnerSub = map[string]bool{"run": true, "tool": true, "exec": true, "dlx": true, "x": true}

// hostGrants reads a host-run command's arguments, and the entry's env,
// for the home folders, credential stores, drive roots and / they hand the
// server: a bare path, an --option=path, a list (a,b or a:b), as written.
func (e *entry) hostGrants(prog string, args []arg) []grant {
	var gs []grant
	runner := runners[strings.ToLower(prog)]
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.s
		if runner {
			name, _, joined := strings.Cut(s, "=")
			switch {
			case runnerValue[name] && !joined:
				i++
				continue
			case runnerValue[name] || runnerSub[s] || strings.HasPrefix(s, "-"):
				continue
			}
			runner = false // the package or script: the server's own arguments follow
			continue
		}
		if strings.HasPrefix(s, "-") {
			_, v, ok := strings.Cut(s, "=")
			if !ok {
				continue
			}
			s = v
		}
		for _, p := range pathList(s) {
			p, how := e.fromCwd(p)
			if what := e.wideGrant(p); what != "" {
				gs = append(gs, grant{what: what, how: how, path: p, pos: a.pos})
				break
			}
			if what := e.userFolderOf(p); what != "" {
				gs = append(gs, grant{what: what, how: how, path: p, pos: a.pos, user: true})
				break
			}
		}
	}
	for _, k := range e.envKeys {
		if !k.hasValue || plumbing(k.name) {
			continue
		}
		for _, p := range pathList(k.value) {
			if what := e.wideGrant(p); what != "" {
				gs = append(gs, grant{what: what, how: " (env " + k.name + ")", path: p, pos: k.valPos})
				break
			}
			if what := e.userFolderOf(p); what != "" {
				gs = append(gs, grant{what: what, how: " (env " + k.name + ")", path: p, pos: k.valPos, user: true})
				break
			}
		}
	}
	return gs
}

// fromCwd reads ".", "..", "./x" or "../x" as the folder the server
// starts in joined with it: the entry's cwd as written, else the folder of
// the project that lists the entry (a ~/.claude.json project's key); how
// says so. Any other path is returned as it is.
func (e *entry) fromCwd(p string) (string, string) {
	rel := strings.Trim(strings.TrimSpace(p), `"'`)
	if rel != "." && rel != ".." && !strings.HasPrefix(rel, "./") && !strings.HasPrefix(rel, "../") &&
		!strings.HasPrefix(rel, `.\`) && !strings.HasPrefix(rel, `..\`) {
		return p, ""
	}
	base, how := e.cwdRaw, " (cwd "+e.cwdRaw+")"
	if base == "" {
		base, how = e.projectRoot, " (the project "+e.projectRoot+")"
	}
	if base == "" || !isAbs(slash(base)) && !strings.HasPrefix(base, "~") && !strings.HasPrefix(base, "$") {
		return p, ""
	}
	joined := path.Join(lint.SlashPath(base), lint.SlashPath(rel))
	if rel == "." {
		how = strings.Replace(how, " (", " (\".\" in ", 1)
	}
	return joined, how
}

// pathList splits a value that may list paths: at commas and semicolons,
// and at colons that are not a Windows drive's (C:\), a URL's, nor a
// variable's ($env:USERPROFILE, ${env:HOME}).
func pathList(s string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		if strings.Contains(p, "://") {
			if strings.HasPrefix(p, "file://") { // a file URL names a path
				out = append(out, p)
			}
			continue
		}
		from, braces := 0, 0
		for i := 0; i < len(p); i++ {
			switch {
			case p[i] == '{' && i > 0 && p[i-1] == '$':
				braces++
			case p[i] == '}' && braces > 0:
				braces--
			}
			if p[i] != ':' || braces > 0 || i == from+1 && isLetter(p[from]) || envColon(p[from:i]) {
				continue
			}
			out = append(out, p[from:i])
			from = i + 1
		}
		out = append(out, p[from:])
	}
	return out
}

// envColon reports whether s ends in PowerShell's $env or VS Code's
// ${env, whose colon starts a variable's name, not another path.
func envColon(s string) bool {
	s = strings.ToLower(s)
	return strings.HasSuffix(s, "$env") || strings.HasSuffix(s, "${env")
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// wideGrant says what a path written in an entry is when it is wide: the
// filesystem root, a whole drive, the folder of every home, a home folder,
// or a credential store (in it, or holding it); "" otherwise. It is read as
// written, for whatever machine the config is for (lint.ReadHostPath).
func (e *entry) wideGrant(raw string) string {
	s, f, ok := e.readPath(raw)
	if !ok {
		return ""
	}
	switch {
	case f.Root && (f.Path == "/"):
		return "the filesystem root /"
	case f.Root:
		return "the whole drive " + s
	case f.HoldsHomes:
		return "the folder of every home, " + s
	case f.IsHome():
		return "the home folder " + s
	}
	if st := f.Stores(); len(st) > 0 {
		if f.Home != "" && len(st) == 1 && (f.Sub == strings.TrimPrefix(st[0], "~/") || strings.HasPrefix(f.Sub, strings.TrimPrefix(st[0], "~/")+"/")) {
			return "the credential store " + st[0] + " (" + s + ")"
		}
		return s + ", which holds the credential stores " + strings.Join(st, ", ")
	}
	return ""
}

// userFolderOf says what a path written in an entry is when it is one of
// the user's folders, a drive's top-level folder or a volume (userFolder);
// "" otherwise. Wide for an unconfined server, not for a policy: import
// grants it (confined, it is a folder like another).
func (e *entry) userFolderOf(raw string) string {
	s, f, ok := e.readPath(raw)
	if !ok {
		return ""
	}
	if rest, ok := strings.CutPrefix(lint.SlashPath(s), "${workspaceFolder}"); ok && strings.HasPrefix(path.Clean("."+rest), "..") && strings.Trim(path.Clean("."+rest), "./") == "" {
		return "the folder above the project, " + s
	}
	return userFolder(f, s)
}

// readPath reads a path written in an entry, as written for whatever
// machine the config is for: unquoted, spelled as lint reads it
// (hostSpelling), a trailing glob dropped; ok is false for none.
func (e *entry) readPath(raw string) (string, lint.PathFacts, bool) {
	s := hostSpelling(strings.Trim(strings.TrimSpace(raw), `"'`))
	for _, g := range []string{"/**", `\**`, "/*", `\*`} {
		s = strings.TrimSuffix(s, g)
	}
	if s == "" {
		return "", lint.PathFacts{}, false
	}
	var homes []string
	if e.home != "" {
		homes = append(homes, e.home)
	}
	return s, lint.ReadHostPath(s, homes...), true
}

// plumbing reports whether a variable only sets up the process (where
// home, temp and caches are, the search path, the engine's own settings):
// its value is not a folder handed to the server.
func plumbing(name string) bool {
	n := strings.ToUpper(name)
	switch n {
	case "HOME", "USERPROFILE", "HOMEPATH", "HOMEDRIVE", "PATH", "PWD", "OLDPWD", "SHELL", "USER", "LOGNAME",
		"TMPDIR", "TMP", "TEMP", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "SYSTEMROOT", "WINDIR", "COMSPEC",
		"PYTHONPATH", "NODE_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "GOPATH", "NVM_DIR", "SSH_AUTH_SOCK",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "CONTAINER_HOST":
		return true
	}
	for _, p := range []string{"XDG_", "DOCKER_", "PODMAN_", "CONTAINERS_", "BUILDKIT_", "NPM_CONFIG_", "UV_", "PIP_"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return strings.HasSuffix(n, "_HOME") || strings.Contains(n, "CACHE")
}

// Dangerous modes: switches documented to turn off a program's own
// approvals or sandbox, and env switches whose names say so.
var (
	dangerEnv    = lazyre.New(`(?i)(DANGEROUS|(^|_)YOLO($|_)|(^|_)ALLOW_ALL($|_)|SKIP_PERMISSIONS|BYPASS_PERMISSIONS|DISABLE_SANDBOX|NO_SANDBOX)`)
	notDangerEnv = lazyre.New(`(?i)(CORS|ORIGIN)`)
	falsy        = lazyre.New(`(?i)^\s*(|0|false|no|n|off|none|disabled?)\s*$`)
)

// dangerousArgs flags the dangerous-mode switches among a command's
// arguments. onHost: the command runs on the host (a browser's
// --no-sandbox counts there; in a container Chrome needs it).
func (e *entry) dangerousArgs(args []arg, onHost bool) {
	for i, a := range args {
		name, val, joined := strings.Cut(a.s, "=")
		next := ""
		if !joined && i+1 < len(args) {
			next = args[i+1].s
		}
		shown := a.s
		if !joined {
			val, shown = next, a.s+" "+next
		}
		what := ""
		switch l := strings.ToLower(name); {
		case strings.HasPrefix(l, "--dangerously-"):
			what = "a switch its own name calls dangerous (it skips the program's permission checks or sandbox)"
		case l == "--yolo":
			what = "YOLO mode: every tool call approved without asking"
		case l == "--approval-mode" && strings.EqualFold(val, "yolo"):
			what = "YOLO mode: every tool call approved without asking"
			a.s = shown
		case l == "--permission-mode" && strings.EqualFold(val, "bypassPermissions"):
			what = "Claude Code's permission checks bypassed"
			a.s = shown
		case (l == "--sandbox" || l == "-s") && strings.EqualFold(val, "danger-full-access"):
			what = "Codex's sandbox turned off (full access)"
			a.s = shown
		case (l == "-c" || l == "--config") && codexDanger(val) != "":
			what = codexDanger(val)
			a.s = shown
		case l == "-y" && !joined && strings.EqualFold(e.t.Launcher, "gemini"): // gemini's -y is --yolo
			what = "YOLO mode: every tool call approved without asking"
		case l == "--allow-unrestricted-file-access":
			what = "Playwright's file access outside its roots allowed"
		case l == "--allow-all" || l == "--allow-all-tools" || l == "--allow-all-paths":
			what = "every tool, path or permission allowed without asking"
		case l == "--no-sandbox" && onHost:
			what = "the browser's own sandbox turned off, on the host"
		}
		if what != "" {
			e.flag(readback.FlagDangerousMode, fmt.Sprintf("%s: %s", a.s, what), a.pos)
		}
	}
}

// codexDanger reads Codex's -c KEY=VALUE overrides (the value TOML,
// quoted or not): sandbox_mode danger-full-access turns its sandbox off,
// approval_policy never skips its approvals.
func codexDanger(kv string) string {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return ""
	}
	v = strings.Trim(strings.TrimSpace(v), `"'`)
	switch strings.TrimSpace(k) {
	case "sandbox_mode":
		if strings.EqualFold(v, "danger-full-access") {
			return "Codex's sandbox turned off (full access)"
		}
	case "approval_policy":
		if strings.EqualFold(v, "never") {
			return "Codex's approvals turned off: every command runs without asking"
		}
	}
	return ""
}

// dangerousEnv flags NAME=value when the name says it turns on a
// dangerous mode and the value does not turn it off.
func (e *entry) dangerousEnv(name, value string, pos position.Pos) {
	if dangerEnv.MatchString(name) && !notDangerEnv.MatchString(name) && !falsy.MatchString(value) {
		e.flag(readback.FlagDangerousMode, fmt.Sprintf("%s=%s: an env switch whose name says it turns on a dangerous or allow-all mode", name, value), pos)
	} else if strings.Contains(value, "--no-sandbox") { // PUPPETEER_LAUNCH_OPTIONS='{"args":["--no-sandbox"]}'
		e.flag(readback.FlagDangerousMode, fmt.Sprintf("%s: its value passes --no-sandbox, the browser's own sandbox turned off", name), pos)
	}
}

// clientSandbox is a client's sandbox around a host-run server: VS Code's
// (sandboxEnabled, with the sandbox object of the entry or of the file),
// or an srt wrapper written in the entry.
type clientSandbox struct {
	by  string
	pos position.Pos
	// srt: the wrapper is written in the entry, settings in a file lint
	// does not read (settingsSet: named with --settings).
	srt         bool
	settings    string
	settingsSet bool
	controlFD   bool
	// VS Code's sandbox object.
	allowWrite, denyRead, domains []arg
}

// describe says what the sandbox enforces and what it leaves open.
func (s *clientSandbox) describe(e *entry, name string) string {
	var b strings.Builder
	if s.srt {
		fmt.Fprintf(&b, "runs %s under srt (sandbox-runtime) with the settings in %s (not read by lint", name, s.settings)
		if !s.settingsSet {
			b.WriteString("; when it is missing: no writes, no network")
		}
		b.WriteString("): it limits writes to their allowWrite and the network to their allowedDomains, but allows every read not in denyRead (~/.ssh, ~/.aws and the rest of the home folder unless denied) and passes the whole environment")
		if s.controlFD {
			b.WriteString("; --control-fd lets whoever holds the descriptor change the settings while it runs")
		}
	} else {
		writes := []string{}
		for _, w := range s.allowWrite {
			writes = append(writes, w.s)
		}
		writes = append(writes, "the server's cwd", "~/.npm")
		domains := []string{}
		for _, d := range s.domains {
			if d.s == "*" {
				domains = []string{"every domain (*)"}
				break
			}
			domains = append(domains, d.s)
		}
		if len(domains) == 0 || domains[0] != "every domain (*)" {
			domains = append(domains, "registry.npmjs.org")
		}
		fmt.Fprintf(&b, "runs %s under VS Code's sandbox (sandbox-runtime; tool calls auto-approved): writes only to %s; network only to %s; it leaves open ",
			name, strings.Join(writes, ", "), strings.Join(domains, ", "))
		if open := e.readable(s.denyRead); len(open) > 0 {
			fmt.Fprintf(&b, "every read not in denyRead (%s readable), ", strings.Join(open, ", "))
		} else {
			b.WriteString("the reads not in denyRead, ")
		}
		b.WriteString("the whole environment, and on Windows everything: VS Code does not sandbox there")
	}
	return b.String()
}

// denied reports whether a denyRead entry covers the path p (the same
// folder, or one above it), read as written.
func (e *entry) denied(deny []arg, p string) bool {
	var homes []string
	if e.home != "" {
		homes = append(homes, e.home)
	}
	f := lint.ReadHostPath(p, homes...)
	for _, d := range deny {
		g := lint.ReadHostPath(d.s, homes...)
		switch {
		case g.HoldsHomes && (f.Home != "" || f.HoldsHomes && g.Path == f.Path):
			return true
		case g.Home != "" && f.Home != "" && (g.Home == f.Home || g.Home == "~" || f.Home == "~") && // ~ is whoever's config it is
			(g.Sub == "." || f.Sub == g.Sub || strings.HasPrefix(f.Sub, g.Sub+"/")):
			return true
		case g.Path == f.Path:
			return true
		}
	}
	return false
}

// readable lists the credential stores no denyRead entry covers.
func (e *entry) readable(deny []arg) []string {
	var homes []string
	if e.home != "" {
		homes = append(homes, e.home)
	}
	var open []string
	for _, c := range lint.CredentialStores {
		covered := false
		for _, d := range deny {
			f := lint.ReadHostPath(d.s, homes...)
			if f.HoldsHomes || f.IsHome() || f.Home != "" && (f.Sub == c || strings.HasPrefix(c, f.Sub+"/")) {
				covered = true
				break
			}
		}
		if !covered {
			open = append(open, "~/"+c)
		}
	}
	if len(open) > 4 {
		open = append(open[:3], fmt.Sprintf("%d more", len(open)-3))
	}
	return open
}

// argvSecretsHanded adds, for a server nothing confines, an
// UNCONFINED_SECRET for each secret reference the client expands into its
// argv (SECRET_IN_ARGV, read after the launch) that handedSecrets did not
// already see as an option's value: the process is handed it all the same.
func (e *entry) argvSecretsHanded() {
	if e.t.Launcher == "" || !slices.ContainsFunc(e.t.Flags, func(f readback.Flag) bool { return f.Kind == readback.FlagUnconfined }) {
		return
	}
	for _, f := range e.t.Flags {
		if f.Kind != readback.FlagSecretInArgv {
			continue
		}
		if slices.ContainsFunc(e.t.Flags, func(g readback.Flag) bool { return g.Kind == readback.FlagUnconfinedSecret && g.Pos == f.Pos }) {
			continue
		}
		e.flag(readback.FlagUnconfinedSecret, fmt.Sprintf("%s runs unconfined on the host and is handed %s, in its arguments", e.t.Launcher, f.Value), f.Pos)
	}
}
