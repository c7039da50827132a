package clientcfg

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Clients start stdio servers without a shell: the command and its
// arguments reach the server as written, but for the client's own
// variables. What each client expands in command and args:
//
//	Claude Code (.mcp.json, ~/.claude.json)   ${VAR}, ${VAR:-default}
//	Gemini CLI (.gemini/settings.json)        $VAR, ${VAR}
//	VS Code, Cursor                           ${userHome}, ${env:VAR} (and ${workspaceFolder}...)
//	Windsurf                                  ${env:VAR}
//	Claude Desktop, Cline, Roo, Zed, Codex    nothing
//
// No client expands ~ or %USERPROFILE%.
type expansion struct {
	known            bool   // the client is known by its file's name
	name             string // which client, for a message
	braces, dollar   bool   // ${VAR}; $VAR
	vscode, envColon bool   // ${userHome}; ${env:VAR}
}

func expansionOf(file string) expansion {
	s := filepath.ToSlash(file)
	base := filepath.Base(file)
	has := func(suffix string) bool { return strings.HasSuffix(s, suffix) }
	switch {
	case base == ".mcp.json", base == ".claude.json":
		return expansion{known: true, name: "Claude Code", braces: true}
	case has(".gemini/settings.json"):
		return expansion{known: true, name: "Gemini CLI", braces: true, dollar: true}
	case has(".cursor/mcp.json"):
		return expansion{known: true, name: "Cursor", vscode: true, envColon: true}
	case has(".vscode/mcp.json"), has("/User/mcp.json"), has("/User/settings.json"),
		base == "settings.json" && strings.Contains(s, "/Code"):
		return expansion{known: true, name: "VS Code", vscode: true, envColon: true}
	case has("windsurf/mcp_config.json"):
		return expansion{known: true, name: "Windsurf", envColon: true}
	case base == "claude_desktop_config.json":
		return expansion{known: true, name: "Claude Desktop"}
	case base == "cline_mcp_settings.json":
		return expansion{known: true, name: "Cline"}
	case base == "mcp_settings.json", has(".roo/mcp.json"):
		return expansion{known: true, name: "Roo Code"}
	case has("zed/settings.json"):
		return expansion{known: true, name: "Zed"}
	case strings.EqualFold(filepath.Ext(file), ".toml"):
		return expansion{known: true, name: "Codex"}
	}
	return expansion{}
}

// homeToken is a home folder written as a shell or another client would
// write it, at the start of an argument or of a value in it (-v ~/x:/y,
// --root=$HOME/x, source=~/x), followed by a separator or the end.
var homeToken = lazyre.New(`(^|[=,:])(~([A-Za-z_][A-Za-z0-9._-]*)?|\$HOME\b|\$\{(HOME|USERPROFILE)(:-[^}]*)?\}|\$\{userHome\}|\$\{env:(HOME|USERPROFILE)\}|%USERPROFILE%|%HOMEDRIVE%%HOMEPATH%|\$env:(USERPROFILE|HOME)\b)([/\\:,]|$)`)

// shells expand ~ and $HOME (or %USERPROFILE%) in the command they run.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "fish": true,
	"cmd": true, "powershell": true, "pwsh": true, "wsl": true}

// homeLiterals flags each argument (and the command) naming the home
// folder in a form the entry's client does not expand.
func (e *entry) homeLiterals(cmd arg, args []arg) {
	if shells[strings.ToLower(program(cmd.s))] {
		return
	}
	ex := expansionOf(e.t.File)
	// Who receives the text: a launcher's arguments are its own, not the
	// server's (docker -v ~/x:/y: docker reads ~/x as a volume name).
	// nerdctl is a docker-compatible CLI, not a backend: it reads its
	// arguments as docker does.
	const nerdctl = "nerdctl"
	receiver := "the server"
	if p := strings.ToLower(program(cmd.s)); p == nerdctl || slices.Contains(backendtraits.Programs(), p) {
		receiver = p
	}
	all := append([]arg{cmd}, args...)
	for i, a := range all {
		if !strings.ContainsAny(a.s, "~$%") {
			continue
		}
		m := homeToken.FindStringSubmatch(a.s)
		if m == nil {
			continue
		}
		tok := m[2]
		var why string
		switch {
		case strings.HasPrefix(tok, "~"):
			why = "no client expands ~ (there is no shell)"
		case strings.HasPrefix(tok, "%"):
			why = "no client expands " + tok + " (there is no cmd.exe)"
		case strings.HasPrefix(tok, "$env:"):
			why = "no client expands " + tok + " (there is no PowerShell)"
		case tok == "$HOME":
			if ex.dollar {
				continue
			}
			why = "this client does not expand $HOME (there is no shell)"
			if !ex.known {
				why = "only Gemini CLI expands $HOME (there is no shell)"
			}
		case tok == "${userHome}":
			if ex.vscode || !ex.known {
				continue
			}
			why = "only VS Code and Cursor expand ${userHome}"
		case strings.HasPrefix(tok, "${env:"):
			if ex.vscode || ex.envColon || !ex.known {
				continue
			}
			why = "only VS Code, Cursor and Windsurf expand " + tok
		default: // ${HOME}, ${USERPROFILE}
			if ex.braces || !ex.known {
				continue
			}
			why = "this client does not expand " + tok + " (Claude Code and Gemini CLI do)"
		}
		if receiver != "the server" && (m[1] == "" || m[1] == "=") {
			u := unexpanded{flag: len(e.t.Flags), at: []position.Pos{a.pos}} // a mount source, when one is read there
			if i > 0 {
				u.at = append(u.at, all[i-1].pos) // bwrap's mount is at its --bind
			}
			e.unexpanded = append(e.unexpanded, u)
		}
		e.flag(readback.FlagHomeUnexpanded, a.s+" reaches "+receiver+" as written: "+why, a.pos)
	}
}

// dropUnexpanded takes out of the entry's plan the mounts whose source
// the engine or bwrap receives unexpanded (homeLiterals): ~/x is no
// absolute path, so docker reads it as a volume's name, which a slash
// makes invalid, and bwrap finds no such folder; the mount is refused and
// the server never starts. What it names (~/.aws) is not granted: a
// finding about it would stand beside the real one.
func (e *entry) dropUnexpanded() {
	if len(e.unexpanded) == 0 || e.t.Plan == nil {
		return
	}
	for _, u := range e.unexpanded {
		f := &e.t.Flags[u.flag]
		n := len(e.t.Plan.Mounts)
		e.t.Plan.Mounts = slices.DeleteFunc(e.t.Plan.Mounts, func(m compiler.Mount) bool { return slices.Contains(u.at, m.Pos) })
		if len(e.t.Plan.Mounts) < n {
			f.Value += ": " + e.t.Launcher + " refuses the mount and the server does not start"
		}
	}
}

// unexpanded is a HOME_NOT_EXPANDED flag (its index) of a launcher's
// argument, and the positions a mount it sources would have: the
// argument's (docker -v), the option's before it (bwrap --bind).
type unexpanded struct {
	flag int
	at   []position.Pos
}

// varRef is a variable reference a client might expand: ${env:NAME},
// ${NAME} or ${NAME:-default}, $NAME. Home folders are homeLiterals'.
var varRef = lazyre.New(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// vscodeVars are VS Code's and Cursor's own variables (${workspaceFolder},
// ${userHome}, ${pathSeparator}...): not environment references.
var vscodeVars = map[string]bool{"workspaceFolder": true, "workspaceFolderBasename": true, "userHome": true,
	"pathSeparator": true, "cwd": true, "file": true, "fileDirname": true, "relativeFile": true}

// unexpandedVars flags the variable references in an argument or an env
// value that the entry's client does not expand: the server receives
// the text as written (Cursor expands ${env:TOKEN}, not ${TOKEN}; Claude
// Desktop expands nothing). Home folders are homeLiterals'; a client not
// known by its file's name is not judged.
func (e *entry) unexpandedVars(a arg, where string) {
	if !strings.Contains(a.s, "$") {
		return
	}
	inEnv := strings.HasPrefix(where, "env ")
	ex := expansionOf(e.t.File)
	if !ex.known {
		return
	}
	for _, m := range varRef.FindAllStringSubmatch(a.s, -1) {
		var name, want string
		switch {
		case m[1] != "": // ${env:NAME}
			name = m[1]
			if ex.envColon {
				continue
			}
			if ex.braces {
				want = "${" + name + "}"
			}
		case m[2] != "": // ${NAME}
			name = m[2]
			if ex.braces || ex.vscode && vscodeVars[name] {
				continue
			}
			if ex.envColon {
				want = "${env:" + name + "}"
			}
		default: // $NAME
			name = m[4]
			if ex.dollar {
				continue
			}
			switch {
			case ex.braces:
				want = "${" + name + "}"
			case ex.envColon:
				want = "${env:" + name + "}"
			}
		}
		if !inEnv && (name == "HOME" || name == "USERPROFILE") {
			continue // homeLiterals'
		}
		why := ex.name + " expands no variable"
		if want != "" {
			why = ex.name + " expands " + want + ", not " + m[0]
		}
		e.flag(readback.FlagVarUnexpanded, m[0]+" in "+where+" is passed as written: "+why, a.pos)
	}
}

// homeInEnv flags an env value that names the home folder as ~ or
// %USERPROFILE%, which no client expands (a variable form is
// unexpandedVars').
func (e *entry) homeInEnv(name string, a arg) {
	m := homeToken.FindStringSubmatch(a.s)
	if m == nil || m[1] != "" || !strings.HasPrefix(m[2], "~") && !strings.HasPrefix(m[2], "%") {
		return
	}
	e.flag(readback.FlagHomeUnexpanded, "env "+name+"="+a.s+" reaches the server as written: no client expands "+m[2]+" (there is no shell): unless the server expands it, it names a folder called "+m[2]+" in its working directory", a.pos)
}

// clientVars flags, in the command, its arguments and the entry's env
// values, the references the client passes as written (unexpandedVars)
// and a home folder written as ~ in an env value (homeInEnv). A command
// run by a shell is the shell's to expand, and envmcp puts its env file's
// values in place of $NAME words.
func (e *entry) clientVars(cmd arg, args []arg) {
	if !shells[strings.ToLower(program(cmd.s))] && !slices.ContainsFunc(e.via, func(v string) bool { return strings.HasSuffix(v, "envmcp") }) {
		for _, a := range append([]arg{cmd}, args...) {
			e.unexpandedVars(a, "args")
		}
	}
	ex := expansionOf(e.t.File)
	expandsNone := ex.known && !ex.braces && !ex.dollar && !ex.envColon && !ex.vscode
	for _, k := range e.envKeys {
		if k.hasValue && k.pos != k.valPos { // an env object's, not an env wrapper's NAME=value
			v := arg{k.value, k.valPos}
			// A secret's reference where the client expands none is
			// SECRET_PLACEHOLDER's (secrets.go): the file asks for it inline.
			if !(expandsNone && secretNamed(k.name) && isReference(k.value)) {
				e.unexpandedVars(v, "env "+k.name)
			}
			e.homeInEnv(k.name, v)
		}
	}
}
