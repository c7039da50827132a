package e2e_test

// How each MCP client reads its config file and spawns a stdio server entry:
// the file format (parsed strictly, as the client parses it), the process's
// environment, which variables are expanded, and the working directory.
// Nothing here repairs an entry: what the client would run is what runs.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

// spawnSpec is how a client starts one entry: the program as written
// (argv[0]), the arguments, the process's whole environment and its working
// directory.
type spawnSpec struct {
	command string
	args    []string
	env     []string // NAME=value, sorted: everything the process gets
	dir     string
}

// clientSide is what a client brings to a spawn besides the file: its own
// environment, and the folders it knows.
type clientSide struct {
	env       map[string]string // the client process's own environment
	workspace string            // the open folder (VS Code), the folder Codex runs in
	cwd       string            // the client's own working directory
}

// A clientKind is one client the test spawns entries for.
type clientKind struct {
	name   string // the test's name for it
	target string // the `mcpolicy client` target
	// ext is the extension of the file written with --file, outside the
	// project (a user-scope file).
	ext string
	// project, when set, is the target's project-scope file, relative to
	// the project, written without --file.
	project string
	// spawn reads the entry named server from the written file, as the
	// client does, and returns how the client starts it.
	spawn func(file, server string, c clientSide) (spawnSpec, error)
}

var clientKinds = []clientKind{
	{name: "claude-desktop", target: "claude-desktop", ext: ".json", spawn: claudeDesktopSpawn},
	{name: "vscode", target: "vscode", ext: ".json", spawn: vscodeSpawn},
	// The project-scope file VS Code reads from the open folder: there
	// mcpolicy writes ${workspaceFolder} for the project's paths.
	{name: "vscode-workspace", target: "vscode", project: ".vscode/mcp.json", spawn: vscodeSpawn},
	{name: "codex", target: "codex", ext: ".toml", spawn: codexSpawn},
}

// claudeDesktopInherited are the variables Claude Desktop passes to a stdio
// server from its own environment: the MCP TypeScript SDK's
// DEFAULT_INHERITED_ENV_VARS (not Windows), which StdioClientTransport
// starts with unless the entry's env replaces a name.
var claudeDesktopInherited = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// claudeDesktopSpawn reads claude_desktop_config.json with encoding/json
// (JSON.parse: no comments, no trailing commas), an entry holding only
// command, args and env, and spawns it as the TypeScript SDK's
// StdioClientTransport does: the inherited variables (getDefaultEnvironment
// skips a value starting with "()", a shell function), the entry's env on
// top, nothing expanded anywhere, the app's own working directory.
func claudeDesktopSpawn(file, server string, c clientSide) (spawnSpec, error) {
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
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	if err := decodeJSONBytes(file, raw, &e, true); err != nil {
		return spawnSpec{}, err
	}
	env := map[string]string{}
	for _, name := range claudeDesktopInherited {
		if v, ok := c.env[name]; ok && !strings.HasPrefix(v, "()") {
			env[name] = v
		}
	}
	for k, v := range e.Env {
		env[k] = v
	}
	return spawnSpec{command: e.Command, args: e.Args, env: environ(env), dir: c.cwd}, nil
}

// vscodeSpawn reads a VS Code mcp.json as JSONC (comments and trailing
// commas, hujson), an entry of "type": "stdio" with command, args, env and
// cwd, and spawns it as VS Code does: ${workspaceFolder}, ${userHome} and
// ${env:NAME} expanded in command, args, env values and cwd (any other
// variable is an error here); the environment is VS Code's own with the
// entry's env on top (a null value removes the name); the working
// directory is cwd, else the workspace folder. An envFile is refused: this
// helper does not read one.
func vscodeSpawn(file, server string, c clientSide) (spawnSpec, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return spawnSpec{}, err
	}
	std, err := hujson.Standardize(src)
	if err != nil {
		return spawnSpec{}, fmt.Errorf("%s: not JSONC: %v", file, err)
	}
	var cfg struct {
		Servers map[string]json.RawMessage `json:"servers"`
	}
	if err := decodeJSONBytes(file, std, &cfg, false); err != nil {
		return spawnSpec{}, err
	}
	raw, ok := cfg.Servers[server]
	if !ok {
		return spawnSpec{}, fmt.Errorf("%s: no servers.%s", file, server)
	}
	var e struct {
		Type    string             `json:"type"`
		Command string             `json:"command"`
		Args    []string           `json:"args"`
		Env     map[string]*string `json:"env"`
		EnvFile string             `json:"envFile"`
		Cwd     string             `json:"cwd"`
	}
	if err := decodeJSONBytes(file, raw, &e, true); err != nil {
		return spawnSpec{}, err
	}
	if e.Type != "stdio" {
		return spawnSpec{}, fmt.Errorf("%s: servers.%s: type %q, want \"stdio\"", file, server, e.Type)
	}
	if e.EnvFile != "" {
		return spawnSpec{}, fmt.Errorf("%s: servers.%s: envFile is not implemented by this helper", file, server)
	}
	expand := func(s string) (string, error) { return vscodeExpand(s, c) }
	var spec spawnSpec
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
		if v == nil {
			delete(env, k)
			continue
		}
		x, err := expand(*v)
		if err != nil {
			return spawnSpec{}, err
		}
		env[k] = x
	}
	spec.env = environ(env)
	spec.dir = c.workspace
	if e.Cwd != "" {
		if spec.dir, err = expand(e.Cwd); err != nil {
			return spawnSpec{}, err
		}
	}
	return spec, nil
}

var vscodeVariable = regexp.MustCompile(`\$\{([^}]*)\}`)

// vscodeExpand resolves the variables VS Code resolves in an MCP server
// entry: ${workspaceFolder}, ${userHome} (the client's HOME) and
// ${env:NAME} (the client's environment; "" when unset).
func vscodeExpand(s string, c clientSide) (string, error) {
	var bad error
	out := vscodeVariable.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		switch {
		case name == "workspaceFolder":
			return c.workspace
		case name == "userHome":
			return c.env["HOME"]
		case strings.HasPrefix(name, "env:"):
			return c.env[strings.TrimPrefix(name, "env:")]
		}
		bad = fmt.Errorf("variable %s in %q: not one this helper resolves", m, s)
		return m
	})
	return out, bad
}

// codexInherited are the variables Codex passes to a stdio server from its
// own environment (codex-rs rmcp-client DEFAULT_ENV_VARS on Linux; the
// macOS-only __CF_USER_TEXT_ENCODING left out).
var codexInherited = []string{"HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ"}

// codexServer is a [mcp_servers.NAME] table of Codex's config.toml, stdio
// fields only; any other key is an error.
type codexServer struct {
	Command           string            `toml:"command"`
	Args              []string          `toml:"args"`
	Env               map[string]string `toml:"env"`
	EnvVars           []string          `toml:"env_vars"`
	Cwd               string            `toml:"cwd"`
	Enabled           *bool             `toml:"enabled"`
	StartupTimeoutSec *float64          `toml:"startup_timeout_sec"`
	ToolTimeoutSec    *float64          `toml:"tool_timeout_sec"`
	EnabledTools      []string          `toml:"enabled_tools"`
	DisabledTools     []string          `toml:"disabled_tools"`
}

// codexSpawn reads config.toml strictly (go-toml/v2, unknown keys refused)
// and spawns [mcp_servers.NAME] as Codex does: the inherited variables and
// the names listed in env_vars that its own environment has, then the env
// table; nothing expanded; the working directory is cwd, else the folder
// Codex runs in (the project).
func codexSpawn(file, server string, c clientSide) (spawnSpec, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return spawnSpec{}, err
	}
	var cfg struct {
		MCPServers map[string]codexServer `toml:"mcp_servers"`
	}
	d := toml.NewDecoder(bytes.NewReader(src))
	d.DisallowUnknownFields()
	if err := d.Decode(&cfg); err != nil {
		var sme *toml.StrictMissingError
		if errors.As(err, &sme) {
			return spawnSpec{}, fmt.Errorf("%s: %s", file, sme.String())
		}
		return spawnSpec{}, fmt.Errorf("%s: %v", file, err)
	}
	e, ok := cfg.MCPServers[server]
	if !ok {
		return spawnSpec{}, fmt.Errorf("%s: no [mcp_servers.%s]", file, server)
	}
	if e.Enabled != nil && !*e.Enabled {
		return spawnSpec{}, fmt.Errorf("%s: [mcp_servers.%s] is disabled", file, server)
	}
	env := map[string]string{}
	for _, name := range append(slices.Clone(codexInherited), e.EnvVars...) {
		if v, ok := c.env[name]; ok {
			env[name] = v
		}
	}
	for k, v := range e.Env {
		env[k] = v
	}
	dir := c.workspace
	if e.Cwd != "" {
		dir = e.Cwd
	}
	return spawnSpec{command: e.Command, args: e.Args, env: environ(env), dir: dir}, nil
}

// decodeJSONFile is decodeJSONBytes of a file.
func decodeJSONFile(file string, v any, strict bool) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	return decodeJSONBytes(file, b, v, strict)
}

// decodeJSONBytes decodes exactly one JSON value (encoding/json: no
// comments, no trailing commas); strict refuses a field v does not have.
func decodeJSONBytes(file string, b []byte, v any, strict bool) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if strict {
		d.DisallowUnknownFields()
	}
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%s: %v", file, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("%s: data after the JSON value", file)
	}
	return nil
}

// environ renders env as NAME=value lines, sorted.
func environ(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// envMap reads NAME=value lines (os.Environ); a later name wins.
func envMap(lines []string) map[string]string {
	m := map[string]string{}
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// TestClientSpawnRules pins the helpers above to the clients' rules: what
// each passes of its own environment, what it expands, what its parser
// refuses.
func TestClientSpawnRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := clientSide{
		env: map[string]string{
			"HOME": "/home/u", "USER": "u", "PATH": "/client/bin", "TERM": "xterm", "LANG": "C.UTF-8",
			"TMPDIR": "/tmp/u", "DOCKER_HOST": "unix:///d.sock", "FORWARDED": "f", "SHELL": "() { :; }",
		},
		workspace: "/ws", cwd: "/",
	}
	check := func(what string, got spawnSpec, err error, want spawnSpec) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if got.command != want.command || !slices.Equal(got.args, want.args) || !slices.Equal(got.env, want.env) || got.dir != want.dir {
			t.Errorf("%s:\ngot  %+v\nwant %+v", what, got, want)
		}
	}
	refused := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: accepted", what)
		}
	}

	f := write("claude.json", `{"mcpServers": {"s": {"command": "/bin/x", "args": ["${HOME}"], "env": {"PATH": "/entry/bin", "V": "${HOME}"}}}}`)
	got, err := claudeDesktopSpawn(f, "s", c)
	check("claude-desktop", got, err, spawnSpec{command: "/bin/x", args: []string{"${HOME}"}, dir: "/",
		env: []string{"HOME=/home/u", "PATH=/entry/bin", "TERM=xterm", "USER=u", "V=${HOME}"}})
	_, err = claudeDesktopSpawn(write("c1.json", `{"mcpServers": {"s": {"command": "/bin/x",}}}`), "s", c)
	refused("claude-desktop: a trailing comma", err)
	_, err = claudeDesktopSpawn(write("c2.json", `{"mcpServers": {"s": {"command": "/bin/x", "cwd": "/"}}}`), "s", c)
	refused("claude-desktop: a field it does not have", err)

	f = write("vscode.json", `{
	// JSONC
	"servers": {"s": {"type": "stdio", "command": "${userHome}/x", "args": ["${workspaceFolder}/a", "${env:FORWARDED}", "${env:NOPE}"],
		"env": {"PATH": "/entry/bin", "DOCKER_HOST": null, "V": "${workspaceFolder}"},},},
}`)
	got, err = vscodeSpawn(f, "s", c)
	check("vscode", got, err, spawnSpec{command: "/home/u/x", args: []string{"/ws/a", "f", ""}, dir: "/ws",
		env: []string{"FORWARDED=f", "HOME=/home/u", "LANG=C.UTF-8", "PATH=/entry/bin", "SHELL=() { :; }", "TERM=xterm", "TMPDIR=/tmp/u", "USER=u", "V=/ws"}})
	_, err = vscodeSpawn(write("v1.json", `{"servers": {"s": {"type": "stdio", "command": "${input:x}"}}}`), "s", c)
	refused("vscode: a variable the helper does not resolve", err)
	_, err = vscodeSpawn(write("v2.json", `{"servers": {"s": {"type": "http", "command": "/bin/x"}}}`), "s", c)
	refused("vscode: not stdio", err)

	f = write("codex.toml", `[mcp_servers.s]
command = "/bin/x"
args = ["${HOME}"]
env = { PATH = "/entry/bin" }
env_vars = ["FORWARDED", "MISSING"]
`)
	got, err = codexSpawn(f, "s", c)
	check("codex", got, err, spawnSpec{command: "/bin/x", args: []string{"${HOME}"}, dir: "/ws",
		env: []string{"FORWARDED=f", "HOME=/home/u", "LANG=C.UTF-8", "PATH=/entry/bin", "SHELL=() { :; }", "TERM=xterm", "TMPDIR=/tmp/u", "USER=u"}})
	_, err = codexSpawn(write("x1.toml", "[mcp_servers.s]\ncommand = \"/bin/x\"\nenvironment = {}\n"), "s", c)
	refused("codex: a key it does not have", err)
}
