//go:build unix

package egress

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenLogRefusesWhatAServerPlants: a symlink, a hard link or a FIFO
// where the log goes (a folder a server may write) is refused, and the
// file it points to is left alone; a new or existing regular file is
// appended to.
func TestOpenLogRefusesWhatAServerPlants(t *testing.T) {
	dir := t.TempDir()
	rc := filepath.Join(dir, "bashrc")
	os.WriteFile(rc, []byte("export A=1\n"), 0o600)

	sym := filepath.Join(dir, "sym.jsonl")
	os.Symlink(rc, sym)
	if f, err := OpenLog(sym); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("a symlink: %v", err)
		if f != nil {
			f.Close()
		}
	}
	dangling := filepath.Join(dir, "dangling.jsonl")
	os.Symlink(filepath.Join(dir, "new-rc"), dangling)
	if f, err := OpenLog(dangling); err == nil {
		t.Errorf("a dangling symlink: opened")
		f.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, "new-rc")); err == nil {
		t.Errorf("a dangling symlink's target was created")
	}
	hard := filepath.Join(dir, "hard.jsonl")
	if err := os.Link(rc, hard); err == nil {
		if f, err := OpenLog(hard); err == nil || !strings.Contains(err.Error(), "link") {
			t.Errorf("a hard link: %v", err)
			if f != nil {
				f.Close()
			}
		}
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		if f, err := OpenLog(fifo); err == nil {
			t.Errorf("a FIFO: opened")
			f.Close()
		}
	}
	if b, _ := os.ReadFile(rc); string(b) != "export A=1\n" {
		t.Errorf("the file a link named was written: %q", b)
	}

	log := filepath.Join(dir, "decisions.jsonl")
	for i := range 2 {
		f, err := OpenLog(log)
		if err != nil {
			t.Fatalf("a plain log, open %d: %v", i, err)
		}
		f.WriteString("{}\n")
		f.Close()
	}
	if b, _ := os.ReadFile(log); string(b) != "{}\n{}\n" {
		t.Errorf("appended: %q", b)
	}
	if fi, _ := os.Stat(log); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
}

// TestOpenLogDevNull: --log /dev/null discards the decisions (make bench
// runs so); it is the one non-regular file taken.
func TestOpenLogDevNull(t *testing.T) {
	f, err := OpenLog("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if f, err := OpenLog("/dev/zero"); err == nil {
		f.Close()
		t.Error("/dev/zero: opened")
	}
}
