package hostfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadRegular: what a server may leave where mcpolicy check reads a
// pinned artefact or a config (a red team: a FIFO hung check, a link to
// /dev/zero and a sparse 64 GB file ran it out of memory) is refused at
// once; a regular file within the limit is read.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	sparse := filepath.Join(dir, "sparse")
	f, _ := os.Create(sparse)
	f.Truncate(64 << 30)
	f.Close()
	ok := filepath.Join(dir, "ok")
	os.WriteFile(ok, []byte("fine"), 0o600)
	for _, p := range []string{fifo, zero, sparse} {
		done := make(chan error, 1)
		go func() { _, err := ReadRegular(p, MaxArtefact); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: read", filepath.Base(p))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: blocked", filepath.Base(p))
		}
	}
	if b, err := ReadRegular(ok, 4); err != nil || string(b) != "fine" {
		t.Errorf("a regular file at the limit: %q, %v", b, err)
	}
	if _, err := ReadRegular(ok, 3); err == nil {
		t.Errorf("a regular file over the limit: read")
	}
}
