package clientcfg

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// How each client gives a server the values of the plan's env grants,
// without a value ever being written into the client's file:
//
//	claude-code, gemini   "NAME": "${NAME}" in the entry's env (the client expands it)
//	cursor, vscode        "NAME": "${env:NAME}"
//	codex                 env_vars = ["NAME"] (Codex forwards the names listed)
//	claude-desktop, windsurf, zed, cline
//	                      none: they start servers with a few variables and
//	                      expand nothing, so the entry passes --env-file FILE
//	                      and the launcher reads NAME=value from FILE at spawn
//	                      (default ~/.config/mcpolicy/env; see launch.EnvFile)
//

// envInheritance is readback.Target.EnvInherited for a client file, by its
// name: nil (inherits all) where the client passes its own environment
// (Claude Code, Cursor, VS Code, Zed).
func envInheritance(file string) func(string) bool {
	slashed := filepath.ToSlash(file)
	base := filepath.Base(file)
	switch {
	case base == "claude_desktop_config.json", base == "cline_mcp_settings.json", base == "mcp_settings.json",
		strings.HasSuffix(slashed, "/windsurf/mcp_config.json"), strings.EqualFold(filepath.Ext(file), ".toml"):
		return func(name string) bool { return launch.ClientOwnEnv[name] }
	case strings.HasSuffix(slashed, ".gemini/settings.json"):
		// Gemini CLI passes its environment but redacts secret-looking names
		// unless the entry's env names them.
		return func(name string) bool { return !secretName.MatchString(name) }
	}
	return nil
}

// literalEnv reports whether the client passes env values as written,
// expanding no ${VAR}: Claude Desktop, Cline, Zed, Codex's env table.
func literalEnv(file string) bool {
	base := filepath.Base(file)
	return base == "claude_desktop_config.json" || base == "cline_mcp_settings.json" ||
		strings.EqualFold(filepath.Ext(file), ".toml") || strings.HasSuffix(filepath.ToSlash(file), "zed/settings.json")
}

// EnvUnmet is a variable an entry's plan grants but that the entry gives the
// server no value for: the server starts without it.
type EnvUnmet struct {
	Entry  position.Pos
	Server string
	What   string
}

// EnvCheck reports, for each entry mcpolicy manages, every variable the
// entry sets that the policy sets too (setenv: the policy's value wins, the
// entry's is ignored), and every env grant of the
// policy's plan that will reach the server empty: not named by the entry,
// not passed on by the client, and not in the env file the entry names (which
// is read, and refused as the launcher would refuse it, and also when it
// lies in a grant of any other server of the project).
func EnvCheck(plans []*compiler.Plan, targets []*readback.Target, root, home string) []EnvUnmet {
	byName := map[string]*compiler.Plan{}
	for _, p := range plans {
		byName[p.Server] = p
	}
	var out []EnvUnmet
	for _, t := range targets {
		p := byName[t.Server]
		if p == nil || t.Launcher == "" || (t.Launcher != "mcpolicy" && t.Artefact == "" && !t.FixedTop) {
			continue
		}
		for _, name := range p.SetEnvNames() {
			// The client's own (PATH for the launcher, HOME) are set
			// whatever the user wants: only the entry's choice is news.
			if contains(t.EnvPassed, name) && !(launch.ClientOwnEnv[name] && contains(t.EnvFixed, name)) {
				out = append(out, EnvUnmet{t.Pos, t.Server, fmt.Sprintf("setenv %s is shadowed the other way: the entry's own env sets it too, but the server gets the policy's value (setenv wins over the client and the env file); drop %s from the entry, or change it in the policy", name, name)})
			}
		}
		var fromFile []string
		for _, name := range p.EnvNames() {
			switch {
			case contains(t.EnvFixed, name) && t.EnvFile != "" && launch.ClientOwnEnv[name]:
				// The entry's fixed value (PATH, for the launcher) yields
				// to the file's: the file must name it.
				fromFile = append(fromFile, name)
			case contains(t.EnvFixed, name):
				out = append(out, EnvUnmet{t.Pos, t.Server, fmt.Sprintf("env grant %s is shadowed: the entry's own env sets it to a fixed value, which the server gets instead of yours; run `mcpolicy client` again, or make the entry pass the client's %s", name, name)})
			case contains(t.EnvPassed, name), t.EnvInherited == nil, t.EnvInherited(name):
			case t.EnvFile != "":
				fromFile = append(fromFile, name)
			default:
				out = append(out, EnvUnmet{t.Pos, t.Server, fmt.Sprintf("env grant %s gets no value: this client passes on only a few variables of its own and the entry names no env file; run `mcpolicy client` again (it adds --env-file) and put %s=... in the file", name, name)})
			}
		}
		if len(fromFile) == 0 {
			continue
		}
		// Any server of the project that reads or writes the file has
		// every server's values, or chooses them: the launcher checks
		// only the plan it starts.
		if err := EnvFileOutsideProject(plans, t.EnvFile, root, home); err != nil {
			out = append(out, EnvUnmet{t.Pos, t.Server, fmt.Sprintf("the env file is refused: %v", err)})
			continue
		}
		m := compiler.Machine{ProjectRoot: root, Home: home}
		grants := []string{root}
		for _, mt := range p.Mounts {
			grants = append(grants, m.Resolve(mt.Source))
		}
		vals, err := launch.EnvFile{Path: t.EnvFile, Grants: grants}.Load(fromFile)
		if err != nil {
			out = append(out, EnvUnmet{t.Pos, t.Server, fmt.Sprintf("the launcher will refuse to start: %v", err)})
			continue
		}
		for _, name := range fromFile {
			if _, ok := vals[name]; !ok {
				out = append(out, EnvUnmet{t.Pos, t.Server, fmt.Sprintf("env grant %s gets no value: %s has no %s=... line", name, t.EnvFile, name)})
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
