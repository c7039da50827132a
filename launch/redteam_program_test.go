//go:build linux

package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRedteamPinSparseFile: the writer replaces a pinned program with a
// sparse file of 16 GiB (no disk used): the launcher hashes every byte
// before it refuses, and the client waits (a terabyte: hours). The pin
// could carry the size, or the read stop at the first byte past it.
func TestRedteamPinSparseFile(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "bin", "victim")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(16 << 30); err != nil {
		t.Skip(err)
	}
	f.Close()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- CheckPrograms(nil, []string{p + "=sha256:" + strings.Repeat("0", 64)}, root, t.TempDir())
	}()
	select {
	case err := <-done:
		if time.Since(start) > 2*time.Second {
			t.Errorf("refused after %v: %v", time.Since(start), err)
		}
	case <-time.After(2 * time.Second):
		t.Errorf("CheckPrograms still reading a 16 GiB sparse file after 2 s: the launch hangs on what the writer planted")
	}
}
