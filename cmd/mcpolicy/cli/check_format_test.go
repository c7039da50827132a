package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckFormats: a hand-widened entry is a drift under its diff kind in
// every format, at the entry, with the same exit code as text.
func TestCheckFormats(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	fakeLauncher(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: "code-index": {
	image: "code-index:1.7.2"
	mounts: [{source: "shop", target: "/workspace"}]
}
`)
	os.MkdirAll(filepath.Join(dir, "shop"), 0o755)
	// The engine entry pins the built artefact.
	if code, out, errs := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, out, errs)
	}
	cfg := filepath.Join(dir, ".vscode", "mcp.json")
	if code, out, errs := run(t, "client", "vscode", "-p", dir, "--write"); code != ExitOK {
		t.Fatalf("write: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := run(t, "check", "-p", dir, "--format", "github"); code != ExitOK || out != "" {
		t.Errorf("clean, github: exit %d\n%s", code, out)
	}
	b, _ := os.ReadFile(cfg)
	writeFile(t, cfg, strings.Replace(string(b), "target=/workspace,readonly", "target=/workspace", 1))
	for format, want := range map[string]string{
		"github":   "::error file=" + cfg,
		"sarif":    `"ruleId": "MOUNT_RW"`,
		"json":     `"verdict": "widened"`,
		"markdown": "`MOUNT_RW`",
	} {
		code, out, _ := run(t, "check", "-p", dir, "--format", format)
		if code != ExitWidened || !strings.Contains(out, want) || !strings.Contains(out, "MOUNT_RW") {
			t.Errorf("%s: exit %d, want %q:\n%s", format, code, want, out)
		}
	}
}

// TestVetFormats: an invalid policy is a SCHEMA finding in a machine
// format, still exit 2; a valid one is no finding, exit 0.
func TestVetFormats(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), "version: \"v1\"\nservers: s: {image: \"s:1\", mounts: [{source: \".\", target: \"/w\", mode: \"rwx\"}]}\n")
	code, out, errs := run(t, "vet", "-p", dir, "--format", "github")
	if code != ExitInvalid || !strings.Contains(out, "title=SCHEMA::servers.s.mounts[0].mode") || errs != "" {
		t.Errorf("invalid, github: exit %d\n%s%s", code, out, errs)
	}
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), "version: \"v1\"\nservers: s: image: \"s:1\"\n")
	if code, out, _ := run(t, "vet", "-p", dir, "--format", "sarif"); code != ExitOK || !strings.Contains(out, `"results": []`) {
		t.Errorf("valid, sarif: exit %d\n%s", code, out)
	}
}
