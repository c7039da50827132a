//go:build linux

package bwrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Red-team tests of the by-hand wrapper (#32).

// redteamRun builds the wrapper below root and runs it with PATH, a fake
// launcher that records its argv in dir/argv; it returns that argv.
func redteamRun(t *testing.T, dir, root, path string) []string {
	t.Helper()
	os.Remove(filepath.Join(dir, "argv"))
	wrapper := writeBuilt(t, root, plan())
	cmd := exec.Command("/bin/sh", wrapper)
	cmd.Env = []string{"PATH=" + path, "OUT=" + dir, "HOME=/h"}
	cmd.Dir = root
	cmd.Stdin = strings.NewReader("")
	out, _ := cmd.CombinedOutput()
	b, err := os.ReadFile(filepath.Join(dir, "argv"))
	if err != nil {
		t.Fatalf("no launcher ran: %s", out)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

const redteamFake = "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$OUT/argv\"\n"

// TestRedteamWrapperLauncherFromProject: the client entry names
// mcpolicy-launch (and bwrap) by absolute path; the wrapper takes the
// first on PATH. A developer with the project's venv activated (or
// direnv's PATH_add, node_modules/.bin) has a folder on PATH that a
// server's read-write grant holds: the server plants mcpolicy-launch
// there, and the next run by hand runs it, with the user's own rights.
func TestRedteamWrapperLauncherFromProject(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "proj")
	planted := filepath.Join(root, ".venv", "bin")
	writeScript(t, filepath.Join(planted, "mcpolicy-launch"), redteamFake+"echo planted > \"$OUT/planted\"\n")
	writeScript(t, filepath.Join(dir, "bin", "mcpolicy-launch"), redteamFake)
	redteamRun(t, dir, root, planted+":"+filepath.Join(dir, "bin")+":/usr/bin:/bin")
	if _, err := os.Stat(filepath.Join(dir, "planted")); err == nil {
		t.Errorf("the wrapper ran %s/mcpolicy-launch, a file inside the project a read-write grant can plant, found first on PATH", planted)
	}
}

// TestRedteamWrapperRootTrailingNewline: the root is the output of
// $(pwd -P), and command substitution strips every trailing newline: a
// project folder whose name ends in one is launched with the root of
// its sibling without it (which someone else may have made).
func TestRedteamWrapperRootTrailingNewline(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "proj\n")
	must(t, os.MkdirAll(filepath.Join(dir, "proj"), 0o755)) // the sibling
	writeScript(t, filepath.Join(dir, "bin", "mcpolicy-launch"), redteamFake)
	argv := redteamRun(t, dir, root, filepath.Join(dir, "bin")+":/usr/bin:/bin")
	got := strings.Join(argv, "\n")
	if !strings.Contains(got, "--project-root\n"+root+"\n") {
		t.Errorf("project %q launched with the arguments:\n%s", root, got)
	}
}
