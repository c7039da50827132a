package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const importToken = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"

// importHome lays out a home folder with a Claude Desktop config holding a
// docker entry (a read-only mount and an inline token) and a remote server.
func importHome(t *testing.T) (home, cfg string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	os.MkdirAll(filepath.Join(home, "data"), 0o755)
	cfg = filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	writeFile(t, cfg, `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "dock": {"command": "docker", "args": ["run", "-i", "--rm", "-v", "`+home+`/data:/data:ro", "-e", "API_TOKEN=`+importToken+`", "mcp/thing:1"]},
    "remote": {"url": "https://example.com/mcp"}
  }
}
`)
	return home, cfg
}

// nextWrite is the `client ... --write` command import printed, as args.
func nextWrite(t *testing.T, out string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "mcpolicy client ") && strings.HasSuffix(line, " --write") {
			return strings.Fields(strings.TrimPrefix(line, "mcpolicy "))
		}
	}
	t.Fatalf("no `mcpolicy client ... --write` in:\n%s", out)
	return nil
}

// TestImportThenClientWrite: the two commands of the issue. import writes
// the policy and builds it, moves the inline token to the env file (mode
// 600, never into the policy), skips the remote server and prints the
// command that writes the entry; that command replaces the entry with one
// that starts the policy through mcpolicy-launch, and leaves the rest of
// the file as it was.
func TestImportThenClientWrite(t *testing.T) {
	home, cfg := importHome(t)
	fakeLauncher(t)
	code, out, errs := run(t, "import", "--client", cfg)
	if code != ExitOK {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	dir := filepath.Join(home, ".config", "mcpolicy", "servers")
	pol, err := os.ReadFile(filepath.Join(dir, "mcpolicy.d", "dock.cue"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pol), importToken) || strings.Contains(out+errs, importToken) {
		t.Fatalf("the token is in the policy or the output:\n%s\n%s%s", pol, out, errs)
	}
	for _, want := range []string{`image: "mcp/thing:1"`, `{source: "~/data", target: "/data"}`, `"API_TOKEN",`} {
		if !strings.Contains(string(pol), want) {
			t.Errorf("policy lacks %s:\n%s", want, pol)
		}
	}
	env := filepath.Join(home, ".config", "mcpolicy", "env")
	b, err := os.ReadFile(env)
	if fi, _ := os.Stat(env); err != nil || fi.Mode().Perm() != 0o600 || !strings.Contains(string(b), "API_TOKEN="+importToken+"\n") {
		t.Fatalf("env file: %q %v", b, err)
	}
	for _, want := range []string{"remote: skipped: a remote server", "1. ro mount ~/data -> /data", "built " + filepath.Join(dir, ".mcpolicy")} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	before, _ := os.ReadFile(cfg)
	if code, o, e := run(t, nextWrite(t, out)...); code != ExitOK {
		t.Fatalf("client --write: exit %d\n%s%s", code, o, e)
	}
	after, _ := os.ReadFile(cfg)
	s := string(after)
	if !strings.Contains(s, "mcpolicy-launch") || !strings.Contains(s, `"globalShortcut": "Ctrl+Space"`) ||
		!strings.Contains(s, `"remote": {"url": "https://example.com/mcp"}`) || strings.Contains(s, importToken) {
		t.Errorf("client file after --write:\n%s\nbefore:\n%s", after, before)
	}

	// Again: the same policies, nothing replaced.
	if code, out, errs := run(t, "import", "--client", cfg); code != ExitOK || !strings.Contains(out, "dock: skipped: already confined") {
		t.Errorf("import of the confined entry: exit %d\n%s%s", code, out, errs)
	}
}

// TestImportKeepsWhatIsThere: a policy edited since import wrote it is not
// replaced (exit 1) unless forced, and then its bytes are kept in the
// backups, outside the project; --dry-run writes nothing at all.
func TestImportKeepsWhatIsThere(t *testing.T) {
	home, cfg := importHome(t)
	dir := filepath.Join(t.TempDir(), "p")
	if code, out, errs := run(t, "import", "--client", cfg, "--out", dir, "--dry-run"); code != ExitOK || !strings.Contains(out, `servers: "dock"`) {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("--dry-run wrote %s", dir)
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "mcpolicy", "env")); !os.IsNotExist(err) {
		t.Fatal("--dry-run wrote the env file")
	}
	if code, out, errs := run(t, "import", "--client", cfg, "--out", dir); code != ExitOK {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	pol := filepath.Join(dir, "mcpolicy.d", "dock.cue")
	edited := "// reviewed\n" + string(must(os.ReadFile(pol)))
	writeFile(t, pol, edited)
	if code, out, errs := run(t, "import", "--client", cfg, "--out", dir); code != ExitError || !strings.Contains(errs, "--force") {
		t.Errorf("import over an edited policy: exit %d\n%s%s", code, out, errs)
	}
	unchanged(t, pol, edited)
	code, out, errs := run(t, "import", "--client", cfg, "--out", dir, "--force")
	if code != ExitOK || !strings.Contains(out, "replaced") {
		t.Fatalf("--force: exit %d\n%s%s", code, out, errs)
	}
	backups, _ := filepath.Glob(filepath.Join(home, ".local", "state", "mcpolicy", "backups", "import", "*-dock.cue"))
	if len(backups) != 1 || string(must(os.ReadFile(backups[0]))) != edited {
		t.Errorf("backups %v", backups)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
