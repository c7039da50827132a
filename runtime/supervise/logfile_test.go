package supervise_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// TestOpenLogOutsideWritableGrants: `mcpolicy run --log` is refused inside
// a folder the server may write (named directly, or through a symlink to
// it), where the server could plant a link to the user's ~/.bashrc or
// forge denials; beside a read-only grant and outside every grant it is
// appended to. The red team's attack: the server leaves egress.jsonl ->
// ~/.bashrc in the project it writes, and the next run appends to it.
func TestOpenLogOutsideWritableGrants(t *testing.T) {
	root := t.TempDir()
	proj, home, ro := filepath.Join(root, "proj"), filepath.Join(root, "home"), filepath.Join(root, "docs")
	for _, d := range []string{proj, home, ro} {
		os.Mkdir(d, 0o755)
	}
	bashrc := filepath.Join(home, ".bashrc")
	os.WriteFile(bashrc, []byte("alias ll='ls -l'\n"), 0o600)
	os.Symlink(bashrc, filepath.Join(proj, "egress.jsonl")) // what the server left
	os.Symlink(proj, filepath.Join(root, "proj-link"))

	p := &compiler.Plan{Server: "s", Mounts: []compiler.Mount{
		{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/workspace", Mode: compiler.ReadWrite},
		{Source: compiler.HostPath{Rel: ro}, Target: "/docs", Mode: compiler.ReadOnly},
	}}
	m := compiler.Machine{ProjectRoot: proj, Home: home}
	for _, bad := range []string{
		filepath.Join(proj, "egress.jsonl"),
		filepath.Join(proj, "sub", "new.jsonl"),
		filepath.Join(root, "proj-link", "egress.jsonl"),
	} {
		if f, err := supervise.OpenLog(bad, p, m); err == nil || !strings.Contains(err.Error(), "which server s may write") {
			t.Errorf("%s: %v", bad, err)
			if f != nil {
				f.Close()
			}
		}
	}
	if b, _ := os.ReadFile(bashrc); string(b) != "alias ll='ls -l'\n" {
		t.Errorf("~/.bashrc was written: %q", b)
	}
	for _, ok := range []string{filepath.Join(root, "decisions.jsonl"), filepath.Join(ro, "decisions.jsonl")} {
		f, err := supervise.OpenLog(ok, p, m)
		if err != nil {
			t.Errorf("%s: %v", ok, err)
			continue
		}
		f.Close()
	}
}

// TestDefaultLog: each server of each project has its own file under
// $XDG_STATE_HOME (a relative value ignored, as the spec says), its name
// never a path: a server's name is the policy author's, not a folder.
func TestDefaultLog(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	dir := filepath.Join(state, "mcpolicy", "egress")
	a, _ := supervise.DefaultLog("github", "/home/u/p1")
	b, _ := supervise.DefaultLog("github", "/home/u/p2")
	if filepath.Dir(a) != dir || !strings.HasPrefix(filepath.Base(a), "github-") || a == b {
		t.Errorf("%s, %s: want two files github-HASH.jsonl in %s", a, b, dir)
	}
	for _, name := range []string{"../../x", "a/b", "..", strings.Repeat("n", 300), "\x00"} {
		p, err := supervise.DefaultLog(name, "/p")
		if err != nil || filepath.Dir(p) != dir || strings.HasPrefix(filepath.Base(p), ".") || len(filepath.Base(p)) > 100 {
			t.Errorf("server %.40q: %q, %v", name, p, err)
		}
	}
	t.Setenv("XDG_STATE_HOME", "relative/state")
	t.Setenv("HOME", "/home/u")
	if p, _ := supervise.DefaultLog("s", "/p"); !strings.HasPrefix(p, "/home/u/.local/state/mcpolicy/egress/s-") {
		t.Errorf("XDG_STATE_HOME relative: %s", p)
	}
}

// TestOpenDefaultLog: the folders are made private; a log holding half
// its limit moves to .1 when the next run starts, unless a run writes it
// still; a log inside a folder any server of the project may write is
// refused (run then falls back to stderr), and so is a symlink where
// mcpolicy's folders go (a red team's server with a grant of
// ~/.local/state sent another server's decisions into its own folder).
func TestOpenDefaultLog(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	t.Setenv("XDG_STATE_HOME", state)
	proj := filepath.Join(root, "proj")
	os.Mkdir(proj, 0o755)
	m := compiler.Machine{ProjectRoot: proj, Home: root}
	f, path, err := supervise.OpenDefaultLog("s", m, []string{proj}, 100)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(strings.Repeat("x", 60) + "\n"))
	for _, d := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v", d, fi.Mode(), err)
		}
	}
	// A run writes it still (f is open): it stays where it is.
	g, _, err := supervise.OpenDefaultLog("s", m, []string{proj}, 100)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if _, err := os.Stat(path + ".1"); err == nil {
		t.Errorf("%s was moved aside while a run wrote it", path)
	}
	f.Close()
	f, _, err = supervise.OpenDefaultLog("s", m, []string{proj}, 100) // holds 61 >= 100/2: moved aside
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if old, err := os.ReadFile(path + ".1"); err != nil || len(old) != 61 {
		t.Errorf("%s.1: %d bytes, %v", path, len(old), err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("%s after moving it aside: %v", path, err)
	}
	f, _, err = supervise.OpenDefaultLog("s", m, []string{proj}, -1) // no limit: never moved
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, _, err := supervise.OpenDefaultLogToRead("s", m, []string{proj})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()

	// Any server of the project may write the state folder.
	if f, _, err := supervise.OpenDefaultLog("s", m, []string{proj, state}, 100); err == nil || !strings.Contains(err.Error(), "which a server of this project may write") {
		t.Errorf("a default log inside a server's read-write grant: %v", err)
		if f != nil {
			f.Close()
		}
	}
	if f, _, err := supervise.OpenDefaultLogToRead("s", m, []string{state}); err == nil {
		t.Errorf("suggest read a default log inside a server's read-write grant")
		f.Close()
	}

	// mcpolicy's folder replaced by a link to one a server reads.
	loot := filepath.Join(root, "loot")
	os.Mkdir(loot, 0o755)
	egressDir := filepath.Dir(path)
	os.RemoveAll(egressDir)
	if err := os.Symlink(loot, egressDir); err != nil {
		t.Fatal(err)
	}
	if f, _, err := supervise.OpenDefaultLog("s", m, []string{proj}, 100); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("through a symlinked folder: %v", err)
		if f != nil {
			f.Close()
		}
	}
	if ents, _ := os.ReadDir(loot); len(ents) > 0 {
		t.Errorf("the log went through the link: %v", ents)
	}
	os.Remove(egressDir)

	// A FIFO where the log goes: refused at once, neither run nor suggest waits.
	os.Mkdir(egressDir, 0o700)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if f, _, err := supervise.OpenDefaultLogToRead("s", m, []string{proj}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO read as the log: %v", err)
		if f != nil {
			f.Close()
		}
	}
	if f, _, err := supervise.OpenDefaultLog("s", m, []string{proj}, 100); err == nil {
		t.Errorf("a FIFO taken as the log")
		f.Close()
	}

	// Open to others: refused.
	os.Remove(path)
	os.Chmod(egressDir, 0o777)
	if f, _, err := supervise.OpenDefaultLog("s", m, []string{proj}, 100); err == nil || !strings.Contains(err.Error(), "not this user's alone") {
		t.Errorf("a folder others may write: %v", err)
		if f != nil {
			f.Close()
		}
	}
}
