package launchlog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestPathAndStateDir(t *testing.T) {
	if got := StateDir(env(map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"})); got != "/x/mcpolicy" {
		t.Errorf("StateDir = %s", got)
	}
	if got := StateDir(env(map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"})); got != "/h/.local/state/mcpolicy" {
		t.Errorf("StateDir = %s", got)
	}
	if got := StateDir(env(nil)); got != "" {
		t.Errorf("StateDir = %s", got)
	}
	if got := Path("/s", "/p/my proj", "../srv"); got != "/s/logs/my_proj-_srv.log" {
		t.Errorf("Path = %s", got)
	}
	if got := Path("/s", "", "srv"); got != "/s/logs/exec-srv.log" {
		t.Errorf("Path = %s", got)
	}
}

func TestAppendModesAndRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	p := filepath.Join(dir, "p-s.log")
	code := 3
	if err := Append(p, &Record{Server: "s", Backend: "bwrap", Exit: &code, Stderr: []string{"boom"}}); err != nil {
		t.Fatal(err)
	}
	if err := Append(p, &Record{Server: "s", Backend: "landlock", Refused: "no", Fix: "yes"}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, p: 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", path, fi.Mode().Perm(), want, err)
		}
	}
	recs, err := Read(p)
	if err != nil || len(recs) != 2 || *recs[0].Exit != 3 || recs[1].Refused != "no" {
		t.Fatalf("Read = %+v, %v", recs, err)
	}
	last, _ := Last(p, "bwrap", time.Time{})
	if last == nil || last.Backend != "bwrap" || !last.Failed() {
		t.Errorf("Last(bwrap) = %+v", last)
	}
	if last, _ := Last(p, "", time.Now().Add(time.Hour)); last != nil {
		t.Errorf("Last(since the future) = %+v", last)
	}
	if last, err := Last(filepath.Join(dir, "none.log"), "", time.Time{}); last != nil || err != nil {
		t.Errorf("Last(missing) = %+v, %v", last, err)
	}
}

// A symlink, as the log or as its folder, is never written through.
func TestAppendRefusesSymlinks(t *testing.T) {
	tmp := t.TempDir()
	target := filepath.Join(tmp, "victim")
	os.WriteFile(target, []byte("keep\n"), 0o644)
	logs := filepath.Join(tmp, "logs")
	os.Mkdir(logs, 0o700)
	os.Symlink(target, filepath.Join(logs, "p-s.log"))
	if err := Append(filepath.Join(logs, "p-s.log"), &Record{Server: "s"}); err == nil {
		t.Error("a symlinked log was written")
	}
	other := filepath.Join(tmp, "elsewhere")
	os.Mkdir(other, 0o700)
	os.Symlink(other, filepath.Join(tmp, "linkdir"))
	if err := Append(filepath.Join(tmp, "linkdir", "p-s.log"), &Record{Server: "s"}); err == nil {
		t.Error("a log below a symlinked folder was written")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("the symlink's target changed: %q", b)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Errorf("written through the folder's symlink: %v", entries)
	}
}

// The log stays under Limit, keeping its newest whole records.
func TestAppendBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "logs", "p-s.log")
	line := strings.Repeat("x", 900)
	for i := 0; i < 1000; i++ {
		if err := Append(p, &Record{Server: "s", Note: fmt.Sprintf("%04d %s", i, line)}); err != nil {
			t.Fatal(err)
		}
	}
	fi, _ := os.Stat(p)
	if fi.Size() > Limit {
		t.Errorf("log of %d bytes, limit %d", fi.Size(), Limit)
	}
	recs, err := Read(p)
	if err != nil || len(recs) < 50 {
		t.Fatalf("%d records kept, %v", len(recs), err)
	}
	if !strings.HasPrefix(recs[len(recs)-1].Note, "0999 ") {
		t.Errorf("the newest record is not last: %.10s", recs[len(recs)-1].Note)
	}
	b, _ := os.ReadFile(p)
	if n := bytes.Count(b, []byte("\n")); n != len(recs) {
		t.Errorf("%d lines but %d records: a cut line was kept", n, len(recs))
	}
}

// Two launchers of the same server write at once: every record is whole
// and none is lost (below the limit).
func TestAppendConcurrent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "logs", "p-s.log")
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if err := Append(p, &Record{Server: "s", Note: fmt.Sprintf("w%d-%d %s", w, i, strings.Repeat("y", 500))}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	recs, err := Read(p)
	if err != nil || len(recs) != 200 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
}

func TestRedact(t *testing.T) {
	secrets := Secrets([]string{"TOKEN=s3cr3t-value", "PORT=80", "OTHER=notgranted"}, []string{"TOKEN", "PORT"})
	if len(secrets) != 1 || secrets[0] != "s3cr3t-value" {
		t.Fatalf("Secrets = %q", secrets)
	}
	got := Redact("ok line\nauth with s3cr3t-value failed\nport 80", secrets)
	if got != "ok line\n"+Withheld+"\nport 80" {
		t.Errorf("Redact = %q", got)
	}
}

// A launch's record holds no granted value, in the refusal, the fix or
// stderr; and a log folder inside a grant is not written (said once).
func TestLaunchRecord(t *testing.T) {
	state := t.TempDir()
	var warn bytes.Buffer
	l := New("mcpolicy-launch", env(map[string]string{"XDG_STATE_HOME": state}), &warn)
	l.Set("/p/proj", "srv", "bwrap", "sha256:ab")
	l.Secrets([]string{"API_KEY=hunter2-hunter2"}, []string{"API_KEY"})
	fmt.Fprintf(&l.Stderr, "starting\nkey hunter2-hunter2 rejected\n")
	l.Ended(1, "")
	l.Ended(2, "") // once
	recs, err := Read(Path(filepath.Join(state, "mcpolicy"), "/p/proj", "srv"))
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	r := recs[0]
	if *r.Exit != 1 || r.Plan != "sha256:ab" || r.Entry != "mcpolicy-launch" || len(r.Stderr) != 2 || r.Stderr[1] != Withheld {
		t.Errorf("record = %+v", r)
	}
	b, _ := os.ReadFile(Path(filepath.Join(state, "mcpolicy"), "/p/proj", "srv"))
	if bytes.Contains(b, []byte("hunter2")) {
		t.Errorf("a granted value reached the log: %s", b)
	}

	l = New("run", env(map[string]string{"XDG_STATE_HOME": state}), &warn)
	l.Set("/p/proj", "srv2", "bwrap", "")
	l.Writable([]string{state})
	l.Refused("refused", "fix")
	if _, err := os.Stat(Path(filepath.Join(state, "mcpolicy"), "/p/proj", "srv2")); err == nil {
		t.Error("a log inside a read-write grant was written")
	}
	if !strings.Contains(warn.String(), "not logged") {
		t.Errorf("nothing said: %q", warn.String())
	}
}

func TestTailBounds(t *testing.T) {
	var tl Tail
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&tl, "line %d\n", i)
	}
	lines := tl.Lines()
	if len(lines) != TailLines || lines[len(lines)-1] != "line 999" {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	tl = Tail{}
	tl.Write(bytes.Repeat([]byte("z"), 100<<10)) // one endless line
	tl.Write([]byte("\nend"))
	lines = tl.Lines()
	size := 0
	for _, l := range lines {
		size += len(l) + 1
	}
	if size > TailBytes+1 || lines[len(lines)-1] != "end" {
		t.Errorf("%d bytes kept, last %q", size, lines[len(lines)-1])
	}
}

func TestTee(t *testing.T) {
	var out bytes.Buffer
	var tl Tail
	tee, err := NewTee(&out, &tl)
	if err != nil {
		t.Fatal(err)
	}
	tee.W.Write([]byte("a\x1b[2Jb\nc"))
	tee.Finish()
	if out.String() != "a\x1b[2Jb\nc" {
		t.Errorf("passed on %q: not byte for byte", out.String())
	}
	if got := tl.Lines(); len(got) != 2 || got[1] != "c" {
		t.Errorf("kept %q", got)
	}
}
