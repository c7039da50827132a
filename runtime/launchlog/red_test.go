package launchlog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedParentSymlink (red team): a server granted $XDG_STATE_HOME
// read-write replaces mcpolicy/ (the folder above logs/) by a symlink to
// a folder of its choosing; the next launch of another server must not
// follow it to create logs/ and write its record there.
func TestRedParentSymlink(t *testing.T) {
	xdg, elsewhere := t.TempDir(), t.TempDir()
	state := filepath.Join(xdg, "mcpolicy")
	if err := os.Symlink(elsewhere, state); err != nil {
		t.Fatal(err)
	}
	err := Append(Path(state, "/p/proj", "s"), &Record{Server: "s", Refused: "r"})
	if err == nil {
		t.Error("Append wrote through a symlinked state folder")
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("the launcher wrote into the folder the link named: %v", ents)
	}
}

// TestRedForgedRecords (red team): stderr lines holding a newline, a
// record's JSON and terminal escapes are kept as the server's words in
// one record: the log reads back one launch, not refused, its lines as
// written.
func TestRedForgedRecords(t *testing.T) {
	path := Path(filepath.Join(t.TempDir(), "mcpolicy"), "/p/proj", "s")
	forged := `{"time":"2026-01-01T00:00:00Z","entry":"run","server":"s","backend":"bwrap","refused":"forged"}`
	exit := 0
	lines := []string{"x\n" + forged, "\x1b]0;title\x07\x1b[2J", "\r" + forged}
	if err := Append(path, &Record{Server: "s", Backend: "bwrap", Exit: &exit, Stderr: lines}); err != nil {
		t.Fatal(err)
	}
	recs, err := Read(path)
	if err != nil || len(recs) != 1 || recs[0].Refused != "" || strings.Join(recs[0].Stderr, "|") != strings.Join(lines, "|") {
		t.Fatalf("read back %+v, %v; want the one record, its lines as written", recs, err)
	}
	b, _ := os.ReadFile(path)
	if bytes.Count(b, []byte("\n")) != 1 || bytes.ContainsAny(b, "\x1b\r") {
		t.Errorf("the log holds raw line breaks or escapes: %q", b)
	}
}

// TestRedTailFlood (red team): a server that floods stderr, in lines and
// in one endless line, leaves a tail within its bounds, and memory held
// by it stays bounded too.
func TestRedTailFlood(t *testing.T) {
	var tl Tail
	chunk := bytes.Repeat([]byte("0123456789abcdef\n"), 2000)
	long := bytes.Repeat([]byte("y"), 32<<10)
	for i := 0; i < 2000; i++ {
		tl.Write(chunk)
		tl.Write(long)
	}
	got := tl.Lines()
	size := 0
	for _, l := range got {
		size += len(l) + 1
	}
	if len(got) > TailLines || size > TailBytes+1 {
		t.Errorf("tail of %d lines, %d bytes; bounds %d, %d", len(got), size, TailLines, TailBytes)
	}
	held := len(tl.partial)
	for _, l := range tl.lines {
		held += len(l)
	}
	if held > 2*TailLines*TailBytes+len(long)+TailBytes {
		t.Errorf("the tail holds %d bytes", held)
	}
}
