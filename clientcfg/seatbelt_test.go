package clientcfg

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/seatbelt"
)

// TestSeatbeltWrapperEntries: an entry that runs a seatbelt wrapper (by sh,
// bash, dash, zsh or its shebang, by a relative or an absolute path) is
// mcpolicy's, with no flag, when the wrapper is the one build writes now;
// one built when the environment was cleared from export -p (bash and zsh
// kept the caller's secrets) is flagged at the script's argument, with the
// wrapper's line. A wrapper not built yet, a bwrap wrapper, and a config
// that is not this machine's are not judged; one that cannot be read is.
func TestSeatbeltWrapperEntries(t *testing.T) {
	root := compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}
	p := &compiler.Plan{
		Server: "s", Command: []string{"/w/server"}, Workdir: "/w", Hash: "sha256:00",
		Network: compiler.Network{Mode: "allowlist", ProxyPort: 24567},
		Runtime: compiler.Runtime{Name: "static"},
		Mounts:  []compiler.Mount{{Source: root, Target: "/w", Mode: compiler.ReadOnly}},
		Env:     []compiler.EnvGrant{{Name: "TOKEN"}},
	}
	files, err := seatbelt.Seatbelt.Artefacts(p, ".mcpolicy")
	if err != nil {
		t.Fatal(err)
	}
	var built []byte
	for _, f := range files {
		if strings.HasSuffix(f.Name, ".sh") {
			built = f.Data
		}
	}
	old := string(built[:strings.Index(string(built), "exec "+seatbelt.Env)]) +
		"for name in $(export -p | sed -n 's/^export \\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p'); do\n" +
		"  case \"$name\" in PATH|HOME|TOKEN) ;; *) unset \"$name\" ;; esac\n" +
		"done\n" +
		"exec /usr/bin/sandbox-exec -f \"$here/s.sb\" -- /usr/local/bin/server\n"
	oldLine := strings.Count(old, "\n")

	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	sb := filepath.Join(proj, ".mcpolicy", "seatbelt")
	os.MkdirAll(sb, 0o755)
	os.MkdirAll(filepath.Join(proj, ".mcpolicy", "bwrap"), 0o755)
	os.WriteFile(filepath.Join(sb, "new.sh"), built, 0o755)
	os.WriteFile(filepath.Join(sb, "old.sh"), []byte(old), 0o755)
	os.WriteFile(filepath.Join(proj, ".mcpolicy", "bwrap", "old.sh"), []byte(old), 0o755)
	if err := syscall.Mkfifo(filepath.Join(sb, "fifo.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	abs := func(name string) string { return filepath.Join(sb, name) }
	config := `{"mcpServers": {
  "new-sh": {"command": "/bin/sh", "args": [".mcpolicy/seatbelt/new.sh"]},
  "new-bash": {"command": "bash", "args": ["` + abs("new.sh") + `"]},
  "new-zsh": {"command": "/bin/zsh", "args": ["${workspaceFolder}/.mcpolicy/seatbelt/new.sh"]},
  "new-direct": {"command": "` + abs("new.sh") + `"},
  "old-sh": {"command": "sh", "args": [".mcpolicy/seatbelt/old.sh"]},
  "old-bash": {"command": "/bin/bash", "args": ["` + abs("old.sh") + `"]},
  "old-dash": {"command": "dash", "args": ["` + abs("old.sh") + `"]},
  "old-zsh": {"command": "zsh", "args": ["${workspaceFolder}/.mcpolicy/seatbelt/old.sh"]},
  "old-direct": {"command": "` + abs("old.sh") + `"},
  "not-built": {"command": "/bin/sh", "args": [".mcpolicy/seatbelt/none.sh"]},
  "bwrap": {"command": "/bin/sh", "args": [".mcpolicy/bwrap/old.sh"]},
  "fifo": {"command": "/bin/sh", "args": [".mcpolicy/seatbelt/fifo.sh"]}
}}
`
	file := filepath.Join(proj, ".mcp.json")
	os.WriteFile(file, []byte(config), 0o644)
	ts, err := ReadFor(file, Options{Home: filepath.Join(dir, "home"), Project: proj})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*readback.Target{}
	for _, tg := range ts {
		got[tg.Server] = tg
	}
	for name, tg := range got {
		msgs := of(tg, readback.FlagSeatbeltWrapper)
		switch {
		case tg.Launcher != "mcpolicy":
			t.Errorf("%s: launcher %q, want mcpolicy (flags %q)", name, tg.Launcher, flags(tg))
		case strings.HasPrefix(name, "old-"):
			if len(msgs) != 1 || !strings.Contains(msgs[0], "old.sh:"+strconv.Itoa(oldLine)+": starts /usr/bin/sandbox-exec directly, not through /usr/bin/env -i") {
				t.Errorf("%s: %q", name, flags(tg))
			}
		case name == "fifo":
			if len(msgs) != 1 || !strings.Contains(msgs[0], "cannot read the wrapper") {
				t.Errorf("%s: %q", name, flags(tg))
			}
		case len(tg.Flags) != 0:
			t.Errorf("%s: flags %q, want none", name, flags(tg))
		}
	}
	if len(got) != 12 {
		t.Errorf("%d entries read, want 12", len(got))
	}
	// The flag stands at the script's argument (the command, run directly).
	if f := got["old-sh"].Flags; len(f) != 1 || f[0].Pos.Line != 6 || f[0].Pos.Col != 40 {
		t.Errorf("old-sh flagged at %+v", f)
	}

	// The same config, judged as written for another machine: nothing it
	// names is read.
	elsewhere := filepath.Join(dir, "claude_desktop_config.json")
	os.WriteFile(elsewhere, []byte(strings.ReplaceAll(config, `".mcpolicy/`, `"`+proj+`/.mcpolicy/`)), 0o644)
	ts, err = ReadFor(elsewhere, Options{Home: filepath.Join(dir, "home")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range ts {
		if tg.Launcher != "mcpolicy" || slices.ContainsFunc(tg.Flags, func(f readback.Flag) bool { return f.Kind == readback.FlagSeatbeltWrapper }) {
			t.Errorf("%s, not this machine's: launcher %q flags %q", tg.Server, tg.Launcher, flags(tg))
		}
	}
}
