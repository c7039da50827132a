package project_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/writereport"
	"github.com/mcpolicy/mcpolicy/project"
)

// TestWriteReportsNameAndFlag: the reports check and sessions both read
// name an engine session's server by its plan's hash, and flag a write
// where another server of the policy mounts.
func TestWriteReportsNameAndFlag(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	policy := `version: "v1"
servers: {
	writer: {
		image: "w:1"
		mounts: [{source: "cfg", target: "/cfg", mode: "rw"}]
		accept: ["rw-holds-other-server"]
	}
	reader: {
		image: "r:1"
		mounts: [{source: "cfg", target: "/cfg"}]
	}
}
`
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "mcpolicy.cue"), []byte(policy), 0o644))
	must(os.Mkdir(filepath.Join(root, "cfg"), 0o755))
	proj, err := project.Discover(root)
	must(err)
	plans, err := proj.Compile(t.TempDir())
	must(err)
	var hash string
	for _, p := range plans {
		if p.Server == "writer" {
			hash = p.Hash
		}
	}
	_, err = writereport.Record(state, &writereport.Session{Project: proj.Root, Server: hash, Backend: "docker", Writable: []string{filepath.Join(proj.Root, "cfg")}})
	must(err)
	must(os.WriteFile(filepath.Join(root, "cfg", "command"), []byte("env\n"), 0o644))
	reps, err := proj.WriteReports(state, plans, t.TempDir(), 0)
	must(err)
	if len(reps) != 1 || reps[0].Session.Server != "writer" {
		t.Fatalf("reports: %d, server %q; want 1, writer", len(reps), reps[0].Session.Server)
	}
	var flagged bool
	for _, e := range reps[0].Pending() {
		if filepath.Base(e.Path) == "command" && slices.Contains(e.Flags, writereport.FlagOtherServer) && slices.Equal(e.ReadBy, []string{"reader"}) {
			flagged = true
		}
	}
	if !flagged {
		t.Errorf("cfg/command, mounted by reader, not flagged other-server: %+v", reps[0].Entries)
	}
}
