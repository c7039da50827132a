package entry

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
)

// TestDocsSayWhatWriteKeeps holds docs/clients.md ("How --write writes")
// to what Save and Merge do: the figures, where backups go, and which
// clients are read as strict JSON and which as JSONC.
func TestDocsSayWhatWriteKeeps(t *testing.T) {
	b, err := os.ReadFile("../../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	section := doc[strings.Index(doc, "## How `--write` writes"):strings.Index(doc, "## Environment grants")]
	for _, want := range []string{
		fmt.Sprintf("up to %d times", Retries),
		fmt.Sprintf("the %d newest generations", Backups),
		"`$XDG_STATE_HOME/mcpolicy/backups/HASH/TIMESTAMP`",
		"`0600` in `0700` folders",
		"stays a link", "hard links is refused", "read-only file",
		"old one's mode", "owner and group",
		"left untouched: exit 2, nothing written, no backup",
		"byte-order mark", "CRLF stays CRLF",
		"keeps every other key the user added",
		"read lease", "extended attributes", "every link stays",
		"refuses (exit 2) one that lies in a grant of any server",
		"loads as the client reads it",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("docs/clients.md, How --write writes: no %q", want)
		}
	}
	strict := section[strings.Index(section, "strict JSON for "):strings.Index(section, "; TOML for Codex")]
	for _, c := range clientcfg.Clients {
		if c.Key == "" {
			continue
		}
		name := map[string]string{"claude-desktop": "Claude Desktop", "claude-code": "Claude Code", "cursor": "Cursor",
			"windsurf": "Windsurf", "gemini": "Gemini CLI", "cline": "Cline", "vscode": "VS Code", "zed": "Zed"}[c.Name]
		i, j := strings.Index(strict, name), strings.Index(strict, "JSON with comments")
		if i < 0 || (i > j) != c.JSONC {
			t.Errorf("docs/clients.md reads %s (JSONC=%v) otherwise", name, c.JSONC)
		}
	}
}
