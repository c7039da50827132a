package launch_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

func TestParseEnvFile(t *testing.T) {
	got, err := launch.ParseEnvFile("env", []byte("# tokens\n\nGITHUB_TOKEN=ghp_x=y\nexport A='quoted value'\nB=\"two words\"\r\nEMPTY=\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"GITHUB_TOKEN": "ghp_x=y", "A": "quoted value", "B": "two words", "EMPTY": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for src, msg := range map[string]string{
		"A=1\nnot a line\n":       "env:2: expected NAME=value",
		"1A=x\n":                  "env:1: expected NAME=value",
		"A=1\nA=2\n":              "env:2: A is set twice",
		"A=1\nB C=secret-value\n": "env:2: expected NAME=value",
	} {
		_, err := launch.ParseEnvFile("env", []byte(src))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", src, err, msg)
		}
		if err != nil && strings.Contains(err.Error(), "secret-value") {
			t.Errorf("the error shows a value: %v", err)
		}
	}
}

// TestEnvFileRefusals: a file the server could reach, a link, a file
// others can read: nothing is read, and the error says why.
func TestEnvFileRefusals(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(proj, 0o755)
	good := filepath.Join(dir, "env")
	os.WriteFile(good, []byte("TOKEN=t0k\n"), 0o600)
	vals, err := launch.EnvFile{Path: good, Grants: []string{proj}}.Load([]string{"TOKEN", "OTHER"})
	if err != nil || vals["TOKEN"] != "t0k" || len(vals) != 1 {
		t.Fatalf("a good file: %v %v", vals, err)
	}

	inside := filepath.Join(proj, "env")
	os.WriteFile(inside, []byte("TOKEN=t0k\n"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("TOKEN=t0k\n"), 0o644)
	hard := filepath.Join(dir, "hard")
	os.WriteFile(hard, []byte("TOKEN=t0k\n"), 0o600)
	os.Link(hard, filepath.Join(proj, "hard-link"))
	linkedDir := filepath.Join(dir, "linked-dir")
	os.Symlink(dir, linkedDir)
	cases := []struct {
		name, path string
		tamper     bool
		msg        string
	}{
		{"inside a grant", inside, true, "lies inside " + proj},
		{"a symlink", link, true, "symlink"},
		{"through a symlinked folder", filepath.Join(linkedDir, "env"), true, "symlink"},
		{"readable by others", open, false, "chmod 600"},
		{"hard-linked into a grant", hard, true, "2 hard links"},
		{"missing", filepath.Join(dir, "none"), false, "install -m 600"},
		{"relative", "env", false, "not an absolute path"},
	}
	if os.Getuid() == 0 {
		other := filepath.Join(dir, "other")
		os.WriteFile(other, []byte("TOKEN=t0k\n"), 0o600)
		os.Chown(other, 1000, 1000)
		cases = append(cases, struct {
			name, path string
			tamper     bool
			msg        string
		}{"another user's", other, false, "belongs to uid 1000"})
	}
	for _, c := range cases {
		_, err := launch.EnvFile{Path: c.path, Grants: []string{proj}}.Load([]string{"TOKEN"})
		var te *launch.TamperError
		if err == nil || !strings.Contains(err.Error(), c.msg) || errors.As(err, &te) != c.tamper {
			t.Errorf("%s: %v (want %q, tampering %v)", c.name, err, c.msg, c.tamper)
		}
	}

	// What the client passes wins; the file fills in the rest.
	env, err := launch.WithEnvFile([]string{"TOKEN=from-client"}, launch.EnvFile{Path: good}, []string{"TOKEN"})
	if err != nil || strings.Join(env, " ") != "TOKEN=from-client" {
		t.Errorf("the client's value: %q %v", env, err)
	}
	// But a variable the client sets of its own (PATH: the entry's, for
	// the launcher) is the user's where the file names it (#34).
	if err := os.WriteFile(good, []byte("TOKEN=from-file\nPATH=/home/u/go/bin:/usr/bin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env, err = launch.WithEnvFile([]string{"PATH=/usr/local/bin:/usr/bin", "TOKEN=from-client", "HOME=/h"}, launch.EnvFile{Path: good}, []string{"TOKEN", "PATH", "HOME"})
	if err != nil || strings.Join(env, " ") != "TOKEN=from-client HOME=/h PATH=/home/u/go/bin:/usr/bin" {
		t.Errorf("a granted PATH in the file: %q %v", env, err)
	}
	// No file named, or nothing granted: nothing is read.
	if env, err := launch.WithEnvFile(nil, launch.EnvFile{Path: open}, nil); err != nil || len(env) != 0 {
		t.Errorf("no grants: %q %v", env, err)
	}
}

// TestLauncherEnvFile: entries for clients that pass no environment run
// mcpolicy-launch --env-file: the granted value reaches the server under
// bwrap and Landlock, a name the plan does not grant does not, and a file
// inside the project is refused with exit 8 before anything starts.
func TestLauncherEnvFile(t *testing.T) {
	requireLandlock(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is not installed; CI must install it")
		}
		t.Skip("bwrap not installed")
	}
	base := workdir(t)
	goBuild(t, base, "mcpolicy", "mcpolicy-launch")
	proj := filepath.Join(base, "proj")
	home := filepath.Join(base, "home")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(filepath.Join(home, ".config", "mcpolicy"), 0o700)
	envFile := filepath.Join(home, ".config", "mcpolicy", "env")
	// A granted PATH is the file's, over the client's own (#34).
	os.WriteFile(envFile, []byte("MCP_TOKEN=t0k-from-file\nOTHER_SECRET=not-granted\nPATH=/opt/toolchain/bin:/usr/bin:/bin\n"), 0o600)
	policy := `version: "v1"
servers: s: {
	command: ["/bin/sh", "-c", "echo \"token=$MCP_TOKEN other=$OTHER_SECRET path=$PATH\""]
	backends: ["bwrap", "landlock"]
	env: ["MCP_TOKEN", "PATH"]
	mounts: [{source: ".", target: "/w"}]
}
`
	os.WriteFile(filepath.Join(proj, "mcpolicy.cue"), []byte(policy), 0o644)
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	build := exec.Command(filepath.Join(base, "bin", "mcpolicy"), "build", proj)
	build.Env = env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("mcpolicy build: %v\n%s", err, out)
	}
	for _, backend := range []string{"bwrap", "landlock"} {
		pinned := filepath.Join(proj, ".mcpolicy", backend, "s.json")
		data, _ := os.ReadFile(pinned)
		launchWith := func(file string) (string, int) {
			cmd := exec.Command(filepath.Join(base, "bin", "mcpolicy-launch"), "--env-file", file,
				"--project-root", proj, "--sha256", artefact.Digest(data), pinned)
			cmd.Env = env // what Claude Desktop passes: no MCP_TOKEN
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return string(out), ee.ExitCode()
			}
			return string(out), 0
		}
		out, code := launchWith(envFile)
		if code != 0 || strings.TrimSpace(out) != "token=t0k-from-file other= path=/opt/toolchain/bin:/usr/bin:/bin" {
			t.Errorf("%s: exit %d, %q; want the granted value only", backend, code, out)
		}
		inside := filepath.Join(proj, "env")
		os.WriteFile(inside, []byte("MCP_TOKEN=x\n"), 0o600)
		if out, code := launchWith(inside); code != launch.ExitTampered || strings.Contains(out, "token=") {
			t.Errorf("%s: an env file inside the project: exit %d, %q; want 8 and nothing started", backend, code, out)
		}
		os.Remove(inside)
	}
}

// TestInsideAnyThroughSymlinks: a grant named through a symlink holds the
// env file under its real name, and the other way round (the escape
// suite's env-file-alias found the string comparison missing both).
func TestInsideAnyThroughSymlinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real", "proj")
	if err := os.MkdirAll(filepath.Join(real, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "code")); err != nil {
		t.Fatal(err)
	}
	viaLink := filepath.Join(dir, "code", "proj")
	for _, c := range []struct{ file, grant string }{
		{filepath.Join(real, "data", "env"), viaLink},
		{filepath.Join(viaLink, "data", "env"), real},
		{filepath.Join(real, "data", "env"), real},
	} {
		if _, in := launch.InsideAny(c.file, []string{c.grant}); !in {
			t.Errorf("%s is not found inside %s", c.file, c.grant)
		}
	}
	if g, in := launch.InsideAny(filepath.Join(dir, "elsewhere", "env"), []string{viaLink, real}); in {
		t.Errorf("a file outside both is said to lie in %s", g)
	}
}
