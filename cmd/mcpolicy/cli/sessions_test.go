package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/writereport"
)

// TestCheckWriteReport: a session's planted bytecode and .pth fail check
// (exit 5) naming each; sessions lists them flagged; once accepted, check
// passes again.
func TestCheckWriteReport(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: s: {
	image: "s:1"
	mounts: [{source: "data", target: "/data", mode: "rw"}]
}
`)
	data := filepath.Join(dir, "data")
	os.MkdirAll(data, 0o755)
	if code, out, errs := run(t, "check", "-p", dir); code != ExitOK || !strings.Contains(out, "no client config found to check") || !strings.Contains(errs, "write report: 0 sessions recorded for this project in "+writereport.Dir(writereport.StateDir(os.Getenv), dir)) {
		t.Fatalf("check before any session: exit %d\n%s%s", code, out, errs)
	}
	if _, err := writereport.Record(writereport.StateDir(os.Getenv), &writereport.Session{Project: dir, Server: "s", Backend: "bwrap", Writable: []string{data}}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(data, "pkg", "__pycache__", "x.cpython-311.pyc"), "x")
	writeFile(t, filepath.Join(data, "evil\x1b[2J.pth"), "import os")
	code, out, errs := run(t, "check", "-p", dir)
	if code != ExitFindings || !strings.Contains(out, "x.cpython-311.pyc") || !strings.Contains(out, `evil\x1b[2J.pth`) || !strings.Contains(out, "server s") {
		t.Fatalf("check after the session: exit %d, want %d\n%s%s", code, ExitFindings, out, errs)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("a name reached the terminal raw:\n%q", out)
	}
	code, out, _ = run(t, "sessions", "-p", dir, "--details")
	if code != ExitOK || !strings.Contains(out, "flagged 3") || !strings.Contains(out, "[pth]") || !strings.Contains(out, "[bytecode]") {
		t.Fatalf("sessions: exit %d\n%s", code, out)
	}
	if code, out, errs := run(t, "sessions", "-p", dir, "--accept", "all"); code != ExitOK {
		t.Fatalf("accept: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "check", "-p", dir); code != ExitOK || !strings.Contains(errs, "write report: 1 session recorded") {
		t.Fatalf("check after the session was accepted: exit %d\n%s%s", code, out, errs)
	}
	// Records others may write are evidence of nothing: refused.
	state := writereport.StateDir(os.Getenv)
	os.Chmod(state, 0o777)
	defer os.Chmod(state, 0o700)
	for _, c := range []string{"check", "sessions"} {
		if code, out, errs := run(t, c, "-p", dir); code != ExitError || !strings.Contains(errs, "writable by its group or others") {
			t.Errorf("%s with a world-writable state folder: exit %d\n%s%s", c, code, out, errs)
		}
	}
}
