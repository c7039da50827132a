package entry

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
)

// TestRedteamManagedEntryKeepsUserBytes: rewriting mcpolicy's own entry
// keeps the keys the user added, but re-renders them from decoded values:
// comments in the entry (JSONC, TOML) are dropped, a number is rounded to a
// float64 (Zed and Codex read integers as 64-bit integers), a lone
// surrogate becomes U+FFFD, TOML's -nan loses its sign, and the user's key
// order and layout are sorted and re-indented.
func TestRedteamManagedEntryKeepsUserBytes(t *testing.T) {
	cases := []struct {
		client, src string
		keep        []string
	}{
		{"vscode", `{
  "servers": {
    "alpha": {
      "command": "/usr/local/bin/mcpolicy-launch",
      "args": ["--sha256", "old"],
      // disabled until the 2027 audit
      "disabled": true, /* ask Ana */
      "timeout": 12345678901234567890
    }
  }
}
`, []string{"// disabled until the 2027 audit", "/* ask Ana */", "12345678901234567890"}},
		{"claude-code", `{
  "mcpServers": {
    "alpha": {
      "command": "/usr/local/bin/mcpolicy-launch",
      "args": ["--sha256", "old"],
      "note": "\ud800 half a pair",
      "timeout": 12345678901234567890
    }
  }
}
`, []string{`\ud800`, "12345678901234567890"}},
		{"codex", `[mcp_servers.alpha] # the indexer
command = "/usr/local/bin/mcpolicy-launch"
args = ["--sha256", "old"]
# slow on big repos
tool_timeout_sec = 120
weight = -nan
`, []string{"# the indexer", "# slow on big repos", "-nan"}},
	}
	for _, tc := range cases {
		t.Run(tc.client, func(t *testing.T) {
			c, _ := clientcfg.LookupClient(tc.client)
			out, err := Merge("config", []byte(tc.src), c, "alpha", managedLaunch("alpha"), false)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.keep {
				if !strings.Contains(string(out), k) {
					t.Errorf("lost %q from the entry's user keys:\n%s", k, out)
				}
			}
		})
	}
}

// TestRedteamHugeNumberNamesItsPlace: 1e400 is valid JSON (Node reads
// Infinity); the file is refused untouched, but the error names neither
// file nor line:col ("json: cannot unmarshal number 1e400 into Go value of
// type float64").
func TestRedteamHugeNumberNamesItsPlace(t *testing.T) {
	c, _ := clientcfg.LookupClient("claude-code")
	src := "{\n  \"stats\": 1e400,\n  \"mcpServers\": {}\n}\n"
	_, err := Merge("claude.json", []byte(src), c, "alpha", managedLaunch("alpha"), false)
	if err == nil {
		return // read like Node: fine
	}
	if !strings.Contains(err.Error(), "claude.json:2:") {
		t.Errorf("the refusal names no file:line:col: %v", err)
	}
}

// TestRedteamCommentOnlyServersObject: VS Code and Zed files keep servers
// the user switched off as comments; when the servers object holds only
// such comments, the first entry mcpolicy adds replaces them (a saved
// token included), and the result check, comparing values, lets it pass.
func TestRedteamCommentOnlyServersObject(t *testing.T) {
	for client, key := range map[string]string{"vscode": "servers", "zed": "context_servers"} {
		t.Run(client, func(t *testing.T) {
			c, _ := clientcfg.LookupClient(client)
			src := "{\n  \"" + key + "\": {\n    // \"github\": {\"command\": \"npx\", \"env\": {\"GITHUB_TOKEN\": \"ghp_saved_for_later\"}}\n  }\n}\n"
			out, err := Merge("config", []byte(src), c, "alpha", managedLaunch("alpha"), false)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), "ghp_saved_for_later") {
				t.Errorf("the commented-out server is gone:\n%s", out)
			}
		})
	}
}
