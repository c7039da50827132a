package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
)

// TestLintUnusableFileExits1: a run with one good file that has an error
// finding and one file that yields no server (a bare entry, unknown keys,
// an empty file, a YAML file neither Goose's nor a manifest) exits 1, not
// 5, in every output format, and names the unusable file; a valid config
// whose servers section is empty is a note, exit 0. Issue 35, gap 2.
func TestLintUnusableFileExits1(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	writeFile(t, good, `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "x"], "env": {"SLACK_BOT_TOKEN": "xoxb-2847561930-4829105736281-Hq8ZtK3mW7pXv2LsN9bRc4Yd"}}}}`+"\n")
	for name, src := range map[string]string{
		"bare.json":    `{"command": "npx", "args": ["-y", "x"]}`,
		"unknown.json": `{"foo": 1}`,
		"empty.json":   "",
		"compose.yaml": "services:\n  a:\n    image: x\n",
	} {
		bad := filepath.Join(dir, name)
		writeFile(t, bad, src)
		for _, format := range lint.Formats {
			code, out, errs := run(t, "lint", "--no-policy", "--client", good, "--client", bad, "--format", format)
			if code != ExitError {
				t.Errorf("%s, %s: exit %d, want %d\n%s%s", name, format, code, ExitError, out, errs)
			}
			if !strings.Contains(out, "PARSE") || !strings.Contains(out, name) || !strings.Contains(errs, "not linted (see PARSE): "+bad+":1:") {
				t.Errorf("%s, %s: the unusable file is not reported:\n%s%s", name, format, out, errs)
			}
		}
	}
	empty := filepath.Join(dir, "claude_desktop_config.json")
	writeFile(t, empty, `{"mcpServers": {}}`)
	if code, out, errs := run(t, "lint", "--no-policy", "--client", empty); code != 0 || !strings.Contains(out, "PARSE info \"mcpServers\" is empty") {
		t.Errorf("empty section: exit %d\n%s%s", code, out, errs)
	}
}
