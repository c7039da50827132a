package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/exitcode"
)

// TestEnvFileFolderMounted: the red team's project. s1 takes TOK from the
// env file (claude-desktop passes no environment); s2 mounts the file's
// folder, ~/.config/mcpolicy, read-write (which does not build), or
// ~/.config read-only (which builds: lint's MOUNT_CREDENTIALS error, as
// for every credential store). Either way no client entry is written for
// s1: s2 would read every server's secrets, or rewrite what s1's next
// launch gets.
func TestEnvFileFolderMounted(t *testing.T) {
	for _, mount := range []string{
		`{source: "~/.config/mcpolicy", target: "/c", mode: "rw"}`,
		`{source: "~/.config", target: "/c"}`,
	} {
		builds := strings.Contains(mount, `"~/.config"`)
		dir, home := t.TempDir(), t.TempDir()
		t.Setenv("HOME", home)
		t.Setenv("XDG_CONFIG_HOME", "")
		fakeLauncher(t)
		env := filepath.Join(home, ".config", "mcpolicy", "env")
		writeFile(t, env, "TOK=real-secret\n")
		os.Chmod(env, 0o600)
		writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: s1: {
	image: "s1:1"
	backends: ["docker"]
	env: ["TOK"]
}
servers: s2: {
	image: "s2:1"
	backends: ["docker"]
	mounts: [`+mount+`]
}
`)
		if code, out, errs := run(t, "build", dir); builds && code != ExitOK ||
			!builds && (code != ExitInvalid || !strings.Contains(errs, `servers.s2.mounts[0].source: host path`) || !strings.Contains(errs, `~/.config/mcpolicy, the folder of the env file`)) {
			t.Errorf("%s: build: exit %d\n%s%s", mount, code, out, errs)
		}
		cfg := filepath.Join(t.TempDir(), "claude_desktop_config.json")
		writeFile(t, cfg, "{}\n")
		if code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--file", cfg, "--write"); code == ExitOK {
			t.Errorf("%s: client: exit %d\n%s%s", mount, code, out, errs)
		}
		unchanged(t, cfg, "{}\n")
	}
}

// TestEnvFileInAnotherServersGrant: an env file named elsewhere (--env-file)
// that lies in another server's grant, here read-only, is refused by
// `mcpolicy client`, naming the file and the server, and reported by
// `mcpolicy check` in an entry that names it.
func TestEnvFileInAnotherServersGrant(t *testing.T) {
	dir, home, secrets := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	fakeLauncher(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: s1: {
	image: "s1:1"
	backends: ["docker"]
	env: ["TOK"]
}
servers: s2: {
	image: "s2:1"
	backends: ["docker"]
	mounts: [{source: "`+secrets+`", target: "/s"}]
}
`)
	bad, good := filepath.Join(secrets, "env"), filepath.Join(home, "mcp.env")
	for _, f := range []string{bad, good} {
		writeFile(t, f, "TOK=real-secret\n")
		os.Chmod(f, 0o600)
	}
	if code, out, errs := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, out, errs)
	}
	cfg := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	writeFile(t, cfg, "{}\n")
	want := `the env file ` + bad + ` lies inside ` + secrets + `, which server "s2" is given read-only: it could read every server's secrets in it`
	code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--file", cfg, "--env-file", bad, "--write")
	if code != ExitInvalid || !strings.Contains(errs, want) {
		t.Errorf("client: exit %d\n%s%s\nwant %q", code, out, errs, want)
	}
	unchanged(t, cfg, "{}\n")

	if code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--file", cfg, "--env-file", good, "--write"); code != ExitOK {
		t.Fatalf("client, a good env file: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "check", "-p", dir, "--client", cfg); code != ExitOK {
		t.Errorf("check, a good env file: exit %d\n%s%s", code, out, errs)
	}
	b, _ := os.ReadFile(cfg)
	writeFile(t, cfg, strings.ReplaceAll(string(b), good, bad))
	code, out, errs = run(t, "check", "-p", dir, "--client", cfg)
	if code != exitcode.Widened || !strings.Contains(out, want) {
		t.Errorf("check, the file in s2's grant: exit %d\n%s%s\nwant %q", code, out, errs, want)
	}
	// run and exec start s1 alone, and refused it all the same: a fourth
	// red team's s1 read TOK from s2's grant through them. (Refused before
	// anything starts: no engine or kernel needed.)
	for _, cmd := range [][]string{
		{"run", "-p", dir, "--server", "s1", "--backend", "docker", "--env-file", bad},
		{"exec", "-p", dir, "--server", "s1", "--env-file", bad},
	} {
		if code, out, errs := run(t, cmd...); code == ExitOK || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d\n%s%s\nwant %q", cmd[0], code, out, errs, want)
		}
	}
}

// TestEnvFileRefusedAtWrite: `client --write` refuses, exit 2, the env file
// the launcher would refuse at spawn — where the MCP client shows only
// that the server closed — and says why; a file not created yet is named
// with the command that creates it.
func TestEnvFileRefusedAtWrite(t *testing.T) {
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
	real := filepath.Join(home, "real.env")
	writeFile(t, real, "TOK=x\n")
	os.Chmod(real, 0o600)
	for _, tc := range []struct {
		name    string
		prepare func(f string)
		code    int
		want    string
	}{
		{"in the project", nil, ExitInvalid, "lies inside"},
		{"mode 644", func(f string) { writeFile(t, f, "TOK=x\n"); os.Chmod(f, 0o644) }, ExitInvalid, "can be read or written by others (mode 0644): run `chmod 600"},
		{"mode 640", func(f string) { writeFile(t, f, "TOK=x\n"); os.Chmod(f, 0o640) }, ExitInvalid, "claude-desktop would show only that the server closed"},
		{"symlink", func(f string) { os.Symlink(real, f) }, ExitInvalid, "symlink"},
		{"hard link", func(f string) { os.Link(real, f) }, ExitInvalid, "hard links"},
		{"not yet", func(string) {}, ExitOK, "does not exist yet"},
		{"good", func(f string) { writeFile(t, f, "TOK=x\n"); os.Chmod(f, 0o600) }, ExitOK, "takes TOK from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "env")
			if tc.prepare == nil {
				f = filepath.Join(dir, "env")
				writeFile(t, f, "TOK=x\n")
				os.Chmod(f, 0o600)
			} else {
				tc.prepare(f)
			}
			cfg := filepath.Join(t.TempDir(), "claude_desktop_config.json")
			writeFile(t, cfg, "{}\n")
			code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--file", cfg, "--env-file", f, "--write")
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, want %d and %q\n%s%s", code, tc.code, tc.want, out, errs)
			}
			if code != ExitOK {
				unchanged(t, cfg, "{}\n")
			}
		})
	}
}
