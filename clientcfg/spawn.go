package clientcfg

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

// SpawnEntry is the command and environment a client starts server's entry
// of file with, from environ: JSON (with comments) under mcpServers,
// servers or context_servers, or Codex's TOML under mcp_servers; a
// project's .mcp.json as Claude Code starts it. For `mcpolicy doctor
// --client`, which starts the entry the user has.
func SpawnEntry(file, server string, environ []string) ([]string, []string, error) {
	src, err := hostfile.ReadRegular(file, hostfile.MaxConfig)
	if err != nil {
		return nil, nil, err
	}
	var doc map[string]any
	if strings.HasSuffix(file, ".toml") {
		err = toml.Unmarshal(src, &doc)
	} else if src, err = hujson.Standardize(src); err == nil {
		err = json.Unmarshal(src, &doc)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, key := range []string{"mcpServers", "servers", "context_servers", "mcp_servers"} {
		servers, _ := doc[key].(map[string]any)
		e, ok := servers[server].(map[string]any)
		if !ok {
			continue
		}
		cmd, _ := e["command"].(string)
		if cmd == "" {
			return nil, nil, fmt.Errorf("%s: the entry %q has no command", file, server)
		}
		argv := []string{cmd}
		args, _ := e["args"].([]any)
		for _, a := range args {
			argv = append(argv, fmt.Sprint(a))
		}
		env := slices.Clone(environ)
		vars, _ := e["env"].(map[string]any)
		for k, v := range vars {
			env = append(env, k+"="+fmt.Sprint(v))
		}
		if filepath.Base(file) == ".mcp.json" {
			argv, env = asClaudeCodeProject(file, argv, env)
		}
		return argv, env, nil
	}
	return nil, nil, fmt.Errorf("%s: no entry for server %q", file, server)
}

// asClaudeCodeProject spawns a project's .mcp.json entry as Claude Code
// does: CLAUDE_PROJECT_DIR is the project (the file's folder), and
// ${NAME} in the arguments is expanded from the environment.
func asClaudeCodeProject(file string, argv, env []string) ([]string, []string) {
	if dir, err := filepath.Abs(filepath.Dir(file)); err == nil {
		env = append(env, "CLAUDE_PROJECT_DIR="+dir)
	}
	lookup := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			lookup[k] = v
		}
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = claudeVar.Regexp().ReplaceAllStringFunc(a, func(m string) string { return lookup[m[2:len(m)-1]] })
	}
	return out, env
}

// claudeVar is a ${NAME} reference Claude Code expands in an entry.
var claudeVar = lazyre.New(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)
