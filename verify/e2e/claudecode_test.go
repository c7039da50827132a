package e2e_test

// How Claude Code reads ~/.claude.json (user scope) or a project's
// .mcp.json and spawns a stdio entry.

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"testing"
)

// claudeCodeSpawn reads a Claude Code file (strict JSON; the servers under
// "mcpServers"), an entry of command, args, env and an optional "type":
// "stdio", and spawns it as Claude Code does: ${VAR} and ${VAR:-default}
// expanded from its own environment in command, args and env values (an
// unset variable without a default is an error: Claude Code refuses the
// entry); the environment is its own whole environment with the entry's
// env on top; the working directory is the folder it runs in (the
// project).
func claudeCodeSpawn(file, server string, c clientSide) (spawnSpec, error) {
	var cfg struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := decodeJSONFile(file, &cfg, false); err != nil {
		return spawnSpec{}, err
	}
	raw, ok := cfg.MCPServers[server]
	if !ok {
		return spawnSpec{}, fmt.Errorf("%s: no mcpServers.%s", file, server)
	}
	var e struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	if err := decodeJSONBytes(file, raw, &e, true); err != nil {
		return spawnSpec{}, err
	}
	if e.Type != "" && e.Type != "stdio" {
		return spawnSpec{}, fmt.Errorf("%s: mcpServers.%s: type %q, want \"stdio\"", file, server, e.Type)
	}
	expand := func(s string) (string, error) { return claudeCodeExpand(s, c.env) }
	var spec spawnSpec
	var err error
	if spec.command, err = expand(e.Command); err != nil {
		return spawnSpec{}, err
	}
	for _, a := range e.Args {
		x, err := expand(a)
		if err != nil {
			return spawnSpec{}, err
		}
		spec.args = append(spec.args, x)
	}
	env := map[string]string{}
	for k, v := range c.env {
		env[k] = v
	}
	for k, v := range e.Env {
		if env[k], err = expand(v); err != nil {
			return spawnSpec{}, err
		}
	}
	spec.env, spec.dir = environ(env), c.workspace
	return spec, nil
}

var claudeCodeVariable = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// claudeCodeExpand resolves ${VAR} and ${VAR:-default} from env.
func claudeCodeExpand(s string, env map[string]string) (string, error) {
	var missing []string
	out := claudeCodeVariable.ReplaceAllStringFunc(s, func(m string) string {
		sub := claudeCodeVariable.FindStringSubmatch(m)
		if v, ok := env[sub[1]]; ok {
			return v
		}
		if sub[2] != "" {
			return sub[3]
		}
		missing = append(missing, sub[1])
		return m
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("missing environment variables: %v (in %q)", missing, s)
	}
	return out, nil
}

// TestClaudeCodeSpawnRules pins claudeCodeSpawn to Claude Code's rules.
func TestClaudeCodeSpawnRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := clientSide{env: map[string]string{"HOME": "/home/u", "PATH": "/client/bin", "OTHER": "o"}, workspace: "/ws", cwd: "/"}
	f := write("claude.json", `{"numStartups": 3, "mcpServers": {"s": {"type": "stdio", "command": "${HOME}/x", "args": ["${NOPE:-d}", "$HOME"], "env": {"PATH": "/entry/bin", "V": "${OTHER}"}}}}`)
	got, err := claudeCodeSpawn(f, "s", c)
	if err != nil {
		t.Fatal(err)
	}
	want := spawnSpec{command: "/home/u/x", args: []string{"d", "$HOME"}, dir: "/ws",
		env: []string{"HOME=/home/u", "OTHER=o", "PATH=/entry/bin", "V=o"}}
	if got.command != want.command || !slices.Equal(got.args, want.args) || !slices.Equal(got.env, want.env) || got.dir != want.dir {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	for name, body := range map[string]string{
		"unset.json":  `{"mcpServers": {"s": {"command": "${NOPE}"}}}`,
		"field.json":  `{"mcpServers": {"s": {"command": "/bin/x", "cwd": "/"}}}`,
		"remote.json": `{"mcpServers": {"s": {"type": "http", "command": "/bin/x"}}}`,
		"comma.json":  `{"mcpServers": {"s": {"command": "/bin/x",}}}`,
	} {
		if _, err := claudeCodeSpawn(write(name, body), "s", c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
