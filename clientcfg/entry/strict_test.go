package entry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

// jsonc are the targets whose clients read comments and trailing commas;
// every other JSON target is read with a strict parser by its client.
var jsonc = map[string]bool{"vscode": true, "zed": true}

// TestMergedFilesParseStrictly merges 0, 1, 2 and 5 servers into an empty
// file, a typical existing one (two-space and tab indented, CRLF) and, for
// JSONC clients, a commented one with trailing commas — for all nine
// targets — and parses each result as the client would: encoding/json for
// strict JSON, hujson for JSONC, go-toml for Codex. The user's other entry
// keeps its bytes, and the file keeps its indentation.
func TestMergedFilesParseStrictly(t *testing.T) {
	for i := range clientcfg.Clients {
		c := &clientcfg.Clients[i]
		files := map[string]string{"empty": ""}
		if c.Key == "" {
			files["typical"] = "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"uvx\"\nargs = [\"x\"]\n"
		} else {
			files["typical"] = fmt.Sprintf("{\n  \"theme\": \"dark\",\n  %q: {\n    \"other\": {\n      \"command\": \"uvx\",\n      \"args\": [\"x\"]\n    }\n  }\n}\n", c.Key)
			files["tabs"] = strings.ReplaceAll(files["typical"], "  ", "\t")
			files["crlf"] = strings.ReplaceAll(files["typical"], "\n", "\r\n")
			files["no-key"] = "{\n  \"theme\": \"dark\"\n}\n"
			files["empty-object"] = "{}\n"
			if jsonc[c.Name] {
				files["commented"] = fmt.Sprintf("{\n  // mine\n  \"theme\": \"dark\",\n  %q: {\n    \"other\": {\"command\": \"uvx\", \"args\": [\"x\"],},\n  },\n}\n", c.Key)
			}
		}
		for name, src := range files {
			for _, n := range []int{0, 1, 2, 5} {
				t.Run(fmt.Sprintf("%s/%s/%d", c.Name, name, n), func(t *testing.T) {
					out := []byte(src)
					for k := 0; k < n; k++ {
						l := &Launch{Command: "/usr/local/bin/mcpolicy-launch", Args: []string{"--engine", "/usr/bin/docker", "--", "run", fmt.Sprintf("img%d:1", k)},
							Env: map[string]string{"PATH": "/usr/bin:/bin"}}
						var err error
						if out, err = Merge("cfg", out, c, fmt.Sprintf("srv-%d", k), l, false); err != nil {
							t.Fatal(err)
						}
						// Writing the same entry again changes nothing.
						again, err := Merge("cfg", out, c, fmt.Sprintf("srv-%d", k), l, false)
						if err != nil || string(again) != string(out) {
							t.Fatalf("rewriting srv-%d changed the file (%v):\n%s\n---\n%s", k, err, out, again)
						}
					}
					parseAsClient(t, c, name, out, n)
					if strings.Contains(src, "\"other\"") && !strings.Contains(string(out), `"command": "uvx"`) && !strings.Contains(string(out), `"command":"uvx"`) && !strings.Contains(string(out), "command = \"uvx\"") {
						t.Errorf("the user's entry lost its bytes:\n%s", out)
					}
					if name == "tabs" && n > 0 && strings.Contains(string(out), "\n  ") {
						t.Errorf("a tab-indented file got space-indented lines:\n%s", out)
					}
					if name == "crlf" && n > 0 && strings.Count(string(out), "\n") != strings.Count(string(out), "\r\n") {
						t.Errorf("a CRLF file got bare LF lines:\n%q", out)
					}
				})
			}
		}
	}
}

func parseAsClient(t *testing.T, c *clientcfg.Client, name string, out []byte, n int) {
	t.Helper()
	if len(out) == 0 && n == 0 {
		return // nothing merged into nothing
	}
	var doc map[string]any
	switch {
	case c.Key == "":
		if err := toml.Unmarshal(out, &doc); err != nil {
			t.Fatalf("not TOML: %v\n%s", err, out)
		}
		if servers, _ := doc["mcp_servers"].(map[string]any); n > 0 && len(servers) < n {
			t.Fatalf("%d servers, want %d:\n%s", len(servers), n, out)
		}
		return
	case jsonc[c.Name]:
		v, err := hujson.Parse(out)
		if err != nil {
			t.Fatalf("not JSONC: %v\n%s", err, out)
		}
		v.Standardize()
		out = v.Pack()
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%s does not parse as strict JSON (%s): %v\n%s", c.Name, name, err, out)
	}
	if servers, _ := doc[c.Key].(map[string]any); n > 0 && len(servers) < n {
		t.Fatalf("%d servers, want %d:\n%s", len(servers), n, out)
	}
}

// TestStrictStaysStrict: clientcfg.Read (check, client) and Merge (client writing an
// entry) refuse what lint repairs: the tolerance is lint's alone.
func TestStrictStaysStrict(t *testing.T) {
	claude, _ := clientcfg.LookupClient("claude-desktop")
	for _, src := range []string{
		"\"mcpServers\": {\"a\": {\"command\": \"npx\"}}\n",
		"# mine\n{\"mcpServers\": {\"a\": {\"command\": \"npx\"}}}\n",
		"{\"mcpServers\": {\"a\": {\"command\": \"npx\"}}\n",
		"{\"mcpServers\": {\"a\": {\"command\": \"C:\\Users\\me\\npx.cmd\"}}}\n",
	} {
		file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
		os.WriteFile(file, []byte(src), 0o644)
		if _, _, err := clientcfg.ReadLint(file, clientcfg.Options{Home: "/home/me"}); err != nil {
			t.Errorf("lint does not read it: %v\n%s", err, src)
		}
		if _, err := clientcfg.Read(file, "/home/me"); err == nil {
			t.Errorf("clientcfg.Read accepts:\n%s", src)
		}
		l := &Launch{Command: "/usr/local/bin/mcpolicy-launch", Args: []string{"--engine", "/usr/bin/docker", "--", "run", "img:1"}}
		if out, err := Merge(file, []byte(src), claude, "new", l, false); err == nil {
			t.Errorf("Merge edits it:\n%s\n->\n%s", src, out)
		}
	}
	// The flat key is valid JSON: check and client read it as before (not
	// at all), lint reads it.
	file := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(file, []byte(`{"mcp.servers": {"a": {"command": "npx"}}}`), 0o644)
	if ts, err := clientcfg.Read(file, "/home/me"); err != nil || len(ts) != 0 {
		t.Errorf("clientcfg.Read: %v %v", ts, err)
	}
}
