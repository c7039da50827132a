package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/protect"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
	"github.com/spf13/cobra"
)

// TestMissingPolicyPath: every command that takes a policy says, for a
// path that does not exist, that no policy is there and where it looked,
// with a hint, not Go's raw stat error.
func TestMissingPolicyPath(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	missing := filepath.Join(t.TempDir(), "nowhere")
	// Each command that takes -p, with what else it needs to reach the policy.
	calls := map[string][]string{
		"build": nil, "vet": nil, "explain": nil, "args": {"s"}, "lint": nil, "diff": nil,
		"check": nil, "client": {"vscode"}, "exec": {"--server", "s"}, "prove": nil,
		"run": {"--server", "s"}, "sessions": nil, "suggest": nil, "why": {"s"},
		"hook install": nil, "egress-proxy": {"--listen", "127.0.0.1:0", "--server", "s"},
		"doctor": {"--server", "s"}, "pin": {"s"}, "credentials": {"s"},
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		name := strings.TrimPrefix(c.CommandPath(), "mcpolicy ")
		if c.Flags().ShorthandLookup("p") == nil {
			return
		}
		extra, ok := calls[name]
		if !ok {
			t.Errorf("%s takes -p: add it to this test", name)
			return
		}
		args := append(append(strings.Fields(name), "-p", missing), extra...)
		code, out, errs := run(t, args...)
		want := "mcpolicy: no policy at " + missing + ": it does not exist (looked for mcpolicy.cue|json|yaml|yml|jsonnet, mcpolicy.d/*); hint: "
		if code != ExitError || !strings.HasPrefix(errs, want) || strings.Contains(errs, "stat ") || out != "" {
			t.Errorf("%s -p MISSING: exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q...", name, code, out, errs, ExitError, want)
		}
	}
	walk(newRootCmd())
}

// TestBackendValidatedFirst: a mistyped --backend is refused before a
// command prints anything, with the nearest backend it accepts; run never
// suggests a backend it refuses.
func TestBackendValidatedFirst(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), policy)
	calls := map[string][]string{
		"explain": nil, "run": {"--server", "code-index"}, "client": {"vscode"}, "why": {"/workspace"},
		"doctor": {"--server", "code-index"}, "prove": nil, "pin": {"code-index"},
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Flags().Lookup("backend") == nil {
			return
		}
		name := strings.TrimPrefix(c.CommandPath(), "mcpolicy ")
		extra, ok := calls[name]
		if !ok {
			t.Errorf("%s takes --backend: add it to this test", name)
			return
		}
		args := append(append(strings.Fields(name), "-p", dir, "--backend", "dokcer"), extra...)
		code, out, errs := run(t, args...)
		want := `mcpolicy: --backend "dokcer": no such backend; did you mean docker?; ` + name + " takes "
		if code != ExitError || out != "" || !strings.HasPrefix(errs, want) {
			t.Errorf("%s --backend dokcer: exit %d, stdout %q, stderr:\n%s\nwant exit %d, nothing printed, and %q...", name, code, out, errs, ExitError, want)
		}
	}
	walk(newRootCmd())

	for _, c := range []struct{ backend, want string }{
		{"landlok", `mcpolicy: --backend "landlok": no such backend; run takes bwrap, docker, podman or seatbelt` + "\n"},
		{"landlock", "mcpolicy: --backend landlock: run does not start it (mcpolicy exec starts a server under its Landlock ruleset); run takes bwrap, docker, podman or seatbelt\n"},
		{"kubernetes", "mcpolicy: --backend kubernetes: run does not start it (a cluster starts it, from the manifest mcpolicy build writes); run takes bwrap, docker, podman or seatbelt\n"},
	} {
		code, out, errs := run(t, "run", "-p", dir, "--server", "code-index", "--backend", c.backend)
		if code != ExitError || out != "" || errs != c.want {
			t.Errorf("run --backend %s: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", c.backend, code, out, errs, c.want)
		}
	}
}

// TestArgsWhyWithoutArgumentListServers: args and why without their
// argument name every server with the file:line declaring it, and a
// command line to run; nothing on stdout.
func TestArgsWhyWithoutArgumentListServers(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	file := filepath.Join(dir, "mcpolicy.cue")
	writeFile(t, file, policy+`servers: other: {image: "x:1"}`+"\n")
	for _, c := range []struct{ cmd, hint string }{
		{"args", "hint: mcpolicy args code-index -p " + dir + "\n"},
		{"why", "hint: mcpolicy why TARGET --server code-index -p " + dir + ", e.g. mcpolicy why ~/.ssh/id_ed25519 -p " + dir + "\n"},
	} {
		code, out, errs := run(t, c.cmd, "-p", dir)
		want := "the servers of the policy at " + dir + ":\n  code-index  " + file + ":2\n  other       " + file + ":7\n" + c.hint
		if code != ExitError || out != "" || !strings.HasPrefix(errs, "mcpolicy: "+c.cmd+" needs a ") || !strings.HasSuffix(errs, want) {
			t.Errorf("%s without its argument: exit %d, stdout %q, stderr:\n%s\nwant exit %d, ending:\n%s", c.cmd, code, out, errs, ExitError, want)
		}
	}
}

// TestCheckSaysWhenItFoundNoClientConfig: check with no client file to
// compare says so and where it looked, not "no drift"; with one, "no
// drift".
func TestCheckSaysWhenItFoundNoClientConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), policy)
	code, out, errs := run(t, "check", "-p", dir)
	want := "no client config found to check (looked in: " + dir + ": .mcp.json, .vscode/mcp.json, .cursor/mcp.json, .gemini/settings.json, .codex/config.toml, .zed/settings.json, .roo/mcp.json; ~/"
	if code != ExitOK || !strings.HasPrefix(out, want) || !strings.Contains(out, "~/.claude.json") || strings.Contains(out, "no drift") || strings.Count(out, "\n") != 1 {
		t.Errorf("check with no client config: exit %d, stdout:\n%s%s\nwant it to start %q", code, out, errs, want)
	}
	if code, _, errs := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: %s", errs)
	}
	if code, out, errs := run(t, "check", "-p", dir); code != ExitOK || !strings.HasPrefix(out, "the output folder matches the policy; no client config found to check (looked in: ") {
		t.Errorf("check after a build, with no client config: exit %d\n%s%s", code, out, errs)
	}
	fakeLauncher(t)
	if code, _, errs := run(t, "client", "claude-code", "-p", dir, "--write"); code != ExitOK {
		t.Fatalf("client --write: %s", errs)
	}
	if code, out, errs := run(t, "check", "-p", dir); code != ExitOK || out != "no drift\n" {
		t.Errorf("check with the entry written: exit %d\n%s%s", code, out, errs)
	}
}

// TestRelativeEnvFileResolved: a relative --env-file is resolved against
// the current folder and the entry names it by its absolute path; the
// file's checks still hold (one that resolves into the project is
// refused, by client, run and exec).
func TestRelativeEnvFileResolved(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	fakeLauncher(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: s1: {
	image: "s1:1"
	backends: ["docker"]
	env: ["TOK"]
}
`)
	if code, out, errs := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, out, errs)
	}
	secrets := filepath.Join(home, "secrets")
	writeFile(t, filepath.Join(secrets, "mcp.env"), "TOK=x\n")
	os.Chmod(filepath.Join(secrets, "mcp.env"), 0o600)
	cfg := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	writeFile(t, cfg, "{}\n")
	t.Chdir(secrets)
	if code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--file", cfg, "--env-file", "mcp.env", "--write"); code != ExitOK {
		t.Fatalf("client --env-file mcp.env: exit %d\n%s%s", code, out, errs)
	}
	b, _ := os.ReadFile(cfg)
	if abs, _ := json.Marshal(filepath.Join(secrets, "mcp.env")); !strings.Contains(string(b), `"--env-file",`) || !strings.Contains(string(b), string(abs)) {
		t.Errorf("the entry does not name the env file by its absolute path %s:\n%s", abs, b)
	}
	if code, out, errs := run(t, "check", "-p", dir, "--client", cfg); code != ExitOK {
		t.Errorf("check: exit %d\n%s%s", code, out, errs)
	}

	// In the project: refused, by its absolute path, as before.
	writeFile(t, filepath.Join(dir, "env"), "TOK=x\n")
	os.Chmod(filepath.Join(dir, "env"), 0o600)
	t.Chdir(dir)
	want := filepath.Join(dir, "env") + " lies inside "
	for _, cmd := range [][]string{
		{"client", "claude-desktop", "-p", dir, "--file", cfg, "--env-file", "env", "--write"},
		{"run", "-p", dir, "--server", "s1", "--backend", "docker", "--env-file", "env"},
		{"exec", "-p", dir, "--server", "s1", "--env-file", "env"},
	} {
		if code, out, errs := run(t, cmd...); code == ExitOK || !strings.Contains(errs, want) || strings.Contains(errs, "not an absolute path") {
			t.Errorf("%s --env-file env (in the project): exit %d\n%s%s\nwant %q", cmd[0], code, out, errs, want)
		}
	}
}

// TestExplainCountsAbsentProtectedNames: explain counts the protected
// names absent in each read-write mount on one line; --list-protected
// lists them, one a line.
func TestExplainCountsAbsentProtectedNames(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: s: {
	image: "s:1"
	mounts: [{source: "a", target: "/a", mode: "rw"}, {source: "b", target: "/b", mode: "rw"}, {source: "c", target: "/c"}]
}
`)
	for _, d := range []string{"a", "b", "c"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	writeFile(t, filepath.Join(dir, "b", ".npmrc"), "x\n")
	code, out, errs := run(t, "explain", "-p", dir)
	n := len(protect.Names)
	want := fmt.Sprintf("  - /a: %d protected names absent (explain --list-protected lists them)\n  - /b: %d protected names absent (explain --list-protected lists them)\n", n, n-1)
	if code != ExitOK || !strings.Contains(out, want) || strings.Contains(out, "/a/.git\n") {
		t.Errorf("explain: exit %d, want one line per read-write mount:\n%s\n%s%s", code, want, out, errs)
	}
	code, out, errs = run(t, "explain", "-p", dir, "--list-protected")
	if code != ExitOK || strings.Count(out, "\n  - /a/") != n || strings.Count(out, "\n  - /b/") != n || strings.Contains(out, "lists them") { // /b/.npmrc is protected, the others absent
		t.Errorf("explain --list-protected: exit %d, want %d names of /a and of /b:\n%s%s", code, n, out, errs)
	}
}

// TestCompletion: shell completion offers the policy's servers, client
// targets, each command's own backends and formats; a shell without a
// script is an error naming those with one.
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), policy+`servers: other: {image: "x:1"}`+"\n")
	complete := func(args ...string) []string {
		t.Helper()
		code, out, errs := run(t, append([]string{"__complete"}, args...)...)
		if code != ExitOK {
			t.Fatalf("__complete %v: exit %d\n%s", args, code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[:len(lines)-1] // the last is the directive
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"args", "-p", dir, ""}, []string{"code-index", "other"}},
		{[]string{"args", "-p", dir, "code-index", ""}, nil},
		{[]string{"explain", "-p", dir, "other", ""}, []string{"code-index"}},
		{[]string{"run", "-p", dir, "--server", ""}, []string{"code-index", "other"}},
		{[]string{"why", "--policy", dir, "--server", ""}, []string{"code-index", "other"}},
		{[]string{"run", "--backend", ""}, backendNames(supervise.Backends())},
		{[]string{"explain", "--backend", ""}, registry.Names()},
		{[]string{"diff", "--format", ""}, diff.Formats},
		{[]string{"why", "--format", ""}, []string{"text", "json"}},
		{[]string{"client", ""}, []string{"claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed", "gemini", "cline", "codex"}},
	} {
		if got := complete(c.args...); !slices.Equal(got, c.want) {
			t.Errorf("complete %v: %q, want %q", c.args, got, c.want)
		}
	}
	// Every --format and --backend completes to something.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		for _, flag := range []string{"format", "backend"} {
			if c.Flags().Lookup(flag) == nil {
				continue
			}
			args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "mcpolicy ")), "--"+flag, "")
			if got := complete(args...); len(got) == 0 {
				t.Errorf("%s --%s completes to nothing", c.CommandPath(), flag)
			}
		}
	}
	walk(newRootCmd())

	code, out, errs := run(t, "completion", "tcsh")
	if want := "mcpolicy: completion tcsh: not supported; mcpolicy completes in bash, zsh, fish or powershell"; code != ExitError || out != "" || !strings.HasPrefix(errs, want) {
		t.Errorf("completion tcsh: exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errs, ExitError, want)
	}
}
