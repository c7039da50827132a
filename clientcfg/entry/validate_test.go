package entry

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
)

// TestMergeRefusesWhatTheClientWouldNotLoad: a file its client would not
// read, or of a shape an entry cannot be added to without guessing, is
// refused at the position of the fault, in words that say why.
func TestMergeRefusesWhatTheClientWouldNotLoad(t *testing.T) {
	for _, tc := range []struct{ client, src, want string }{
		{"claude-desktop", "{\n  // mine\n  \"mcpServers\": {}\n}\n", "cfg:2:3: not strict JSON: invalid character '/' looking for beginning of object key string: left untouched (claude-desktop reads strict JSON, so it does not load this file either)"},
		{"cursor", "{\"mcpServers\": {\"a\": {\"command\": \"x\",},}}\n", "cfg:1:38: not strict JSON"},
		{"claude-code", "{\"mcpServers\": [1]}\n", `cfg:1:16: "mcpServers" is an array, not an object of servers: left untouched (claude-code does not read it either`},
		{"vscode", "{\"servers\": \"x\"}\n", `cfg:1:13: "servers" is a string, not an object of servers`},
		{"gemini", "[1]\n", "cfg:1:1: the top level is an array, not an object: left untouched"},
		{"zed", "{\"context_servers\": {}, // two\n \"context_servers\": {}}\n", "cfg:2:2: context_servers is written twice (first at 1:2); the client reads only the last: left untouched"},
		{"cline", "{\"mcpServers\": {\"alpha\": {}, \"alpha\": {}}}\n", "cfg:1:30: mcpServers.alpha is written twice (first at 1:17)"},
		{"windsurf", "{\"mcpServers\": {\"alpha\": {\"command\": \"x\"}\n", "cfg:2:1: not valid JSON (with comments)"},
		{"claude-desktop", "\ufeff{\"mcpServers\": [}\n", "cfg:1:17: not valid JSON"},
	} {
		c, _ := clientcfg.LookupClient(tc.client)
		out, err := Merge("cfg", []byte(tc.src), c, "alpha", managedLaunch("alpha"), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) || out != nil {
			t.Errorf("%s %q:\n got %v\nwant %s", tc.client, tc.src, err, tc.want)
		}
	}
}

// TestMergeForeignShapes: an entry of the server's name that is not an
// object mcpolicy wrote is the user's, whatever its shape.
func TestMergeForeignShapes(t *testing.T) {
	c, _ := clientcfg.LookupClient("claude-code")
	for _, entry := range []string{`5`, `null`, `"x"`, `[]`, `{}`, `{"command": 5}`, `{"command": "uvx"}`} {
		_, err := Merge("cfg", []byte(`{"mcpServers": {"alpha": `+entry+`}}`), c, "alpha", managedLaunch("alpha"), false)
		var f *ErrForeign
		if !errors.As(err, &f) {
			t.Errorf("entry %s: err = %v, want ErrForeign", entry, err)
		}
	}
}

// TestCheckResultCatchesLoss: the check after the merge refuses a result
// that dropped or changed anything, or that does not hold the entry.
func TestCheckResultCatchesLoss(t *testing.T) {
	c, _ := clientcfg.LookupClient("claude-code")
	src := []byte("{\"theme\": \"dark\", \"mcpServers\": {\"other\": {\"command\": \"uvx\"}}}\n")
	entry, _ := entryValue(c, managedLaunch("alpha"))
	good, err := Merge("cfg", src, c, "alpha", managedLaunch("alpha"), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcfg.CheckResult(c, "cfg", src, good, "alpha", entry, nil); err != nil {
		t.Fatalf("a good merge refused: %v", err)
	}
	for name, bad := range map[string]string{
		"lost theme":       strings.Replace(string(good), `"theme": "dark", `, "", 1),
		"changed other":    strings.Replace(string(good), `"uvx"`, `"npx"`, 1),
		"lost other":       strings.Replace(string(good), `"other": {"command": "uvx"},`, "", 1),
		"not the entry":    strings.Replace(string(good), `"alpha"`, `"beta"`, 1),
		"does not load":    strings.Replace(string(good), "}", "},", 1),
		"no mark (bom in)": string(good),
	} {
		from := src
		if name == "no mark (bom in)" {
			from = append(append([]byte{}, bom...), src...)
		}
		if err := clientcfg.CheckResult(c, "cfg", from, []byte(bad), "alpha", entry, nil); err == nil {
			t.Errorf("%s: not refused:\n%s", name, bad)
		}
	}
}

// TestRewriteKeepsUserKeys: rewriting mcpolicy's own entry replaces how
// the server starts, and keeps what the user added to the entry (a
// disabled flag, a timeout, auto-approved tools, a sub-table) as it was
// written; --force over an entry that is not mcpolicy's replaces it whole.
func TestRewriteKeepsUserKeys(t *testing.T) {
	l := managedLaunch("alpha")
	l.Env = map[string]string{"PATH": "/usr/bin"}
	json := `{"mcpServers": {"alpha": {"command": "/usr/local/bin/mcpolicy-launch", "args": ["--sha256", "old"], "env": {"OLD": "secret"}, "disabled": true, "autoApprove": ["read"], "timeout": 30}}}` + "\n"
	toml := "[mcp_servers.alpha]\ncommand = \"/usr/local/bin/mcpolicy-launch\"\nargs = [\"--sha256\", \"old\"]\nenabled = false\ntool_timeout_sec = 30\n\n[mcp_servers.alpha.env]\nOLD = \"secret\"\n\n[mcp_servers.alpha.tools.read]\napprove = true\n"
	for client, src := range map[string]string{"cline": json, "codex": toml} {
		c, _ := clientcfg.LookupClient(client)
		out, err := Merge("cfg", []byte(src), c, "alpha", l, false)
		if err != nil {
			t.Fatalf("%s: %v", client, err)
		}
		s := string(out)
		for _, want := range map[string][]string{
			"cline": {`"disabled": true`, `"autoApprove": [`, `"timeout": 30`, `"--sha256",`, `"alpha"`},
			"codex": {"[mcp_servers.alpha]\ncommand", "enabled = false\ntool_timeout_sec = 30\n\n[mcp_servers.alpha.tools.read]\napprove = true\n", `"--sha256", "alpha"`},
		}[client] {
			if !strings.Contains(s, want) {
				t.Errorf("%s: %q lost:\n%s", client, want, s)
			}
		}
		if strings.Contains(s, "secret") || strings.Contains(s, "old") {
			t.Errorf("%s: the old launch stayed:\n%s", client, s)
		}
		foreign := strings.ReplaceAll(src, "/usr/local/bin/mcpolicy-launch", "npx")
		out, err = Merge("cfg", []byte(foreign), c, "alpha", l, true)
		if err != nil || strings.Contains(string(out), "disabled") || strings.Contains(string(out), "enabled") {
			t.Errorf("%s: --force kept a foreign entry's keys (%v):\n%s", client, err, out)
		}
	}
}
