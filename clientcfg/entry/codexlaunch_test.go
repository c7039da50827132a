package entry

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/tailscale/hujson"
)

// TestOldMacNewlinesInTOML: TOML has no lone-CR newline, and Codex does
// not read such a file, so it is refused as it is, in words that say so.
func TestOldMacNewlinesInTOML(t *testing.T) {
	codex, _ := clientcfg.LookupClient("codex")
	if out, err := Merge("config.toml", []byte("model = \"o3\"\r[mcp_servers.x]\rcommand = \"uvx\"\r"), codex, "alpha", codexLaunch, false); err == nil || out != nil ||
		!strings.HasPrefix(err.Error(), "config.toml:1:13: not valid TOML") || !strings.Contains(err.Error(), "lone CR") {
		t.Errorf("a CR-only TOML file: %q, %v", out, err)
	}
}

// FuzzRewriteOwnEntry: rewriting mcpolicy's own entry in any file that
// holds one either is refused for the file (never as a fault of the
// merge, which checks what it wrote) or keeps every value the user added to it
// byte for byte (JSON; Codex: read back as they were, by the merge's own
// check), and a second write changes nothing.
func FuzzRewriteOwnEntry(f *testing.F) {
	for _, s := range codexShapes {
		if !s.force {
			f.Add(s.src, "codex")
		}
	}
	for _, client := range []string{"vscode", "claude-code"} {
		f.Add(`{"mcpServers": {"alpha": {"command": "/usr/local/bin/mcpolicy-launch", "x": [1, 2e5], "type": "sse",}}}`, client)
		f.Add("{\"servers\": {\"alpha\": {\n  // c\n  \"args\": [], /* d */ \"command\": \"/usr/local/bin/mcpolicy-launch\", \"env\": {\"A\": \"1\"}, \"env\": null}}}", client)
		f.Add("{\"mcpServers\": {\"alpha\": {\"command\": \"/usr/local/bin/mcpolicy-launch\"}, \"b\": {}}}", client)
	}
	f.Fuzz(func(t *testing.T, src, client string) {
		c, err := clientcfg.LookupClient(client)
		if err != nil {
			return
		}
		out, err := Merge("config", []byte(src), c, "alpha", managedLaunch("alpha"), false)
		if err != nil {
			if strings.Contains(err.Error(), "a bug") || strings.Contains(err.Error(), "a fault in mcpolicy") {
				t.Fatalf("%v\n%q", err, src)
			}
			return
		}
		again, err := Merge("config", out, c, "alpha", managedLaunch("alpha"), false)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent (%v):\n%q\n%q", err, out, again)
		}
		if c.Key == "" {
			return
		}
		v, err := hujson.Parse([]byte(src))
		if err != nil {
			return
		}
		root, _ := v.Value.(*hujson.Object)
		entry := findObject(findObject(root, c.Key), "alpha")
		if entry == nil {
			return
		}
		for i := range entry.Members {
			m := &entry.Members[i]
			if raw := (hujson.Value{Value: m.Value.Value}).Pack(); !clientcfg.IsLaunchKey(c, memberName(m)) && !strings.Contains(string(out), string(raw)) {
				t.Fatalf("the user's %s lost its bytes %q:\n%q", m.Name.Value, raw, out)
			}
		}
	})
}
