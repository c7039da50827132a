package project

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPolicyReadBounded: a policy that is not a regular file of a
// reviewable size is refused, in bounded time, with the file named — a
// FIFO as mcpolicy.cue held vet, build, lint and explain forever, a link
// to /dev/zero was read until memory ran out, a 1 GiB file was read
// whole, a self-linked mcpolicy.yaml was "no policy found".
func TestPolicyReadBounded(t *testing.T) {
	fifo := func(p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, file string // the file made, relative to the project
		make       func(p string)
		want       string
	}{
		{"fifo cue", "mcpolicy.cue", fifo, "named pipe"},
		{"fifo json", "mcpolicy.json", fifo, "named pipe"},
		{"fifo in mcpolicy.d", "mcpolicy.d/x.yaml", fifo, "named pipe"},
		{"dev zero", "mcpolicy.json", func(p string) { must(t, os.Symlink("/dev/zero", p)) }, "character device"},
		{"folder", "mcpolicy.cue", func(p string) { must(t, os.Mkdir(p, 0o755)) }, "a folder"},
		{"self link", "mcpolicy.yaml", func(p string) { must(t, os.Symlink("mcpolicy.yaml", p)) }, "too many levels of symbolic links"},
		{"1 GiB", "mcpolicy.yaml", func(p string) {
			f, err := os.Create(p)
			must(t, err)
			must(t, f.Truncate(1<<30)) // sparse: no disk used
			f.Close()
		}, "larger than 4 MiB"},
		{"fifo imported by Jsonnet", "mcpolicy.d/lib/x.libsonnet", func(p string) {
			fifo(p)
			must(t, os.WriteFile(filepath.Join(filepath.Dir(p), "..", "..", "mcpolicy.jsonnet"),
				[]byte(`{version: "v1", servers: import "mcpolicy.d/lib/x.libsonnet"}`), 0o644))
		}, "named pipe"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, c.file)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			c.make(p)
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				proj, err := Discover(dir)
				if err == nil {
					_, err = proj.Load()
				}
				done <- err
			}()
			select {
			case err := <-done:
				t.Logf("refused after %v", time.Since(start))
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(c.file)) {
					t.Fatalf("want an error naming %s and saying %q, got %v", c.file, c.want, err)
				}
			case <-time.After(20 * time.Second): // a reader blocked on the pipe never returns; a loaded machine is slow
				t.Fatal("still reading after 20 s")
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
