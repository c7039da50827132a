package writereport

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, mode)
}

// session records a session of a project whose grant is data/, with an
// old file there, and returns the project, the state folder and the
// record.
func session(t *testing.T) (root, state, rec string) {
	t.Helper()
	base := t.TempDir()
	root, state = filepath.Join(base, "proj"), filepath.Join(base, "state")
	write(t, filepath.Join(root, "data", "old.py"), "old\n", 0o644)
	write(t, filepath.Join(root, "data", "oldpkg", "__init__.py"), "", 0o644)
	time.Sleep(2 * Slack) // old is older than the session's window
	rec, err := Record(state, &Session{Project: root, Server: "s", Backend: "landlock", Writable: []string{filepath.Join(root, "data")}})
	if err != nil {
		t.Fatal(err)
	}
	return root, state, rec
}

func flagsOf(rs []*Report) map[string][]string {
	out := map[string][]string{}
	for _, e := range rs[0].Pending() {
		out[filepath.Base(e.Path)] = e.Flags
	}
	return out
}

// TestReportFlags: what the server planted is listed with its kind;
// what was there before, and what it did not flag, is not pending.
func TestReportFlags(t *testing.T) {
	root, state, _ := session(t)
	d := filepath.Join(root, "data")
	write(t, filepath.Join(d, "oldpkg", "__pycache__", "x.cpython-311.pyc"), "bytecode", 0o644)
	write(t, filepath.Join(d, "evil.pth"), "import os\n", 0o644)
	write(t, filepath.Join(d, "run.sh"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(d, "notes.txt"), "fine\n", 0o644)
	write(t, filepath.Join(d, "sub", "Makefile"), "all:\n", 0o644)
	write(t, filepath.Join(d, "lib.so.1"), "", 0o644)
	os.Symlink("/etc/passwd", filepath.Join(d, "link"))
	rs, err := Reports(Options{State: state, Project: root})
	if err != nil || len(rs) != 1 {
		t.Fatalf("Reports: %v, %d", err, len(rs))
	}
	want := map[string][]string{
		"__pycache__": {FlagBytecode}, "x.cpython-311.pyc": {FlagBytecode}, "evil.pth": {FlagPth},
		"run.sh": {FlagExec}, "Makefile": {FlagBuild}, "lib.so.1": {FlagShared}, "link": {FlagSymlink},
	}
	if got := flagsOf(rs); !reflect.DeepEqual(got, want) {
		t.Errorf("pending:\n got %v\nwant %v", got, want)
	}
	for _, e := range rs[0].Entries {
		switch filepath.Base(e.Path) {
		case "old.py", "__init__.py":
			t.Errorf("%s predates the session, yet is listed", e.Path)
		case "link":
			if e.Target != "/etc/passwd" {
				t.Errorf("link target %q", e.Target)
			}
		}
	}
	// Removed since: no longer counts.
	os.Remove(filepath.Join(d, "evil.pth"))
	rs, _ = Reports(Options{State: state, Project: root})
	if _, ok := flagsOf(rs)["evil.pth"]; ok {
		t.Errorf("a removed .pth still pending")
	}
}

// TestTracked: a file git's index tracks is left to git status; the
// same name untracked is listed.
func TestTracked(t *testing.T) {
	root, state, _ := session(t)
	write(t, filepath.Join(root, "data", "tool.sh"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(root, "data", "other.sh"), "#!/bin/sh\n", 0o755)
	index := indexOf("data/tool.sh")
	write(t, filepath.Join(root, ".git", "index"), string(index), 0o644)
	rs, err := Reports(Options{State: state, Project: root})
	if err != nil {
		t.Fatal(err)
	}
	got := flagsOf(rs)
	if _, ok := got["tool.sh"]; ok {
		t.Errorf("a tracked file is listed: %v", got)
	}
	if _, ok := got["other.sh"]; !ok {
		t.Errorf("an untracked script is not listed: %v", got)
	}
}

// TestAccept: an accepted session no longer has pending entries; what
// changes after, while it may still run, has.
func TestAccept(t *testing.T) {
	root, state, _ := session(t)
	write(t, filepath.Join(root, "data", "a.pth"), "", 0o644)
	if _, err := Accept(state, root, "nope"); err == nil {
		t.Error("accepting an unknown session: no error")
	}
	if _, err := Accept(state, root, "all"); err != nil {
		t.Fatal(err)
	}
	rs, _ := Reports(Options{State: state, Project: root})
	if n := len(rs[0].Pending()); n != 0 {
		t.Errorf("accepted, yet %d pending", n)
	}
	time.Sleep(10 * time.Millisecond)
	write(t, filepath.Join(root, "data", "b.pth"), "", 0o644)
	rs, _ = Reports(Options{State: state, Project: root})
	if _, ok := flagsOf(rs)["b.pth"]; !ok {
		t.Errorf("written after the acceptance, in a session still running: not pending")
	}
}

// TestEndBounds: a session that ended does not own what is written after.
func TestEndBounds(t *testing.T) {
	root, state, rec := session(t)
	write(t, filepath.Join(root, "data", "in.pth"), "", 0o644)
	if err := MarkEnd(rec, time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * Slack)
	write(t, filepath.Join(root, "data", "after.pth"), "", 0o644)
	rs, _ := Reports(Options{State: state, Project: root})
	got := flagsOf(rs)
	if _, ok := got["in.pth"]; !ok {
		t.Errorf("written in the session: not pending: %v", got)
	}
	if _, ok := got["after.pth"]; ok {
		t.Errorf("written after the session's end: pending: %v", got)
	}
}

// TestStateInsideGrant: the evidence may not lie where the server writes.
func TestStateInsideGrant(t *testing.T) {
	base := t.TempDir()
	_, err := Record(filepath.Join(base, "g", ".local", "state", "mcpolicy"), &Session{Project: base, Writable: []string{filepath.Join(base, "g")}})
	var ie *InsideError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "XDG_STATE_HOME") {
		t.Fatalf("Record inside a grant: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "g")); err == nil {
		t.Error("a refused record still created folders in the grant")
	}
}

// TestRecordMode: folders 700, the record 600.
func TestRecordMode(t *testing.T) {
	rec, err := Record(t.TempDir()+"/st", &Session{Project: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(rec)
	di, _ := os.Stat(filepath.Dir(rec))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes %v %v", fi.Mode(), di.Mode())
	}
}

// TestLimits: a walk cut short says so.
func TestLimits(t *testing.T) {
	root, state, _ := session(t)
	for i := 0; i < 20; i++ {
		write(t, filepath.Join(root, "data", "f", strings.Repeat("x", i+1)), "", 0o644)
	}
	rs, _ := Reports(Options{State: state, Project: root, Limits: Limits{Entries: 5, Depth: 256, Time: time.Minute}})
	if !rs[0].Blind() {
		t.Errorf("5 entries of 25 walked, yet complete")
	}
}

func BenchmarkRecord(b *testing.B) {
	state := b.TempDir()
	for i := 0; i < b.N; i++ {
		if _, err := Record(state, &Session{Project: "/p", Server: "s", Writable: []string{"/p/data"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// indexOf is a version 2 index tracking names as regular files (SHA-1
// layout).
func indexOf(names ...string) []byte {
	b := []byte("DIRC\x00\x00\x00\x02")
	b = binary.BigEndian.AppendUint32(b, uint32(len(names)))
	for _, n := range names {
		e := make([]byte, 62)
		binary.BigEndian.PutUint32(e[24:], 0o100644)
		binary.BigEndian.PutUint16(e[60:], uint16(len(n)))
		e = append(e, n...)
		e = append(e, make([]byte, 8-(len(e)%8))...)
		b = append(b, e...)
	}
	return append(b, make([]byte, 20)...)
}

// TestMountedByAnother: a plain file the session wrote where another
// server of the project mounts (a config it reads) is flagged, naming
// that server; where only the session's own server mounts, it is not.
func TestMountedByAnother(t *testing.T) {
	root, state, _ := session(t)
	d := filepath.Join(root, "data")
	write(t, filepath.Join(d, "cfg", "command"), "env\n", 0o644)
	write(t, filepath.Join(d, "notes.txt"), "fine\n", 0o644)
	mounted := map[string][]string{filepath.Join(d, "cfg"): {"reader", "s"}, d: {"s"}}
	rs, err := Reports(Options{State: state, Project: root, Mounted: mounted})
	if err != nil || len(rs) != 1 {
		t.Fatalf("Reports: %v, %d", err, len(rs))
	}
	got := flagsOf(rs)
	if !reflect.DeepEqual(got["command"], []string{FlagOtherServer}) || !reflect.DeepEqual(got["cfg"], []string{FlagOtherServer}) {
		t.Errorf("cfg/command, mounted by reader: flags %v", got)
	}
	if _, ok := got["notes.txt"]; ok {
		t.Errorf("notes.txt, mounted by the session's own server only, is flagged: %v", got["notes.txt"])
	}
	for _, e := range rs[0].Entries {
		if filepath.Base(e.Path) == "command" && !strings.Contains(e.Line(), "(mounted by reader)") {
			t.Errorf("line %q does not name the server that mounts it", e.Line())
		}
	}
	if rs, _ := Reports(Options{State: state, Project: root}); len(flagsOf(rs)) != 0 {
		t.Errorf("without the project's mounts, plain files are flagged: %v", flagsOf(rs))
	}
}
