package importer

import (
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
)

// ClientOf is the `mcpolicy client` target that writes file: its user
// file or its project file, else by the file's name; "" when unknown.
func ClientOf(file, home string) *clientcfg.Client {
	abs, _ := filepath.Abs(file)
	for i := range clientcfg.Clients {
		c := &clientcfg.Clients[i]
		if home != "" && filepath.Clean(c.User(home)) == abs {
			return c
		}
	}
	slash := filepath.ToSlash(abs)
	for i := range clientcfg.Clients {
		c := &clientcfg.Clients[i]
		if c.Project != "" && strings.HasSuffix(slash, "/"+c.Project) {
			return c
		}
	}
	byName := map[string]string{
		"claude_desktop_config.json": "claude-desktop", ".claude.json": "claude-code", "config.toml": "codex",
		"mcp_config.json": "windsurf", "cline_mcp_settings.json": "cline",
	}
	if name := byName[filepath.Base(abs)]; name != "" {
		c, _ := clientcfg.LookupClient(name)
		return c
	}
	if filepath.Base(abs) == "mcp.json" && strings.Contains(slash, "/Code/User/") {
		c, _ := clientcfg.LookupClient("vscode")
		return c
	}
	return nil
}

// PassesOwnEnv reports whether a client gives a server the values of
// its own environment (by ${NAME} or by name): then a secret import moved
// to the env file reaches the server only if the client's environment
// has it; a client that passes none starts it through the launcher,
// which reads the env file.
func PassesOwnEnv(c *clientcfg.Client) bool { return c.EnvRef != "" || c.EnvVars }
