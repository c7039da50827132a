package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg/entry"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const policy = `version: "v1"
servers: "code-index": {
	image: "code-index:1.7.2"
	mounts: [{source: ".", target: "/workspace", mode: "rw"}]
	scratch: size: "256m"
}
`

func TestBuildCheckDetectsEveryKindOfDrift(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), policy)

	if code, _, stderr := run(t, "build", "--check", dir); code != ExitStale {
		t.Fatalf("check before any build: exit %d, want %d (%s)", code, ExitStale, stderr)
	}
	if code, _, stderr := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: exit %d: %s", code, stderr)
	}
	if code, out, _ := run(t, "build", "--check", dir); code != ExitOK {
		t.Fatalf("check after build: exit %d: %s", code, out)
	}

	// A widened policy makes the committed artefacts stale.
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), strings.Replace(policy, `"256m"`, `"1g"`, 1))
	code, out, _ := run(t, "build", "--check", dir)
	if code != ExitStale || !strings.Contains(out, "stale:   "+filepath.Join(dir, ".mcpolicy", "docker", "code-index.json")) {
		t.Errorf("check after edit: exit %d, output:\n%s", code, out)
	}
	run(t, "build", dir)

	// A hand edit of an artefact, and a leftover file, are drift too.
	writeFile(t, filepath.Join(dir, ".mcpolicy", "docker", "code-index.json"), "[]\n")
	writeFile(t, filepath.Join(dir, ".mcpolicy", "docker", "gone.json"), "[]\n")
	code, out, _ = run(t, "build", "--check", dir)
	if code != ExitStale || !strings.Contains(out, "stale:") || !strings.Contains(out, "extra:") {
		t.Errorf("check after hand edits: exit %d, output:\n%s", code, out)
	}
	// build repairs both, and removes what it no longer produces.
	run(t, "build", dir)
	if _, err := os.Stat(filepath.Join(dir, ".mcpolicy", "docker", "gone.json")); !os.IsNotExist(err) {
		t.Errorf("leftover artefact not removed: %v", err)
	}
	if code, _, _ := run(t, "build", "--check", dir); code != ExitOK {
		t.Errorf("check after rebuild: exit %d", code)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), policy)
	writeFile(t, filepath.Join(dir, "bad", "mcpolicy.cue"), `version: "v1"`+"\nservers: a: {image: 1}\n")
	writeFile(t, filepath.Join(dir, "bad.sb"), "(version 1)\n(allow default)\n")
	writeFile(t, filepath.Join(dir, "net", "mcpolicy.cue"), `version: "v1"`+"\nservers: a: {command: [\"/bin/true\"], backends: [\"landlock\"], network: allow: [\"api.github.com:443\"]}\n")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"vet", dir}, ExitOK, "ok: 1 server in 1 policy file"},
		{[]string{"vet", filepath.Join(dir, "bad")}, ExitInvalid, "mcpolicy.cue:2:21: servers.a.image: must be a container image reference"},
		{[]string{"vet", filepath.Join(dir, "net")}, ExitInvalid, "not enforceable by backend landlock"},
		{[]string{"vet", filepath.Join(dir, "missing")}, ExitError, "no policy at " + filepath.Join(dir, "missing") + ": it does not exist"},
		{[]string{"explain", "-p", dir, "nope"}, ExitError, `no server "nope"`},
		{[]string{"build", "--bogus"}, ExitError, "unknown flag"},
		{[]string{"version"}, ExitOK, "schema: v1"},
		{[]string{"completion", "bash"}, ExitOK, "bash completion"},
		{[]string{"schema"}, ExitOK, "#Policy"},
		{[]string{"explain", "-p", dir}, ExitOK, "2 grants: 1 rw mount, 1 scratch"},
		{[]string{"probe", "read:/nonexistent/x"}, ExitOK, `"result":"ENOENT"`},
		{[]string{"args", "-p", dir, "code-index"}, ExitOK, `"type=bind,source=` + dir + `,target=/workspace"`},
		{[]string{"args", "-p", dir, "nope"}, ExitError, `no server "nope"`},
		{[]string{"pin", "-p", dir}, ExitError, "pin needs a SERVER; the servers of the policy at " + dir + ":\n  code-index"},
		{[]string{"client"}, ExitError, "client needs a TARGET, the client whose config to merge the entries into: claude-desktop, "},
		{[]string{"check-profile", filepath.Join(dir, "bad.sb")}, ExitInvalid, "bad.sb:2:8: error: (allow default)"},
	}
	for _, c := range cases {
		code, out, errs := run(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("mcpolicy %s: exit %d (want %d)\nstdout: %s\nstderr: %s\nwant output containing %q",
				strings.Join(c.args, " "), code, c.code, out, errs, c.want)
		}
	}
}

// TestEveryCommandHasExamples: --help on every command shows how to use it.
func TestEveryCommandHasExamples(t *testing.T) {
	for _, c := range newRootCmd().Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if c.Example == "" || c.Short == "" {
			t.Errorf("command %q lacks Short or Example", c.Name())
		}
	}
}

// TestRootBuildsTheNamedCommand: each subcommand's name is its command's,
// a command line naming one builds that one alone with the same help,
// and any other builds them all (help, completion, suggestions).
func TestRootBuildsTheNamedCommand(t *testing.T) {
	all := newRootCmd()
	for _, c := range subcommands {
		cmd := c.new()
		if cmd.Name() != c.name {
			t.Errorf("subcommands: %q builds %q", c.name, cmd.Name())
		}
		got := newRootCmdFor([]string{c.name, "--help"}).Commands()
		if len(got) != 1 || got[0].Name() != c.name {
			t.Errorf("mcpolicy %s: root holds %d commands", c.name, len(got))
			continue
		}
		want, _, _ := all.Find([]string{c.name})
		if got[0].UsageString() != want.UsageString() {
			t.Errorf("mcpolicy %s --help differs when built alone:\n%s\nin the whole tree:\n%s", c.name, got[0].UsageString(), want.UsageString())
		}
	}
	for _, args := range [][]string{nil, {"help", "build"}, {"--version"}, {"buil"}, {"__complete", "b"}} {
		if n := len(newRootCmdFor(args).Commands()); n != len(subcommands) {
			t.Errorf("mcpolicy %v: root holds %d commands, want all %d", args, n, len(subcommands))
		}
	}
}

// TestLintClientConfig: the acceptance case through the CLI: a Claude
// Desktop entry running docker with the home folder mounted and a token
// inline is reported rule by rule, and lint exits 5.
func TestLintClientConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", "/Users/me")
	cfg := filepath.Join(dir, "claude_desktop_config.json")
	writeFile(t, cfg, `{
  "mcpServers": {
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-v", "/Users/me:/home/me", "-e", "GITHUB_TOKEN=ghp_x", "mcp/github"]
    }
  }
}
`)
	code, out, errs := run(t, "lint", "--no-policy", "--client", cfg)
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFindings, out, errs)
	}
	for _, want := range []string{
		":5:43: MOUNT_HOME error", ":5:71: SECRET_INLINE error", ":5:16: NETWORK_OPEN warning",
		":5:16: CONTAINER_UNHARDENED warning unhardened container, missing: --cap-drop ALL (CAP_DROP_MISSING)",
		"github (" + cfg + "): 2 grants, exposure 100, worst: error",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lint output lacks %q:\n%s", want, out)
		}
	}
	if code, _, _ := run(t, "lint", "--no-policy", "--client", cfg, "--fail-on", "never"); code != ExitOK {
		t.Errorf("--fail-on never: exit %d", code)
	}
	if code, out, _ := run(t, "rules", "--format", "markdown"); code != ExitOK || !strings.Contains(out, "## MOUNT_HOME") {
		t.Errorf("rules --format markdown: exit %d", code)
	}
}

// TestClientWriteAndCheck: client writes a managed entry into a JSONC file
// with comments; check finds no drift until the mount is hand-widened.
func TestClientWriteAndCheck(t *testing.T) {
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
	cfg := filepath.Join(dir, ".vscode", "mcp.json")
	writeFile(t, cfg, "{\n  // mine\n  \"servers\": {\"other\": {\"command\": \"uvx\", \"args\": [\"x\"]},},\n}\n")
	// The engine entry pins the built artefact.
	if code, out, errs := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "client", "vscode", "-p", dir); code != ExitOK || !strings.Contains(out, "+") || !strings.Contains(errs, "nothing written") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errs)
	}
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	code, out, errs := run(t, "client", "vscode", "-p", dir, "--write")
	if code != ExitOK {
		t.Fatalf("write: exit %d\n%s%s", code, out, errs)
	}
	// The replaced bytes are kept outside the project, and the message
	// says where.
	if _, err := os.Stat(cfg + ".mcpolicy.bak"); err == nil {
		t.Errorf("a backup beside the file, in the project")
	}
	gens, _ := entry.Generations(filepath.Join(state, "mcpolicy"), cfg)
	if len(gens) != 1 || !strings.Contains(out, gens[0]) {
		t.Errorf("backups %v, output:\n%s", gens, out)
	} else if b, _ := os.ReadFile(gens[0]); !strings.Contains(string(b), "// mine") || strings.Contains(string(b), "code-index") {
		t.Errorf("the backup is not the file as it was:\n%s", b)
	}
	if len(gens) == 1 {
		fi, err1 := os.Lstat(gens[0])
		di, err2 := os.Lstat(filepath.Dir(gens[0]))
		if rel, _ := filepath.Rel(dir, gens[0]); !strings.HasPrefix(rel, "..") || err1 != nil || err2 != nil ||
			fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 || !fi.Mode().IsRegular() {
			t.Errorf("backup %s: want a 0600 file in a 0700 folder outside the project %s (%v %v)", gens[0], dir, fi, di)
		}
	}
	written, _ := os.ReadFile(cfg)
	if code, out, errs := run(t, "client", "vscode", "-p", dir, "--restore"); code != ExitOK || !strings.Contains(out, "restored") || !strings.Contains(out, gens[0]) {
		t.Fatalf("restore: exit %d\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(cfg); strings.Contains(string(b), "code-index") {
		t.Errorf("not restored:\n%s", b)
	}
	writeFile(t, cfg, string(written))
	if code, out, _ := run(t, "check", "-p", dir); code != ExitOK || !strings.Contains(out, "no drift") {
		t.Fatalf("check after write: exit %d\n%s", code, out)
	}
	b, _ := os.ReadFile(cfg)
	writeFile(t, cfg, strings.Replace(string(b), "target=/workspace,readonly", "target=/workspace", 1))
	code, out, _ = run(t, "check", "-p", dir)
	if code != ExitWidened || !strings.Contains(out, `entry "code-index" widened MOUNT_RW`) {
		t.Errorf("check after a hand edit: exit %d\n%s", code, out)
	}
}

// fakeLauncher puts an executable named mcpolicy-launch on PATH: entries
// name it, and these tests do not start them.
func fakeLauncher(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	l := filepath.Join(bin, "mcpolicy-launch")
	writeFile(t, l, "#!/bin/sh\nexit 1\n")
	if err := os.Chmod(l, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return l
}
