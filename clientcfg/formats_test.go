package clientcfg

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/schema"
)

// lc is "line:col" of a position.
func lc(p schema.Pos) string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// noteList is each note as "line:col: msg" (E for an Unread one).
func noteList(ns []lint.Note) []string {
	var out []string
	for _, n := range ns {
		e := ""
		if n.Unread {
			e = "E "
		}
		out = append(out, fmt.Sprintf("%s%s: %s", e, lc(n.Pos), n.Msg))
	}
	return out
}

func target(ts []*readback.Target, name string) *readback.Target {
	for _, t := range ts {
		if t.Server == name {
			return t
		}
	}
	return nil
}

// TestOpencode: opencode's "mcp" entries, command an array, environment
// read as env, enabled: false a disabled entry, each at its position.
func TestOpencode(t *testing.T) {
	src := `{
  "$schema": "https://opencode.ai/config.json",
  "mcp": {
    "files": {"type": "local", "command": ["npx", "-y", "server-filesystem", "/tmp/x"],
      "environment": {"API_KEY": "{env:API_KEY}"}},
    "off": {"type": "local", "command": ["uvx", "mcp-server-fetch"], "enabled": false},
    "docs": {"type": "remote", "url": "https://mcp.example.com/mcp", "headers": {"X": "y"}}
  }
}
`
	file, ts, notes, err := readLint(t, "opencode.json", src)
	if err != nil || len(notes) != 0 {
		t.Fatalf("err %v, notes %v", err, noteList(notes))
	}
	if len(ts) != 3 {
		t.Fatalf("%d targets, want 3", len(ts))
	}
	files := target(ts, "files")
	if files == nil || files.Pos.File != file || lc(files.Pos) != "4:5" || files.Launcher != "npx" || files.Disabled {
		t.Fatalf("files: %+v", files)
	}
	if !strings.Contains(strings.Join(files.EnvPassed, ","), "API_KEY") {
		t.Errorf("environment not read as env: %v", files.EnvPassed)
	}
	for _, f := range files.Flags {
		if f.Kind == readback.FlagSecretInline {
			t.Errorf("{env:API_KEY} is opencode's reference, not a secret inline: %+v", f)
		}
	}
	var unconf *readback.Flag
	for i := range files.Flags {
		if files.Flags[i].Kind == readback.FlagUnconfined {
			unconf = &files.Flags[i]
		}
	}
	if unconf == nil || textAt(src, unconf.Pos)[:5] != `"npx"` {
		t.Errorf("unconfined flag %+v, want at the command's first word", unconf)
	}
	if off := target(ts, "off"); off == nil || !off.Disabled || lc(off.Pos) != "6:5" {
		t.Errorf("off: %+v, want disabled at 6:5", off)
	}
	if docs := target(ts, "docs"); docs == nil || docs.Remote != "https://mcp.example.com/mcp" {
		t.Errorf("docs: %+v", docs)
	}
	// VS Code's settings "mcp" holds "servers": not opencode's.
	_, ts, _, err = readLint(t, "Code/User/settings.json", `{"mcp": {"servers": {"a": {"command": "npx"}}}}`)
	if err != nil || len(ts) != 1 || ts[0].Server != "a" {
		t.Errorf("VS Code settings: %v %v", ts, err)
	}
}

// TestGoose: Goose's extensions: stdio ones with cmd/args/envs/env_keys,
// remote ones by uri, builtin ones a note; positions are the YAML's.
func TestGoose(t *testing.T) {
	src := `GOOSE_PROVIDER: anthropic
extensions:
  developer:
    enabled: true
    name: developer
    type: builtin
  github:
    cmd: npx
    args:
      - -y
      - "@modelcontextprotocol/server-github"
    envs:
      GITHUB_PERSONAL_ACCESS_TOKEN: ghp_4f8Kq2ZxW9mT7vB3nL6pR1sY5hJ0cD8eA2gU
    env_keys: [SLACK_TOKEN]
    enabled: true
    timeout: 300
    type: stdio
  fetch: {type: stdio, cmd: uvx, args: [mcp-server-fetch], enabled: false}
  remote:
    type: streamable_http
    uri: https://mcp.example.com/mcp
`
	_, ts, notes, err := readLint(t, ".config/goose/config.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	if got := noteList(notes); len(got) != 1 || !strings.HasPrefix(got[0], "3:3: a Goose builtin extension (developer)") {
		t.Errorf("notes %q", got)
	}
	gh := target(ts, "github")
	if gh == nil || lc(gh.Pos) != "7:3" || gh.Launcher != "npx" {
		t.Fatalf("github: %+v", gh)
	}
	var secret *readback.Flag
	for i := range gh.Flags {
		if gh.Flags[i].Kind == readback.FlagSecretInline {
			secret = &gh.Flags[i]
		}
	}
	if secret == nil || lc(secret.Pos) != "13:7" {
		t.Errorf("secret flag %+v, want at 13:7", secret)
	}
	if env := strings.Join(gh.EnvPassed, ","); !strings.Contains(env, "SLACK_TOKEN") || !strings.Contains(env, "GITHUB_PERSONAL_ACCESS_TOKEN") {
		t.Errorf("env passed %q", env)
	}
	if f := target(ts, "fetch"); f == nil || !f.Disabled || lc(f.Pos) != "18:3" {
		t.Errorf("fetch: %+v", f)
	}
	if r := target(ts, "remote"); r == nil || r.Remote != "https://mcp.example.com/mcp" || lc(r.Pos) != "19:3" {
		t.Errorf("remote: %+v", r)
	}
}

// TestNoServer: a file that yields no server is an error at its most
// useful position, unless it is a valid config with none (a note).
func TestNoServer(t *testing.T) {
	for _, c := range []struct{ name, file, src, want string }{
		{"unknown key", "a.json", "{\n  \"foo\": 1\n}", "E 2:3: no server to lint: \"foo\""},
		{"empty list", "a.json", `{"servers": []}`, "E 1:2: \"servers\" is an empty list"},
		{"empty object", "a.json", `{}`, "E 1:1: no server to lint"},
		{"empty file", "a.json", "", "E 1:1: an empty file"},
		{"yaml neither", "c.yaml", "name: x\nitems: []\n", "E 1:1: not a client config lint reads (Goose's extensions:) nor a Kubernetes manifest"},
		{"toml without tables", "config.toml", "model = \"o3\"\n", "E 1:1: no server to lint: \"model\""},
		{"empty section", "a.json", `{"mcpServers": {}}`, "1:2: \"mcpServers\" is empty: a valid config with no server"},
		{"settings file", ".zed/settings.json", `{"theme": "One Dark"}`, "1:1: a client's settings file with no servers"},
		{"bare entry", "a.json", "{\"command\": \"npx\", \"args\": [\"-y\", \"x\"]}", "E 1:1: a bare server entry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ts, notes, err := readLint(t, c.file, c.src)
			got := noteList(notes)
			if se, ok := err.(*schema.Error); ok {
				got = append(got, fmt.Sprintf("E %s: %s", lc(se.Pos), se.Msg))
			} else if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
				t.Errorf("got %q, want one %q", got, c.want)
			}
			if c.name == "bare entry" && (len(ts) != 1 || ts[0].Server != "(unnamed)") {
				t.Errorf("bare entry: %v, want one (unnamed)", ts)
			}
		})
	}
}

// TestParseGap7: a BOM is a note; a key written twice is a note at the
// first, whose servers are not read; a raw newline or tab in a string is
// an error at the character, printable; disabled: true marks the target.
func TestParseGap7(t *testing.T) {
	_, ts, notes, err := readLint(t, "claude_desktop_config.json", "\xef\xbb\xbf{\"mcpServers\": {\"a\": {\"command\": \"npx\"}}}")
	if err != nil || len(ts) != 1 || len(notes) != 1 || lc(notes[0].Pos) != "1:1" || !strings.Contains(notes[0].Msg, "JSON.parse refuses it") {
		t.Errorf("BOM: %v %v %q", ts, err, noteList(notes))
	}

	src := "{\n  \"mcpServers\": {\"old\": {\"command\": \"npx\"}},\n  \"mcpServers\": {\"new\": {\"command\": \"uvx\", \"disabled\": true, \"args\": [], \"args\": [\"x\"]}, \"new\": {\"command\": \"uvx\", \"args\": [\"y\"], \"disabled\": true}}\n}"
	_, ts, notes, err = readLint(t, "cline_mcp_settings.json", src) // Cline honours "disabled"
	if err != nil || len(ts) != 1 || ts[0].Server != "new" || !ts[0].Disabled {
		t.Fatalf("duplicates: %v %v", ts, err)
	}
	// Claude Desktop reads no "disabled": the entry is live, the key noted.
	if _, ts, dn, err := readLint(t, "claude_desktop_config.json", src); err != nil || len(ts) != 1 || ts[0].Disabled ||
		!slices.ContainsFunc(noteList(dn), func(n string) bool { return strings.Contains(n, "not a key Claude Desktop reads") }) {
		t.Errorf("disabled in Claude Desktop: %v %v %q", ts, err, noteList(dn))
	}
	got := noteList(notes)
	want := []string{
		`2:3: "mcpServers" is written again at 3:3`,
		`3:18: server "new" is written again at 3:90`,
	}
	if len(got) != len(want) {
		t.Fatalf("notes %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("note %q, want %q", got[i], want[i])
		}
	}
	if !strings.Contains(got[0], "not live: old") {
		t.Errorf("shadowed servers not named: %q", got[0])
	}

	for _, c := range []struct{ name, src, at, msg string }{
		{"newline", "{\"mcpServers\": {\"a\": {\"command\": \"npx\", \"args\": [\"x\ny\"]}}}", "1:52", "a raw newline inside a string (write \\n)"},
		{"tab", "{\"mcpServers\": {\"a\": {\"command\": \"n\tpx\"}}}", "1:36", "a raw tab inside a string (write \\t)"},
	} {
		_, _, _, err := readLint(t, "claude_desktop_config.json", c.src)
		se, ok := err.(*schema.Error)
		if !ok || lc(se.Pos) != c.at || !strings.Contains(se.Msg, c.msg) || printable.String(se.Msg) != se.Msg {
			t.Errorf("%s: %v, want at %s %q", c.name, err, c.at, c.msg)
		}
	}
}

// TestYAMLClient: a manifest given as a client config is read as one, and
// says so; a BOM before Goose's YAML is read past (YAML allows it).
func TestYAMLClient(t *testing.T) {
	_, ts, notes, err := readLint(t, "pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x:1\n")
	if err != nil || len(ts) != 1 || len(notes) != 1 || lc(notes[0].Pos) != "1:1" || !strings.Contains(notes[0].Msg, "a Kubernetes manifest") {
		t.Errorf("manifest: %v %v %q", ts, err, noteList(notes))
	}
	_, ts, _, err = readLint(t, "config.yaml", "\xef\xbb\xbfextensions:\n  f:\n    type: stdio\n    cmd: uvx\n")
	if err != nil || len(ts) != 1 || lc(ts[0].Pos) != "2:3" {
		t.Errorf("BOM before YAML: %v %v", ts, err)
	}
}

// TestStrictRawNewline: the strict read (check, client) places a raw
// newline in a string at a line, with a printable message.
func TestStrictRawNewline(t *testing.T) {
	file, _, _, _ := readLint(t, "claude_desktop_config.json", "{\"mcpServers\": {\"a\": {\"command\": \"np\nx\"}}}")
	_, err := Read(file, "/home/me")
	se, ok := err.(*schema.Error)
	if !ok || se.Pos.Line < 1 || strings.Contains(se.Msg, "\n") {
		t.Errorf("strict: %v", err)
	}
}
