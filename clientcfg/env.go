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
		// A credential's source reaches mcpolicy run as an env grant's
		// value reaches the server: the same ways, the same gaps.
		for _, name := range LaunchEnvNames(p) {
			grant := "env grant " + name
			if !contains(p.EnvNames(), name) {
				grant = "the credential source " + name
			}
			switch {
			case contains(t.EnvFixed, name) && t.EnvFile != "" && launch.ClientOwnEnv[name]:
				// The entry's fixed value (PATH, for the launcher) yields
				// to the file's: the file must name it.
				fromFile = append(fromFile, name)
			case contains(t.EnvFixed, name):
				out = append(out, EnvUnmet{t.Pos, t.Server, fmt.Sprintf("%s is shadowed: the entry's own env sets it to a fixed value, which is used instead of yours; run `mcpolicy client` again, or make the entry pass the client's %s", grant, name)})
			case contains(t.EnvPassed, name), t.EnvInherited == nil, t.EnvInherited(name):
			case t.EnvFile != "":
				fromFile = append(fromFile, name)
			default:
				out = append(out, EnvUnmet{t.Pos, t.Server, fmt.Sprintf("%s gets no value: this client passes on only a few variables of its own and the entry names no env file; run `mcpolicy client` again (it adds --env-file) and put %s=... in the file", grant, name)})
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
				grant := "env grant " + name
				if !contains(p.EnvNames(), name) {
					grant = "the credential source " + name
				}
				out = append(out, EnvUnmet{t.Pos, t.Server, fmt.Sprintf("%s gets no value: %s has no %s=... line", grant, t.EnvFile, name)})
			}
		}
	}
	return out
}

// LaunchEnvNames are the variables an entry gives the launch from the
// client: the plan's env grants, then its credentials' sources (those not
// granted too), each once. mcpolicy run gives a source's value to the
// proxy alone.
func LaunchEnvNames(p *compiler.Plan) []string {
	names := p.EnvNames()
	for _, n := range p.CredentialSourceEnv() {
		if !contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
