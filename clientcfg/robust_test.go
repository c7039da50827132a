package clientcfg

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/schema"
)

// TestHostileFiles: a file built to exhaust lint (aliases that multiply,
// brackets nested a million deep) is refused at a position, quickly,
// rather than read until memory or the stack runs out.
func TestHostileFiles(t *testing.T) {
	bomb := `a: &a ["x","x","x","x","x","x","x","x","x"]` + "\n"
	for i := 1; i < 9; i++ {
		prev, cur := string(rune('a'+i-1)), string(rune('a'+i))
		bomb += cur + ": &" + cur + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
	}
	bomb += "extensions:\n  s:\n    type: stdio\n    cmd: npx\n    args: *i\n"
	deep := 1_000_000
	for _, c := range []struct{ name, file, src, at, msg string }{
		{"alias bomb", ".config/goose/config.yaml", bomb, "5:8", "YAML aliases expand past 10000 nodes"},
		{"deep JSON", "claude_desktop_config.json", `{"mcpServers":` + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "}",
			"1:1014", "nest deeper than 1000 levels"},
		{"deep TOML", ".codex/config.toml", "[mcp_servers.a]\ncommand = \"npx\"\nargs = " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n",
			"3:1008", "nest deeper than 1000 levels"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			file, ts, _, err := readLint(t, c.file, c.src)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			se, ok := err.(*schema.Error)
			if !ok || ts != nil {
				t.Fatalf("err %v (%T), targets %v", err, err, ts)
			}
			if at := fmt.Sprintf("%d:%d", se.Pos.Line, se.Pos.Col); se.Pos.File != file || at != c.at || !strings.Contains(se.Msg, c.msg) {
				t.Errorf("error at %s %s: %q, want %s %q", se.Pos.File, at, se.Msg, c.at, c.msg)
			}
		})
	}
	// Aliases that expand to little are read as before.
	_, ts, _, err := readLint(t, ".config/goose/config.yaml", "base: &b [-y, srv]\nextensions:\n  s:\n    type: stdio\n    cmd: npx\n    args: *b\n")
	if err != nil || len(ts) != 1 {
		t.Errorf("a small alias: %v, %d targets", err, len(ts))
	}
}

// TestZedEnvNull: Zed's env is optional, and Zed writes null for none:
// the entry is linted, in both of Zed's shapes.
func TestZedEnvNull(t *testing.T) {
	for _, src := range []string{
		`{"context_servers":{"old":{"command":{"path":"npx","args":["-y","srv"],"env":null}}}}`,
		`{"context_servers":{"new":{"command":"npx","args":["-y","srv"],"env":null}}}`,
	} {
		_, ts, _, err := readLint(t, ".config/zed/settings.json", src)
		if err != nil || len(ts) != 1 {
			t.Errorf("%s: %v, %d targets", src, err, len(ts))
		}
	}
}

// TestParseQuotesNoSecret: a PARSE error quotes an invalid literal only
// when it is short and not shaped like a secret; else it gives its length.
func TestParseQuotesNoSecret(t *testing.T) {
	for lit, want := range map[string]string{
		"sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD": "an invalid literal of 48 bytes",
		"ghp_16C7e42F292c6912E7710c838347Ae178B4a":         "invalid literal: ghp", // the parser stops at _
		"root": "invalid literal: root",
	} {
		src := `{"mcpServers":{"a":{"command":"npx","env":{"K":` + lit + `}}}}`
		for _, tolerant := range []bool{true, false} {
			var err error
			if tolerant {
				_, _, _, err = readLint(t, "claude_desktop_config.json", src)
			} else {
				_, err = parseJSON("c.json", []byte(src))
			}
			if err == nil || !strings.Contains(err.Error(), want) || len(lit) > 16 && strings.Contains(err.Error(), lit[:10]) {
				t.Errorf("%s (tolerant %v): %v, want %q", lit, tolerant, err, want)
			}
		}
	}
}
