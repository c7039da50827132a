package e2e_test

// The unconfined entries a user has for the five servers, in each client's
// file, and what each server is asked through its own tools.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// grafanaToken is the inline secret of the grafana entry, as users paste
// it: import moves it to the env file.
const grafanaToken = "glsa_E2eFakeToken0123456789abcdefABCDEF_0a1b2c3d"

// grafanaURL is the entry's GRAFANA_URL: not mcp-grafana's default
// (http://localhost:3000), so a deeplink that holds it shows the value
// reached the server.
const grafanaURL = "http://grafana.internal.example:3000"

// realEntry is one server's unconfined entry, the same in every client.
type realEntry struct {
	name    string
	command string
	args    []string
	env     map[string]string
}

func (w *realWorld) entries() []realEntry {
	return []realEntry{
		// gopls serves the folder the client runs in.
		{name: "gopls", command: "gopls", args: []string{"mcp"}},
		{name: "grafana", command: "mcp-grafana", env: map[string]string{
			"GRAFANA_URL": grafanaURL, "GRAFANA_SERVICE_ACCOUNT_TOKEN": grafanaToken}},
		{name: "memory", command: "memory", args: []string{"-memory", filepath.Join(w.home, "memory.json")}},
		{name: "notes-node", command: "npx", args: []string{"-y", npxPackage + "@" + npxVersion, w.notes}},
		{name: "notes-python", command: "uvx", args: []string{uvTool, w.notes}},
	}
}

// realClient is a client the test writes entries for.
type realClient struct {
	name  string
	ext   string
	spawn func(file, server string, c clientSide) (spawnSpec, error)
}

var realClients = []realClient{
	{name: "claude-code", ext: ".json", spawn: claudeCodeSpawn},
	{name: "codex", ext: ".toml", spawn: codexSpawn},
	{name: "claude-desktop", ext: ".json", spawn: claudeDesktopSpawn},
}

// unconfinedFile renders the entries in c's format, as the user's file
// holds them before import.
func (w *realWorld) unconfinedFile(c realClient) []byte {
	if c.name == "codex" {
		servers := map[string]map[string]any{}
		for _, e := range w.entries() {
			m := map[string]any{"command": e.command}
			if len(e.args) > 0 {
				m["args"] = e.args
			}
			if len(e.env) > 0 {
				m["env"] = e.env
			}
			servers[e.name] = m
		}
		b, err := toml.Marshal(map[string]any{"mcp_servers": servers})
		if err != nil {
			panic(err)
		}
		return b
	}
	servers := map[string]map[string]any{}
	for _, e := range w.entries() {
		m := map[string]any{"command": e.command, "args": e.args, "env": e.env}
		if e.args == nil {
			m["args"] = []string{}
		}
		if e.env == nil {
			m["env"] = map[string]string{}
		}
		if c.name == "claude-code" {
			m["type"] = "stdio"
		}
		servers[e.name] = m
	}
	top := map[string]any{"mcpServers": servers}
	if c.name == "claude-code" {
		top["numStartups"] = 7 // ~/.claude.json holds Claude Code's own state too
	}
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// side is what a client brings to a spawn: its environment, the project
// as the folder Claude Code and Codex run in, "/" as Claude Desktop's.
func (w *realWorld) side() clientSide {
	return clientSide{env: w.clientEnv, workspace: w.proj, cwd: "/"}
}

// outcome is what one session showed: what did not work, and which
// planted secrets a tool read.
type outcome struct {
	broken []string // a tool that must work did not
	leaks  []string // a planted file read through a tool
	texts  []string // every tool text, for the secret scan
	probes []string // what each probe of a planted file answered, for the log
}

// probeServer asks server s, through its own tools, for a file inside its
// grant (it must answer) and for the planted key and the file outside the
// grants (it must not).
func (w *realWorld) probeServer(ctx context.Context, name string, s *session) outcome {
	var o outcome
	call := func(tool string, args map[string]any) (result, bool) {
		r, err := s.call(ctx, tool, args)
		if err != nil {
			// A tool's Go error reaches some SDKs as a protocol error.
			r = result{isError: true, text: err.Error()}
		}
		o.texts = append(o.texts, r.text)
		return r, !r.isError
	}
	want := func(what string, ok bool, r result) {
		if !ok {
			o.broken = append(o.broken, what+": "+oneLine(r.text))
		}
	}
	names, err := s.tools(ctx)
	if err != nil {
		o.broken = append(o.broken, err.Error())
		return o
	}
	need := map[string][]string{"gopls": {"go_workspace", "go_file_context"}, "grafana": {"generate_deeplink"},
		"memory": {"read_graph"}, "notes-node": {"read_file", "list_notes"}, "notes-python": {"read_file", "list_notes"}}
	for _, tool := range need[name] {
		if !slices.Contains(names, tool) {
			o.broken = append(o.broken, "tools/list has no "+tool)
		}
	}
	var readTool, pathArg string
	switch name {
	case "gopls":
		r, ok := call("go_file_context", map[string]any{"file": filepath.Join(w.proj, "main.go")})
		want("go_file_context main.go", ok && strings.Contains(r.text, "example.com/shop"), r)
		r, ok = call("go_workspace", map[string]any{})
		want("go_workspace", ok && strings.Contains(r.text, "example.com/shop"), r)
		readTool, pathArg = "go_file_context", "file"
	case "grafana":
		// No tool of mcp-grafana takes a path: the deeplink needs no
		// Grafana, and shows GRAFANA_URL reached the server.
		r, ok := call("generate_deeplink", map[string]any{"resourceType": "dashboard", "dashboardUid": "e2e"})
		want("generate_deeplink", ok && strings.Contains(r.text, grafanaURL+"/d/e2e"), r)
	case "memory":
		// Its file is its only path, fixed at start.
		r, ok := call("read_graph", map[string]any{})
		want("read_graph", ok && strings.Contains(r.text, "e2e-entity"), r)
	default:
		r, ok := call("list_notes", map[string]any{})
		want("list_notes", ok && strings.Contains(r.text, "hello.txt"), r)
		r, ok = call("read_file", map[string]any{"path": filepath.Join(w.notes, "hello.txt")})
		want("read_file inside the grant", ok && r.text == noteBody, r)
		readTool, pathArg = "read_file", "path"
	}
	if readTool == "" {
		return o
	}
	for file, secret := range map[string]string{w.key: keySecret, w.outside: outsideSecret} {
		r, _ := call(readTool, map[string]any{pathArg: file})
		o.probes = append(o.probes, readTool+" "+file+": "+oneLine(r.text))
		if strings.Contains(r.text, secret) {
			o.leaks = append(o.leaks, file)
		}
	}
	return o
}

// leaked lists where a planted secret shows in a session's output.
func leaked(s *session, o outcome) []string {
	var out []string
	all := map[string]string{"stdout": s.stdout.String(), "stderr": s.stderr.String(), "tool results": strings.Join(o.texts, "\n")}
	for what, text := range all {
		for _, secret := range []string{keySecret, outsideSecret} {
			if strings.Contains(text, secret) {
				out = append(out, secret+" in "+what)
			}
		}
	}
	slices.Sort(out)
	return out
}

// writeClientFile writes the unconfined entries of c to path.
func (w *realWorld) writeClientFile(c realClient, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, w.unconfinedFile(c), 0o644)
}
