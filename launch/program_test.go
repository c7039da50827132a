//go:build linux

package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	pin := []string{ProgramPin(prog, d)}
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
