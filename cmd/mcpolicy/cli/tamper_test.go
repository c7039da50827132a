package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// TestTamperingIsReported: an artefact edited after the build (the plan
// unchanged) is reported as tampered, not stale, by build --check and by
// check (exit 8); an edit of the policy is stale (3) and drift (6); run
// refuses a plan other than the one the entry pins (8).
func TestTamperingIsReported(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	fakeLauncher(t)
	policy := `version: "v1"
servers: idx: {
	command: ["/usr/bin/true"]
	mounts: [{source: "src", target: "/src"}]
	backends: ["bwrap"]
}
`
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), policy)
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	if code, _, errs := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: %d %s", code, errs)
	}
	cfg := filepath.Join(dir, "claude.json")
	if code, out, errs := run(t, "client", "claude-code", "-p", dir, "--file", cfg, "--write"); code != ExitOK {
		t.Fatalf("client: %d %s%s", code, out, errs)
	}
	if code, out, _ := run(t, "check", "-p", dir, "--client", cfg); code != ExitOK {
		t.Fatalf("check after write: %d\n%s", code, out)
	}
	artefact := filepath.Join(dir, ".mcpolicy", "bwrap", "idx.json")
	b, _ := os.ReadFile(artefact)
	writeFile(t, artefact, strings.Replace(string(b), `"/src"`, `"/src2"`, 1))
	if code, out, _ := run(t, "build", "--check", dir); code != ExitTampered || !strings.Contains(out, "TAMPERED: ") {
		t.Errorf("build --check after an edit of the artefact: exit %d, want %d\n%s", code, ExitTampered, out)
	}
	if code, out, _ := run(t, "check", "-p", dir, "--client", cfg); code != ExitTampered || !strings.Contains(out, "TAMPERED") {
		t.Errorf("check after an edit of the artefact: exit %d, want %d\n%s", code, ExitTampered, out)
	}
	// The control: a changed policy is stale, not tampering.
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), strings.Replace(policy, `"/usr/bin/true"`, `"/usr/bin/false"`, 1))
	if code, out, _ := run(t, "build", "--check", dir); code != ExitStale || strings.Contains(out, "TAMPERED") {
		t.Errorf("build --check after a policy change: exit %d, want %d\n%s", code, ExitStale, out)
	}
	if code, _, _ := run(t, "build", dir); code != ExitOK {
		t.Fatal("rebuild")
	}
	if code, out, _ := run(t, "check", "-p", dir, "--client", cfg); code != ExitWidened || !strings.Contains(out, "stale:") {
		t.Errorf("check after a policy change: exit %d, want %d\n%s", code, ExitWidened, out)
	}
	if code, _, errs := run(t, "run", "--policy", dir, "--server", "idx", "--plan", "sha256:"+strings.Repeat("0", 64)); code != ExitTampered || !strings.Contains(errs, "pins") {
		t.Errorf("run with another pinned plan: exit %d, want %d\n%s", code, ExitTampered, errs)
	}
}

// TestLintClientNeedsNoPolicy: linting a client config where no policy is
// (this package's folder) needs no --no-policy; lint without --client still
// says no policy was found.
func TestLintClientNeedsNoPolicy(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.json")
	writeFile(t, cfg, `{"mcpServers": {"x": {"command": "npx", "args": ["-y", "some-server"]}}}`)
	if code, out, errs := run(t, "lint", "--client", cfg, "--fail-on", "never"); code != ExitOK || !strings.Contains(out, "UNCONFINED_SERVER") {
		t.Errorf("lint --client without a policy: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "lint"); code == ExitOK || !strings.Contains(errs, "no policy at .") {
		t.Errorf("lint without a policy or a client: exit %d\n%s", code, errs)
	}
}

// TestToolsChangeIsStaleNotTampered: a pinned tools section changed in the
// policy (the pin as it was) is stale, exit 3, not tampered: the tools
// artefact carries its plan's hash as every artefact does (a new user found
// the pin's digest taken for it). A hand edit of that artefact is tampered.
func TestToolsChangeIsStaleNotTampered(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	policy := `version: "v1"
servers: mem: {
	command: ["/usr/bin/true"]
	backends: ["bwrap"]
	tools: {
		allow: ["read_graph", "search_nodes"]
		pin: true
	}
}
`
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), policy)
	pin := `{"server": "mem", "digest": "DIGEST", "tools": [{"name": "read_graph", "description": "Read the graph"}, {"name": "search_nodes", "description": "Search"}]}`
	d, err := toolpolicy.PinDigest([]toolpolicy.PinnedTool{{Name: "read_graph", Description: "Read the graph"}, {Name: "search_nodes", Description: "Search"}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "mcpolicy.pins", "mem.json"), strings.Replace(pin, "DIGEST", d, 1))
	if code, _, errs := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: %d %s", code, errs)
	}
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), strings.Replace(policy, `allow: ["read_graph", "search_nodes"]`, `allow: ["read_graph"]`, 1))
	if code, out, _ := run(t, "build", "--check", dir); code != ExitStale || strings.Contains(out, "TAMPERED") {
		t.Errorf("build --check after a tools change: exit %d, want %d\n%s", code, ExitStale, out)
	}
	if code, _, errs := run(t, "build", dir); code != ExitOK {
		t.Fatalf("rebuild: %d %s", code, errs)
	}
	tools := filepath.Join(dir, ".mcpolicy", "tools", "mem.json")
	b, _ := os.ReadFile(tools)
	writeFile(t, tools, strings.Replace(string(b), `"read_graph"`, `"*"`, 1))
	if code, out, _ := run(t, "build", "--check", dir); code != ExitTampered {
		t.Errorf("build --check after a hand edit of the tools artefact: exit %d, want %d\n%s", code, ExitTampered, out)
	}
}
