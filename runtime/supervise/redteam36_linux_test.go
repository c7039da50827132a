package supervise_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
	"github.com/mcpolicy/mcpolicy/schema"
)

// TestRedteam36PlanFilesReadAsArtefacts: mcpolicy run reads the pinned
// plan and the project's other plans beside it. Something with write
// access there that puts a FIFO (or a link to /dev/zero) in place of a
// plan file must get a refusal, not a run that waits forever (or reads
// until memory runs out) before the server starts.
func TestRedteam36PlanFilesReadAsArtefacts(t *testing.T) {
	root := t.TempDir()
	pol, err := schema.LoadBytes(filepath.Join(root, "mcpolicy.cue"), []byte(`version: "v1"
servers: a: {
	command: ["/bin/true"]
	backends: ["bwrap"]
	runtime: "system"
	network: allow: ["api.example.com:443"]
}
`), root)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := compiler.Compile([]*schema.Policy{pol}, compiler.Options{Root: root, Home: t.TempDir(), NoFS: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".mcpolicy", "plan")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pinned := filepath.Join(dir, "a.json")
	if err := os.WriteFile(pinned, plans[0].JSON(), 0o444); err != nil {
		t.Fatal(err)
	}
	entry := artefact.RunEntry{Backend: "bwrap", ProjectRoot: root, PlanFile: pinned, Digest: artefact.Digest(plans[0].JSON())}
	if _, _, err := supervise.ReadPinned(entry); err != nil {
		t.Fatalf("the plan as built: %v", err)
	}
	read := func(what string) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { _, _, err := supervise.ReadPinned(entry); done <- err }()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: mcpolicy run still reading after 5s", what)
			return nil
		}
	}
	other := filepath.Join(dir, "b.json")
	if err := syscall.Mkfifo(other, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := read("a FIFO as another server's plan"); err == nil {
		t.Error("a FIFO as another server's plan: started")
	}
	os.Remove(other)
	if err := os.Symlink("/dev/zero", other); err != nil {
		t.Fatal(err)
	}
	if err := read("/dev/zero as another server's plan"); err == nil {
		t.Error("/dev/zero as another server's plan: started")
	}
	os.Remove(other)
	// The pinned file itself replaced by a FIFO: refused (exit 8), not
	// waited on.
	os.Remove(pinned)
	if err := syscall.Mkfifo(pinned, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := read("a FIFO as the pinned plan"); err == nil {
		t.Error("a FIFO as the pinned plan: started")
	}
}
