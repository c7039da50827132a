package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestClientBackupsOutsideGrants: the backups of client --write are copies
// of client configs, tokens included, and --restore puts back what is
// there: a backups folder ($XDG_STATE_HOME/mcpolicy) that a server of the
// project may read or write is refused (exit 2) by --write and --restore,
// naming the folder, the server and the grant.
func TestClientBackupsOutsideGrants(t *testing.T) {
	for _, mode := range []string{"ro", "rw"} {
		dir, home, state := t.TempDir(), t.TempDir(), t.TempDir()
		t.Setenv("HOME", home)
		t.Setenv("XDG_STATE_HOME", state)
		fakeLauncher(t)
		writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: s: {
	image: "s:1"
	backends: ["docker"]
	mounts: [{source: "`+state+`", target: "/state", mode: "`+mode+`"}]
}
`)
		if code, out, errs := run(t, "build", dir); code != ExitOK {
			t.Fatalf("build: exit %d\n%s%s", code, out, errs)
		}
		cfg := filepath.Join(t.TempDir(), "claude_desktop_config.json")
		writeFile(t, cfg, "{}\n")
		for _, how := range []string{"--write", "--restore"} {
			code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--file", cfg, how)
			want := `the backups folder ` + filepath.Join(state, "mcpolicy") + ` lies inside ` + state + `, which server "s" is given`
			if code != ExitInvalid || !strings.Contains(errs, want) {
				t.Errorf("%s %s: exit %d\n%s%s\nwant %q", mode, how, code, out, errs, want)
			}
			unchanged(t, cfg, "{}\n")
		}
	}
}
