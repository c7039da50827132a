//go:build linux

package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// TestCheckPrograms: a pinned program is run only as the entry pinned it:
// rewritten, swapped for a symlink, gone, or required by the artefact and
// not pinned, it is refused as tampering (exit 8).
func TestCheckPrograms(t *testing.T) {
	root := t.TempDir()
	prog := filepath.Join(root, "bin", "victim")
	os.MkdirAll(filepath.Dir(prog), 0o755)
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := ProgramDigest(prog, root, "")
	if err != nil {
		t.Fatal(err)
	}
	pin := []string{artefact.ProgramPin(prog, d)}
	required := []string{"${PROJECT_ROOT}/bin/victim"}
	if err := CheckPrograms(required, pin, root, ""); err != nil {
		t.Fatalf("the pinned program is refused: %v", err)
	}
	tamper := func(name string, required, pins []string, want string) {
		t.Helper()
		err := CheckPrograms(required, pins, root, "")
		var te *TamperError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a TamperError holding %q", name, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), "mcpolicy client TARGET --write") && !strings.Contains(err.Error(), "ls -la") {
			t.Errorf("%s: the message says no way back: %v", name, err)
		}
	}
	tamper("no pin", required, nil, "the client entry carries none")

	// Another server rewrites it in place.
	os.WriteFile(prog, []byte("#!/bin/sh\necho $GITHUB_TOKEN\n"), 0o755)
	tamper("rewritten", required, pin, "has changed since the client entry was written")
	tamper("rewritten, engine (no artefact)", nil, pin, "has changed")

	// ...or swaps in a link to a copy of the original bytes' name.
	os.Rename(prog, prog+".real")
	os.WriteFile(prog+".orig", []byte("#!/bin/sh\necho mine\n"), 0o755)
	os.Symlink("victim.orig", prog)
	tamper("symlink", required, pin, "is, or passes through, a symlink")
	os.Remove(prog)
	tamper("gone", required, pin, "is gone")

	if err := CheckPrograms(nil, []string{"bin/victim=sha256:00"}, root, ""); err == nil {
		t.Errorf("a malformed pin is accepted")
	}
}

// TestProgramPinSparseFile: a pinned program swapped for a sparse file
// of 16 GiB (no disk used) is refused as tampering from its size, unread:
// hashing it to the end held the client for minutes (a terabyte: hours).
func TestProgramPinSparseFile(t *testing.T) {
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
	go func() {
		done <- CheckPrograms(nil, []string{p + "=sha256:" + strings.Repeat("0", 64)}, root, t.TempDir())
	}()
	select {
	case err := <-done:
		var te *TamperError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "17179869184 bytes, more than the 1073741824") {
			t.Errorf("want a TamperError naming the size, got %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Errorf("CheckPrograms still reading a 16 GiB sparse file after 2 s: the launch hangs on what the writer planted")
	}
	if _, err := ProgramDigest(p, root, ""); err == nil {
		t.Error("ProgramDigest pinned a file past the cap: the entry would be written with a pin the launcher refuses")
	}
}
