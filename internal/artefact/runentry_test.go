package artefact_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// TestEntryArgsReadBack: the command line a client entry runs reads back
// as what wrote it, with and without an env file; a line that is not one
// is told apart, and the earlier form that compiled the policy is known.
func TestEntryArgsReadBack(t *testing.T) {
	for _, e := range []artefact.RunEntry{
		{Backend: "bwrap", ProjectRoot: "/p", PlanFile: "/p/.mcpolicy/plan/s.json", Digest: "sha256:" + strings.Repeat("a", 64)},
		{Backend: "docker", ProjectRoot: "${workspaceFolder}", PlanFile: "${workspaceFolder}/.mcpolicy/plan/s.json", Digest: "sha256:00", EnvFile: "/home/me/.config/mcpolicy/env"},
	} {
		args := artefact.RunEntryArgs(e)
		got, ok, err := artefact.ParseRunEntry(args)
		if !ok || err != nil || !reflect.DeepEqual(got, e) {
			t.Errorf("%q read back as %+v (%v, %v), want %+v", args, got, ok, err, e)
		}
		if artefact.LegacyRunEntry(args) {
			t.Errorf("%q is taken for the earlier form", args)
		}
	}
	legacy := append(artefact.RunPolicyArgs("/p", "s", "bwrap"), "--plan", "sha256:00")
	if _, ok, _ := artefact.ParseRunEntry(legacy); ok || !artefact.LegacyRunEntry(legacy) {
		t.Errorf("%q: not known as the earlier form", legacy)
	}
	for _, bad := range [][]string{
		{"run", "--backend", "bwrap", "--sha256", "sha256:00", "/p/.mcpolicy/plan/s.json"},           // no root
		{"run", "--backend", "bwrap", "--project-root", "/p", "--sha256", "sha256:00"},               // no file
		{"run", "--backend", "bwrap", "--project-root", "/p", "--hosts", "/h", "--sha256", "x", "f"}, // not an entry's flag
	} {
		if _, ok, err := artefact.ParseRunEntry(bad); !ok || err == nil {
			t.Errorf("%q: read as an entry (%v, %v)", bad, ok, err)
		}
	}
	if _, ok, _ := artefact.ParseRunEntry([]string{"exec", "--policy", "/p"}); ok {
		t.Errorf("exec read as a run entry")
	}
}

// TestRedteam36RunEntryNothingAfterPlan: a command (-- CMD) or a second
// file after the plan file is refused, and the error names what follows
// the plan file, not the plan file as an unknown flag.
func TestRedteam36RunEntryNothingAfterPlan(t *testing.T) {
	e := artefact.RunEntry{Backend: "bwrap", ProjectRoot: "/p", PlanFile: "/p/.mcpolicy/plan/s.json", Digest: "sha256:00"}
	for _, extra := range [][]string{{"--", "/bin/sh", "-c", "id"}, {"/p/.mcpolicy/plan/t.json"}} {
		_, ok, err := artefact.ParseRunEntry(append(artefact.RunEntryArgs(e), extra...))
		if !ok || err == nil || !strings.Contains(err.Error(), "nothing follows it") {
			t.Errorf("the entry with %q after its plan file: ok %v, err %v", extra, ok, err)
		}
	}
}
