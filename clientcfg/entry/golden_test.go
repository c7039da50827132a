package entry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
)

// The published schemas' constraints our entries rely on: the keys each
// client documents for a stdio server (VS Code's and Gemini's schemas set
// additionalProperties false; Codex rejects unknown keys outright).
var allowedKeys = map[string][]string{
	"vscode": {"type", "command", "args", "env", "envFile", "cwd", "dev"},
	"gemini": {"command", "args", "env", "cwd", "timeout", "trust", "includeTools", "excludeTools", "description", "type"},
	"codex":  {"command", "args", "env", "env_vars", "cwd", "enabled", "required", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "enabled_tools", "disabled_tools"},
}

// TestClientGoldens writes the seed's code-index entry for every target
// into an empty file and compares it with testdata/golden/TARGET.*
// (MCPOLICY_UPDATE=1 rewrites them; review the diff). Each output must
// read back to the same plan, and keep to the client's documented keys.
func TestClientGoldens(t *testing.T) {
	const root, home = "/home/dev/work/shop", "/home/dev"
	lookupEnv = func(string) string { return "" } // goldens must not depend on this machine
	defer func() { lookupEnv = os.Getenv }()
	built(t, root+"/.mcpolicy", seedPlan())
	for i := range clientcfg.Clients {
		c := &clientcfg.Clients[i]
		t.Run(c.Name, func(t *testing.T) {
			portable := c.Portable()
			l, err := LaunchFor(c, seedPlan(), "docker", root, home, root+"/.mcpolicy", "/usr/local/bin/mcpolicy", "", portable)
			if err != nil {
				t.Fatal(err)
			}
			for i := range l.Args {
				if l.Args[i] == "--engine" && filepath.IsAbs(l.Args[i+1]) {
					l.Args[i+1] = "/usr/bin/docker" // where docker is differs per machine
				}
			}
			ext := ".json"
			if c.Key == "" {
				ext = ".toml"
			}
			name := filepath.Join("testdata", "golden", c.Name+ext)
			out, err := Merge(name, nil, c, "code-index", l, false)
			if err != nil {
				t.Fatal(err)
			}
			if os.Getenv("MCPOLICY_UPDATE") == "1" {
				os.MkdirAll(filepath.Dir(name), 0o755)
				os.WriteFile(name, out, 0o644)
			}
			want, err := os.ReadFile(name)
			if err != nil || string(want) != string(out) {
				t.Fatalf("%s differs (MCPOLICY_UPDATE=1 to rewrite, then review):\n%s", name, out)
			}
			// The documented keys only.
			var entry map[string]any
			if c.Key == "" {
				var doc map[string]map[string]map[string]any
				if err := toml.Unmarshal(out, &doc); err != nil {
					t.Fatalf("codex TOML: %v", err)
				}
				entry = doc["mcp_servers"]["code-index"]
			} else {
				var doc map[string]map[string]map[string]any
				if err := json.Unmarshal(out, &doc); err != nil {
					t.Fatal(err)
				}
				entry = doc[c.Key]["code-index"]
			}
			if allowed, ok := allowedKeys[c.Name]; ok {
				var extra []string
				for k := range entry {
					if !slices.Contains(allowed, k) {
						extra = append(extra, k)
					}
				}
				sort.Strings(extra)
				if len(extra) > 0 {
					t.Errorf("%s does not document %v", c.Name, extra)
				}
			}
			if _, ok := entry["command"].(string); !ok {
				t.Errorf("command is not a string: %v", entry["command"])
			}
			// Read back: the same confinement.
			dir := t.TempDir()
			file := filepath.Join(dir, filepath.Base(name))
			if c.Project != "" {
				file = filepath.Join(dir, c.Project)
				if c.Name == "codex" {
					file = filepath.Join(dir, "config.toml")
				}
			}
			os.MkdirAll(filepath.Dir(file), 0o755)
			os.WriteFile(file, []byte(strings.ReplaceAll(string(out), root, dir)), 0o644)
			ts, err := clientcfg.Read(file, home)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts) != 1 || ts[0].Plan == nil {
				t.Fatalf("read back: %+v", ts)
			}
			p := ts[0].Plan
			if len(p.Mounts) != 1 || p.Mounts[0].Target != "/workspace" || p.Mounts[0].Mode != compiler.ReadWrite ||
				p.Network.Mode != "none" || p.Scratch == nil || p.Scratch.SizeBytes != 256<<20 {
				t.Errorf("read back as %+v", p)
			}
			for _, f := range ts[0].Flags {
				t.Errorf("reading our own entry flags %s %s", f.Kind, f.Value)
			}
		})
	}
}
