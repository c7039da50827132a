package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/clientcfg/clientcfgtest"
)

// TestLintIndependentOfCwdAndHome: lint of a client config (the generated
// 1,000-entry one) says the same from two working folders with two
// different $HOMEs: one empty, one holding what the old symlink scan and
// home comparisons picked up (ordinary symlinks, a .env, keys, credential
// stores). Issue 16.
func TestLintIndependentOfCwdAndHome(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	writeFile(t, cfg, string(clientcfgtest.Config(1000)))

	busy := t.TempDir()
	for _, f := range []string{"a/x", "b/y", ".env", "deploy.key", "src/.env.local", "profiles/server.sb"} {
		writeFile(t, filepath.Join(busy, f), "TOKEN=x\n")
	}
	if os.Symlink("a/x", filepath.Join(busy, "l1")) != nil || os.Symlink("b/y", filepath.Join(busy, "l2")) != nil ||
		os.Symlink("/etc", filepath.Join(busy, "etc")) != nil {
		t.Skip("no symlinks here")
	}
	home := t.TempDir()
	for _, f := range []string{".ssh/id_ed25519", ".aws/credentials", ".kube/config", "Documents/.env", "src/app/.env", ".claude/settings.json"} {
		writeFile(t, filepath.Join(home, f), "secret\n")
	}
	os.Symlink("/usr", filepath.Join(home, "src", "usr"))

	var first map[string]string
	for i, c := range []struct{ cwd, home string }{{t.TempDir(), t.TempDir()}, {busy, home}} {
		t.Chdir(c.cwd)
		t.Setenv("HOME", c.home)
		t.Setenv("USERPROFILE", c.home)
		outs := map[string]string{}
		for _, format := range []string{"text", "json"} {
			var code int
			var out, errs string
			done := make(chan struct{})
			go func() {
				defer close(done)
				code, out, errs = run(t, "lint", "--no-policy", "--client", cfg, "--format", format, "--fail-on", "never")
			}()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("run %d: lint --format %s did not finish", i, format)
			}
			if code != ExitOK || out == "" {
				t.Fatalf("run %d: exit %d\n%s", i, code, errs)
			}
			if strings.Contains(out, c.cwd) || strings.Contains(out, c.home) {
				t.Errorf("run %d: the output names the working folder or $HOME", i)
			}
			outs[format] = out
		}
		if first == nil {
			first = outs
			continue
		}
		for format, out := range outs {
			if out != first[format] {
				a, b := strings.Split(first[format], "\n"), strings.Split(out, "\n")
				for j := 0; j < len(a) && j < len(b); j++ {
					if a[j] != b[j] {
						t.Errorf("--format %s differs with the working folder and $HOME, first at line %d:\n  %s\n  %s", format, j+1, a[j], b[j])
						break
					}
				}
				if len(a) != len(b) {
					t.Errorf("--format %s: %d lines, then %d", format, len(a), len(b))
				}
			}
		}
	}
}

// TestLintThisMachine: a user config's granted folders are looked into only
// with --this-machine.
func TestLintThisMachine(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	data := t.TempDir()
	writeFile(t, filepath.Join(data, ".env"), "TOKEN=x\n")
	cfg := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	writeFile(t, cfg, `{"mcpServers": {"s": {"command": "docker", "args": ["run", "-i", "--rm", "-v", "`+data+`:/data:ro", "img:1"]}}}`)
	if _, out, _ := run(t, "lint", "--no-policy", "--client", cfg, "--fail-on", "never"); strings.Contains(out, "SECRETS_WITH_EGRESS") {
		t.Errorf("another machine's config: its folder was looked into here:\n%s", out)
	}
	if _, out, _ := run(t, "lint", "--no-policy", "--this-machine", "--client", cfg, "--fail-on", "never"); !strings.Contains(out, "SECRETS_WITH_EGRESS") {
		t.Errorf("--this-machine: the granted folder's .env is not reported:\n%s", out)
	}
}
