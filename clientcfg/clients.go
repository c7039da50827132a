package clientcfg

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/mcpolicy/mcpolicy/emit/docker"
)

// Client is one MCP client format mcpolicy can write entries for.
type Client struct {
	Name    string
	Key     string // the servers object's key ("" for Codex's TOML tables)
	Project string // the project-scope file, relative to the project ("" when none)
	// User is the user-scope file for this OS.
	User func(home string) string
	// Workspace is the client's variable for the project folder, usable in
	// a committed project-scope file ("" when it has none).
	Workspace string
	// RootEnv is the variable the client sets, in a project server's
	// environment, to the project folder, when it has no Workspace
	// variable to expand in args (Claude Code's CLAUDE_PROJECT_DIR, set
	// from 2.1.141): a committed entry's paths are then relative to it.
	RootEnv string
	// HomeVar is the client's variable for the home folder in args (""
	// when it expands none): a committed entry names home paths by it.
	HomeVar string
	// EnvRef is how the client refers to its own environment in an "env"
	// value ("" when it cannot).
	EnvRef string
	// EnvVars: the client forwards variables listed by name (Codex's
	// env_vars). A client with neither gets --env-file (see env.go).
	EnvVars bool
	// Stdio adds the client's documented stdio marker fields.
	Stdio map[string]any
	// JSONC: the client reads comments and trailing commas (VS Code, Zed);
	// every other JSON client reads strict JSON.
	JSONC bool
}

func darwin(home, mac, linux string) string {
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, mac)
	}
	return filepath.Join(home, linux)
}

// Clients are the targets of `mcpolicy client`.
var Clients = []Client{
	{Name: "claude-desktop", Key: "mcpServers",
		User: func(h string) string {
			return darwin(h, "Library/Application Support/Claude/claude_desktop_config.json", ".config/Claude/claude_desktop_config.json")
		}},
	{Name: "claude-code", Key: "mcpServers", Project: ".mcp.json", RootEnv: "CLAUDE_PROJECT_DIR", HomeVar: "${HOME}", EnvRef: "${%s}",
		User: func(h string) string { return filepath.Join(h, ".claude.json") }},
	{Name: "cursor", Key: "mcpServers", Project: ".cursor/mcp.json", Workspace: "${workspaceFolder}", HomeVar: "${userHome}", EnvRef: "${env:%s}",
		User: func(h string) string { return filepath.Join(h, ".cursor/mcp.json") }},
	{Name: "vscode", Key: "servers", Project: ".vscode/mcp.json", Workspace: "${workspaceFolder}", HomeVar: "${userHome}", EnvRef: "${env:%s}",
		Stdio: map[string]any{"type": "stdio"}, JSONC: true,
		User: func(h string) string {
			return darwin(h, "Library/Application Support/Code/User/mcp.json", ".config/Code/User/mcp.json")
		}},
	{Name: "windsurf", Key: "mcpServers",
		User: func(h string) string { return filepath.Join(h, ".codeium/windsurf/mcp_config.json") }},
	{Name: "zed", Key: "context_servers", Project: ".zed/settings.json", JSONC: true,
		User: func(h string) string { return filepath.Join(h, ".config/zed/settings.json") }},
	{Name: "gemini", Key: "mcpServers", Project: ".gemini/settings.json", EnvRef: "${%s}",
		User: func(h string) string { return filepath.Join(h, ".gemini/settings.json") }},
	{Name: "cline", Key: "mcpServers", Stdio: map[string]any{"type": "stdio"},
		User: func(h string) string {
			return darwin(h, "Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
				".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json")
		}},
	{Name: "codex", Project: ".codex/config.toml", EnvVars: true,
		User: func(h string) string { return filepath.Join(h, ".codex/config.toml") }},
}

// Portable reports whether c's project-scope file can name the project
// and the home without this machine's paths (a variable the client
// expands or sets): only then is a committed entry free of them.
func (c *Client) Portable() bool {
	return c.Project != "" && (c.Workspace != "" || c.RootEnv != "") && c.HomeVar != ""
}

// LookupClient finds a target by name.
func LookupClient(name string) (*Client, error) {
	var names []string
	for i := range Clients {
		if Clients[i].Name == name {
			return &Clients[i], nil
		}
		names = append(names, Clients[i].Name)
	}
	return nil, fmt.Errorf("unknown client %q (clients: %s)", name, strings.Join(names, ", "))
}

// LauncherName is the small launcher client entries run, installed beside
// mcpolicy (`go install ./cmd/...`).
const LauncherName = "mcpolicy-launch"

// launchKeys are the keys of an entry that say how the server starts:
// mcpolicy writes their values, and drops the old ones it does not write;
// every other key of its entry is the user's (c.Stdio's keys are launch
// keys too).
var launchKeys = map[string]bool{"command": true, "args": true, "env": true, "env_vars": true, "type": true}

// IsLaunchKey reports whether key of an entry for c says how the server
// starts.
func IsLaunchKey(c *Client, key string) bool {
	_, stdio := c.Stdio[key]
	return launchKeys[key] || stdio
}

// managedEntry reports whether a JSON entry is an object whose launch is
// mcpolicy's.
func managedEntry(n *node) bool {
	if n == nil || n.kind != kObject {
		return false
	}
	cmd, _ := n.get("command")
	var args []string
	if raw, _ := n.get("args"); raw != nil {
		for _, a := range raw.elems {
			args = append(args, a.str)
		}
	}
	return cmd != nil && cmd.kind == kString && Managed(cmd.str, args)
}

// Managed reports whether an entry's launch is mcpolicy's: our wrappers,
// mcpolicy exec, or docker args carrying our plan label.
func Managed(command string, args []string) bool {
	all := command + " " + strings.Join(args, " ")
	return strings.Contains(all, docker.LabelPlan+"=") || strings.Contains(all, "/.mcpolicy/") ||
		command == LauncherName || strings.HasSuffix(command, "/"+LauncherName) ||
		(strings.HasSuffix(command, "mcpolicy") && len(args) > 0 && (args[0] == "exec" || args[0] == "run"))
}
