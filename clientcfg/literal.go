package clientcfg

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
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
	known            bool // the client is known by its file's name
	braces, dollar   bool // ${VAR}; $VAR
	vscode, envColon bool // ${userHome}; ${env:VAR}
}

func expansionOf(file string) expansion {
	s := filepath.ToSlash(file)
	base := filepath.Base(file)
	has := func(suffix string) bool { return strings.HasSuffix(s, suffix) }
	switch {
	case base == ".mcp.json", base == ".claude.json":
		return expansion{known: true, braces: true}
	case has(".gemini/settings.json"):
		return expansion{known: true, braces: true, dollar: true}
	case has(".vscode/mcp.json"), has(".cursor/mcp.json"), has("/User/mcp.json"), has("/User/settings.json"),
		base == "settings.json" && strings.Contains(s, "/Code"):
		return expansion{known: true, vscode: true, envColon: true}
	case has("windsurf/mcp_config.json"):
		return expansion{known: true, envColon: true}
	case base == "claude_desktop_config.json", base == "cline_mcp_settings.json", base == "mcp_settings.json",
		has(".roo/mcp.json"), has("zed/settings.json"), strings.EqualFold(filepath.Ext(file), ".toml"):
		return expansion{known: true}
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
	for _, a := range append([]arg{cmd}, args...) {
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
		e.flag(readback.FlagHomeUnexpanded, a.s+" reaches "+receiver+" as written: "+why, a.pos)
	}
}
