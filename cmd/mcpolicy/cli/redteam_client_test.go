package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedteamClientRelativeFileInGrant: `--file` named relative to the
// working folder escapes the check that keeps the client file outside
// every read-write grant (the path is compared with the grants' absolute
// folders as given, and a relative one lies "in" none of them): the entry
// is written into a folder the server may write, and the server decides
// how it starts next. The same file named absolutely is refused (exit 2).
func TestRedteamClientRelativeFileInGrant(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	fakeLauncher(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: "b": {
	image: "b:1"
	backends: ["docker"]
	mounts: [{source: "work", target: "/work", mode: "rw"}]
}
`)
	os.MkdirAll(filepath.Join(dir, "work"), 0o755)
	if code, out, errs := run(t, "build", dir); code != 0 {
		t.Fatalf("build: %d %s%s", code, out, errs)
	}
	cfg := filepath.Join(dir, "work", "mcp.json")
	writeFile(t, cfg, "{}\n")
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--file", filepath.Join("work", "mcp.json"), "--write")
	unchanged(t, cfg, "{}\n")
	if code != ExitInvalid || !strings.Contains(errs, `server "b" can write`) {
		t.Errorf("client into a server's grant by a relative --file: exit %d\n%s%s", code, out, errs)
	}
}
