package clientcfg

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSpawnEntry: the command a client starts for one entry, from JSON with
// comments, Codex's TOML and a project's .mcp.json (CLAUDE_PROJECT_DIR set,
// ${NAME} expanded as Claude Code does).
func TestSpawnEntry(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"claude_desktop_config.json": `{"mcpServers": {"fs": {"command": "mcpolicy-launch", "args": ["--sha256", "ab", "x.json"], "env": {"A": "1"}}}} // comment` + "\n",
		"config.toml":                "[mcp_servers.fs]\ncommand = \"mcpolicy-launch\"\nargs = [\"--sha256\", \"ab\", \"x.json\"]\nenv = { A = \"1\" }\n",
		".mcp.json":                  `{"mcpServers": {"fs": {"command": "mcpolicy-launch", "args": ["--project-root-env", "CLAUDE_PROJECT_DIR", "${CLAUDE_PROJECT_DIR}/x.json"], "env": {"A": "1"}}}}`,
	}
	for name, src := range files {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		argv, env, err := SpawnEntry(file, "fs", []string{"PATH=/usr/bin"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if argv[0] != "mcpolicy-launch" || !slices.Contains(env, "A=1") || !slices.Contains(env, "PATH=/usr/bin") {
			t.Errorf("%s: argv %q env %q", name, argv, env)
		}
		if name == ".mcp.json" && (argv[3] != dir+"/x.json" || !slices.Contains(env, "CLAUDE_PROJECT_DIR="+dir)) {
			t.Errorf(".mcp.json: argv %q env %q: want the project's folder expanded", argv, env)
		}
		if _, _, err := SpawnEntry(file, "nope", nil); err == nil {
			t.Errorf("%s: no error for a missing entry", name)
		}
	}
}
