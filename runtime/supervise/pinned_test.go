package supervise_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/exitcode"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
)

// TestEntryStartsWithoutThePolicy: an egress server's client entry, as
// `mcpolicy client --write` writes it, starts the plan build wrote with
// every policy file of the project gone or broken: no spawn reads CUE.
// With the plan file edited it refuses, exit 8, saying how to get back;
// `mcpolicy check` holds the entry current, and the earlier form that
// compiled the policy at each start is drift (exit 6).
func TestEntryStartsWithoutThePolicy(t *testing.T) {
	testbin.SkipShort(t, "builds mcpolicy and runs bwrap")
	needBackend(t, "bwrap")
	dir := filepath.Join(base, "pinned")
	bin := filepath.Join(dir, "bin")
	proj := filepath.Join(dir, "proj")
	for _, d := range []string{bin, proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self := filepath.Join(bin, "mcpolicy")
	testbin.Install(t, testbin.Mcpolicy(t), self)
	testbin.Install(t, testbin.Launch(t), filepath.Join(bin, "mcpolicy-launch"))
	testbin.Install(t, testbin.Mcpolicy(t), filepath.Join(proj, "server"))
	policy := filepath.Join(proj, "mcpolicy.cue")
	if err := os.WriteFile(policy, []byte(`version: "v1"
servers: pinned: {
	backends: ["bwrap"]
	runtime: "static"
	mounts: [{source: "server", target: "/opt/server"}]
	command: ["/opt/server", "version"]
	network: allow: ["api.example.com:443"]
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	mcpolicy := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(self, args...)
		cmd.Dir = proj
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "HOME="+dir)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := mcpolicy("build"); code != 0 {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	if code, out := mcpolicy("client", "claude-code", "--backend", "bwrap", "--write"); code != 0 {
		t.Fatalf("client --write: exit %d\n%s", code, out)
	}
	cfg := filepath.Join(proj, ".mcp.json")
	written, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(written, &doc); err != nil {
		t.Fatal(err)
	}
	e := doc.MCPServers["pinned"]
	planFile := filepath.Join(proj, ".mcpolicy", "plan", "pinned.json")
	if e.Command != self || len(e.Args) < 2 || e.Args[len(e.Args)-1] != planFile || !strings.Contains(strings.Join(e.Args, " "), "--sha256 sha256:") {
		t.Fatalf("the entry: %s %q, want it to pin %s", e.Command, e.Args, planFile)
	}
	if code, out := mcpolicy("check"); code != 0 {
		t.Errorf("check with the entry just written: exit %d\n%s", code, out)
	}
	// The earlier form, as `mcpolicy client` wrote it before entries
	// pinned the plan.
	legacy, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"pinned": map[string]any{
		"command": self, "env": e.Env,
		"args": []string{"run", "--policy", proj, "--server", "pinned", "--backend", "bwrap", "--plan", "sha256:00"}}}})
	os.WriteFile(cfg, legacy, 0o644)
	if code, out := mcpolicy("check"); code != exitcode.Widened || !strings.Contains(out, "compiles the policy at every start") {
		t.Errorf("check with the earlier egress entry: exit %d, want %d\n%s", code, exitcode.Widened, out)
	}
	os.WriteFile(cfg, written, 0o644)

	start := func() (int, string) {
		cmd := exec.Command(e.Command, e.Args...)
		cmd.Dir = dir // as a client starts it: not in the project
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "HOME="+dir)
		for k, v := range e.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	// The policy broken, then gone: the entry starts all the same.
	if err := os.WriteFile(policy, []byte("servers: { this is not CUE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := start(); code != 0 || !strings.Contains(out, "schema: v1") {
		t.Errorf("with the policy broken: exit %d\n%s", code, out)
	}
	os.Remove(policy)
	if code, out := start(); code != 0 || !strings.Contains(out, "schema: v1") {
		t.Errorf("with the policy gone: exit %d\n%s", code, out)
	}
	// The plan edited: refused, with the way back.
	b, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(planFile, 0o644)
	if err := os.WriteFile(planFile, []byte(strings.Replace(string(b), `"api.example.com:443"`, `"*.example.com:443"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := start(); code != exitcode.Tampered || !strings.Contains(out, "mcpolicy build") || !strings.Contains(out, "mcpolicy client TARGET --write") {
		t.Errorf("with the plan edited: exit %d, want %d and the way back\n%s", code, exitcode.Tampered, out)
	}
}
