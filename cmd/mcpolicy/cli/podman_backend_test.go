package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPodmanBackendInPolicy: "podman" in a policy's backends builds
// docker's artefact (the one podman runs), explain and why name podman,
// and a client entry defaults to podman as the engine.
func TestPodmanBackendInPolicy(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	fakeLauncher(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: s: {
	image: "s:1"
	backends: ["podman"]
	mounts: [{source: "data", target: "/data", mode: "rw"}]
}
`)
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	if code, out, errs := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, ".mcpolicy", "docker", "s.json")); err != nil {
		t.Fatalf("no docker artefact for podman: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".mcpolicy", "manifest.json")); !strings.Contains(string(b), `"podman": "docker/s.json"`) {
		t.Errorf("manifest:\n%s", b)
	}
	if code, out, errs := run(t, "explain", "-p", dir); code != ExitOK || !strings.Contains(out, "backends: podman") {
		t.Errorf("explain: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "why", "/data", "-p", dir); code != ExitOK || !strings.Contains(out, "podman") {
		t.Errorf("why: exit %d\n%s%s", code, out, errs)
	}
	cfg := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--file", cfg, "--write"); code != ExitOK {
		t.Fatalf("client: exit %d\n%s%s", code, out, errs)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.Contains(string(b), "podman\"") || !strings.Contains(string(b), ".mcpolicy/docker/s.json") {
		t.Errorf("the entry does not run the docker artefact with podman:\n%s", b)
	}
	if code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--file", cfg, "--backend", "docker"); code == ExitOK {
		t.Errorf("a docker entry for a podman-only policy: exit 0\n%s%s", out, errs)
	}
	if code, out, _ := run(t, "check", "-p", dir, "--client", cfg); code != ExitOK {
		t.Errorf("check: exit %d\n%s", code, out)
	}
}
