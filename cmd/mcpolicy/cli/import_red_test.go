package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedImportReportForgesNoLine (red team): a hostile client file's
// entry name, argument and env name hold line breaks, a carriage return
// and an escape, to print a line of import's report that import did not
// write (a server "skipped", a grant list cut short) or to drive the
// terminal: every such character shows as an escape, in --dry-run's
// report and in the written run's.
func TestRedImportReportForgesNoLine(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	os.MkdirAll(filepath.Join(home, "docs"), 0o755)
	cfg := filepath.Join(home, ".codex", "config.toml")
	writeFile(t, cfg, `[mcp_servers."a\n  forged: skipped: a remote server\r\u001b[2K"]
command = "/bin/cat"
args = ["`+home+`/docs", "./none\n    FORGED GRANT"]
env = { "X\nFORGED_ENV" = "1" }
`)
	for _, args := range [][]string{{"--dry-run"}, nil} {
		code, out, errs := run(t, append([]string{"import", "--client", cfg, "--out", filepath.Join(home, "p")}, args...)...)
		all := out + errs
		for _, forged := range []string{"\n  forged: skipped", "\n    FORGED GRANT", "\nFORGED_ENV", "\r", "\x1b"} {
			if strings.Contains(all, forged) {
				t.Errorf("import %v (exit %d) printed %q raw:\n%s", args, code, forged, all)
			}
		}
	}
}
