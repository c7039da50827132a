package clientcfg

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// What an unconfined server runs beyond the program the entry names: code
// written in the entry (python -c, node -e), a server whose tools are a
// shell for the model, code its environment makes every program load
// (LD_PRELOAD, NODE_OPTIONS=--require). Each is a shell on the host in
// all but name, so the severity model makes it an error.

// inlineCode are the interpreters that run code given on their command
// line, and the options that give it (an option cluster ending in the
// letter counts for the single-letter ones: python -Ic "...").
var inlineCode = map[string][]string{
	"python": {"-c"}, "py": {"-c"}, "pypy": {"-c"}, "pypy3": {"-c"},
	"node": {"-e", "--eval", "-p", "--print", "-pe"}, "nodejs": {"-e", "--eval", "-p", "--print", "-pe"},
	"bun":  {"-e", "--eval", "-p", "--print"},
	"perl": {"-e", "-E"}, "ruby": {"-e"}, "php": {"-r"}, "lua": {"-e"}, "luajit": {"-e"},
	"rscript": {"-e"}, "osascript": {"-e"},
}

// pythonVersioned: python3, python3.12, python.exe (program strips .exe).
var pythonVersioned = lazyre.New(`^python[0-9.]*$`)

// inlineCodeOf returns the interpreter option that runs code from the
// command line and where it is, if the command is one.
func inlineCodeOf(prog string, args []arg) (string, position.Pos, bool) {
	p := strings.ToLower(program(prog))
	if pythonVersioned.MatchString(p) {
		p = "python"
	}
	if p == "deno" && len(args) > 0 && args[0].s == "eval" {
		return "eval", args[0].pos, true
	}
	opts := inlineCode[p]
	if len(opts) == 0 {
		return "", position.Pos{}, false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.s
		if !strings.HasPrefix(s, "-") || s == "-" || s == "--" {
			return "", position.Pos{}, false // the script: what follows is its own
		}
		if p == "python" && (s == "-m" || s == "-X" || s == "-W") {
			if s == "-m" {
				return "", position.Pos{}, false
			}
			i++ // -X OPT, -W ACTION
			continue
		}
		for _, o := range opts {
			name, _, _ := strings.Cut(s, "=")
			cluster := len(o) == 2 && len(s) > 2 && s[1] != '-' && strings.HasSuffix(s, o[1:])
			if name == o || cluster {
				return s, a.pos, true
			}
		}
	}
	return "", position.Pos{}, false
}

// shellServers are MCP servers whose tools run shell commands the model
// writes, by the name they are started by (an npm or PyPI package, an
// installed program), with what they give: unconfined, a shell on the
// host for whoever steers the model (a prompt injection included).
var shellServers = map[string]string{
	"@wonderwhy-er/desktop-commander": "terminal commands and file edits",
	"desktop-commander":               "terminal commands and file edits",
	"mcp-shell-server":                "shell commands",
	"@mkusaka/mcp-shell-server":       "shell commands",
	"@kevinwatt/shell-mcp":            "shell commands",
	"mcp-server-commands":             "shell commands and scripts",
	"cli-mcp-server":                  "command lines",
	"iterm-mcp":                       "commands typed into an iTerm terminal",
	"mcp-server-shell":                "shell commands",
	"shell-mcp-server":                "shell commands",
	"terminal-mcp":                    "terminal commands",
	"mcp-terminal":                    "terminal commands",
}

// shellServerOf names the shell-giving server an entry starts, if any:
// the package a runner (npx, uvx, bunx, pnpm dlx...) fetches, or the
// program itself; `claude mcp serve` is Claude Code's own Bash tool.
func shellServerOf(prog string, args []arg) (name, gives string, pos position.Pos, ok bool) {
	p := strings.ToLower(program(prog))
	if p == "claude" && len(args) >= 2 && args[0].s == "mcp" && args[1].s == "serve" {
		return "claude mcp serve", "Claude Code's Bash tool", args[0].pos, true
	}
	if g, found := shellServers[p]; found {
		return p, g, position.Pos{}, true
	}
	if !runners[p] {
		return "", "", position.Pos{}, false
	}
	for i := 0; i < len(args); i++ {
		s := args[i].s
		name, val, joined := strings.Cut(s, "=")
		switch {
		case (name == "--from" || name == "--package" || name == "-p") && joined:
			s = val
		case (name == "--from" || name == "--package" || name == "-p") && i+1 < len(args):
			i++
			s = args[i].s
		case runnerValue[name] && !joined:
			i++
			continue
		case runnerValue[name] || runnerSub[s] || strings.HasPrefix(s, "-"):
			continue
		}
		pkg := packageName(s)
		if g, found := shellServers[strings.ToLower(pkg)]; found {
			return pkg, g, args[i].pos, true
		}
		if !strings.HasPrefix(args[i].s, "-") && !runnerSub[args[i].s] {
			return "", "", position.Pos{}, false
		}
	}
	return "", "", position.Pos{}, false
}

// codeLoaders are the variables that make a program (and each program it
// starts) load code the entry's command does not name. A value matching
// the pattern loads code (NODE_OPTIONS=--max-old-space-size=4096 loads
// none); nil: any non-empty value does.
var codeLoaders = map[string]*lazyre.RE{
	"LD_PRELOAD":            nil,
	"LD_AUDIT":              nil,
	"DYLD_INSERT_LIBRARIES": nil,
	"NODE_OPTIONS":          lazyre.New(`(^|\s)(-r|--require|--import|--loader|--experimental-loader)(\s|=|$)`),
	"BASH_ENV":              nil,
	"ENV":                   nil, // sh and dash read it like BASH_ENV when interactive, ksh always
	"PERL5OPT":              lazyre.New(`-[mMd]`),
	"RUBYOPT":               lazyre.New(`(^|\s)-r`),
	"JAVA_TOOL_OPTIONS":     javaAgent,
	"_JAVA_OPTIONS":         javaAgent,
	"JDK_JAVA_OPTIONS":      javaAgent,
	"PYTHONSTARTUP":         nil, // read by an interactive python, and by python -i
}

// runsWhatItIsTold flags an unconfined server whose code is not the
// program the entry names: inline code, a shell server, code its
// environment loads.
func (e *entry) runsWhatItIsTold(prog string, cmd arg, args []arg) {
	if opt, pos, ok := inlineCodeOf(prog, args); ok {
		e.flag(readback.FlagUnconfinedShell, fmt.Sprintf("%s runs the code written after %s, unconfined: the entry's string decides what runs, and nothing confines it", program(prog), opt), pos)
	}
	if name, gives, pos, ok := shellServerOf(prog, args); ok {
		if pos == (position.Pos{}) {
			pos = cmd.pos
		}
		e.flag(readback.FlagUnconfinedShell, fmt.Sprintf("%s gives the model %s on the host, unconfined: a shell for whoever steers the model, a prompt injection included", name, gives), pos)
	}
	for _, k := range e.envKeys {
		re, found := codeLoaders[k.name]
		if !found || !k.hasValue || strings.TrimSpace(k.value) == "" || re != nil && !re.MatchString(k.value) {
			continue
		}
		e.flag(readback.FlagUnconfinedShell, fmt.Sprintf("%s=%s makes %s load code the entry does not name, unconfined: whoever can write what it loads runs code as you", k.name, k.value, program(prog)), k.valPos)
	}
}

var javaAgent = lazyre.New(`-(javaagent|agentpath|agentlib):`)
