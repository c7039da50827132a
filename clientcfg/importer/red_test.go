package importer

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/mcpolicy/mcpolicy/clientcfg"
)

// redHome is a home folder with a project (a docs folder, a link to
// ~/.ssh and one to the home) whose .mcp.json is hostile: entries is its
// mcpServers object. It returns the servers import makes of it.
func redHome(t *testing.T, entries string) (string, []Server) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	proj := filepath.Join(home, "proj")
	for _, d := range []string{filepath.Join(proj, "docs"), filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("KEY"), 0o600)
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(proj, "keys"))
	os.Symlink(home, filepath.Join(proj, "up"))
	cfg := filepath.Join(proj, ".mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {`+strings.ReplaceAll(entries, "$HOME", home)+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := clientcfg.ReadLaunches(cfg, clientcfg.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	return home, Import(ls, Options{Home: home, Path: "/usr/bin:/bin"})
}

// TestRedImportWidePaths (red team): an argument, env value or engine
// mount written to look narrow, which resolves here to the root, the
// home, the folder of homes or a credential store (a ./x/../.., a
// client variable followed by .., a symlink in the project), imports
// nothing, as the same path written plainly does; a narrow one still
// imports.
func TestRedImportWidePaths(t *testing.T) {
	_, servers := redHome(t, `
		"dotdot": {"command": "/bin/cat", "args": ["./docs/../.."]},
		"upup": {"command": "/bin/cat", "args": ["${workspaceFolder}/../.."]},
		"linkssh": {"command": "/bin/cat", "args": ["./keys"]},
		"linkhome": {"command": "/bin/cat", "args": ["./up/proj/../"]},
		"envpath": {"command": "/bin/cat", "env": {"DATA_DIR": "./docs/../../.ssh"}},
		"dockhome": {"command": "docker", "args": ["run", "-i", "--rm", "-v", "./..:/data", "img:1"]},
		"dockroot": {"command": "docker", "args": ["run", "-i", "--rm", "-v", "/:/host:ro", "img:1"]},
		"dockssh": {"command": "docker", "args": ["run", "-i", "--rm", "-v", "$HOME/.ssh:/k:ro", "img:1"]},
		"narrow": {"command": "/bin/cat", "args": ["./docs"]}`)
	for _, s := range servers {
		if s.Entry == "narrow" {
			if s.Policy == nil || len(s.Policy.Mounts) != 1 {
				t.Errorf("narrow: %+v, want one mount (./docs)", s)
			}
			continue
		}
		if s.Policy != nil {
			t.Errorf("%s: imported with mounts %+v; want it skipped as too wide", s.Entry, s.Policy.Mounts)
		} else if !strings.Contains(s.Skipped, "too wide") {
			t.Errorf("%s: skipped for another reason: %s", s.Entry, s.Skipped)
		}
	}
}

// TestRedImportDropsSockets (red team): an engine entry's mount of a
// socket (the engine's own, say) is not granted: the note that says it
// is dropped is true.
func TestRedImportDropsSockets(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "engine.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skip(err)
	}
	defer l.Close()
	_, servers := redHome(t, `"dock": {"command": "docker", "args": ["run", "-i", "--rm", "-v", "`+sock+`:/var/run/docker.sock", "img:1"]}`)
	if p := servers[0].Policy; p == nil || len(p.Mounts) != 0 {
		t.Fatalf("the socket is granted: %+v", servers[0])
	}
}

// TestRedImportInjection (red team): names, arguments and env values
// carrying CUE syntax (quotes, backslashes, newlines, \(interpolation),
// """, // and /* */ comments, a closing brace) stay data: the policy is
// one server whose command and setenv values are the entry's bytes.
func TestRedImportInjection(t *testing.T) {
	nasty := []string{"a\"}\nservers: evil: {command: [\"sh\"]}\n//", `b\(x)`, `"""`, "// c", "/* d", "e}\n}", "f\r\\", "\u2028g"}
	words := `"/bin/cat"`
	env := `"PLAIN": "v"`
	for i, n := range nasty {
		q := quote(n)
		words += ", " + q
		env += `, "V` + string(rune('A'+i)) + `": ` + q
	}
	_, servers := redHome(t, `"x\"}\nservers: evil: {command: [\"sh\"]} // \\(y)": {"command": "/bin/cat", "args": [`+words[len(`"/bin/cat", `):]+`], "env": {`+env+`}}`)
	s := servers[0]
	if s.Policy == nil {
		t.Fatalf("skipped: %s", s.Skipped)
	}
	src := s.Policy.Render()
	v := cuecontext.New().CompileBytes(src)
	if v.Err() != nil {
		t.Fatalf("the policy is not CUE: %v\n%s", v.Err(), src)
	}
	it, err := v.LookupPath(cue.ParsePath("servers")).Fields()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for it.Next() {
		names = append(names, it.Selector().Unquoted())
		var cmd []string
		if err := it.Value().LookupPath(cue.ParsePath("command")).Decode(&cmd); err != nil {
			t.Fatal(err)
		}
		if strings.Join(cmd[1:], "\x00") != strings.Join(nasty, "\x00") {
			t.Errorf("command %q, want /bin/cat %q", cmd, nasty)
		}
		set := map[string]string{}
		it.Value().LookupPath(cue.ParsePath("setenv")).Decode(&set)
		for i, n := range nasty {
			if k := "V" + string(rune('A'+i)); set[k] != n {
				t.Errorf("setenv %s = %q, want %q", k, set[k], n)
			}
		}
	}
	if len(names) != 1 || strings.ContainsAny(names[0], "\"\n/\\ ") {
		t.Errorf("servers %q, want one, named safely:\n%s", names, src)
	}
}

// TestRedImportNameIsNoPath (red team): an entry named as a path, or
// with nothing but dots, names a policy file inside mcpolicy.d.
func TestRedImportNameIsNoPath(t *testing.T) {
	for _, name := range []string{"../../x", "/etc/passwd", "..", ".", "a/../../b", `..\..\c`, "", "\x00", strings.Repeat("../", 40)} {
		f := PolicyFile("/p", ServerName(name))
		if filepath.Dir(f) != "/p/mcpolicy.d" || strings.HasPrefix(filepath.Base(f), ".") {
			t.Errorf("entry %q: policy file %s", name, f)
		}
	}
}

// TestRedImportEnvFileSymlink (red team): an env file that is a symlink
// (to a user's file) is not written through, and the file it points to
// keeps every byte.
func TestRedImportEnvFileSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "bashrc")
	os.WriteFile(victim, []byte("export A=1\n"), 0o644)
	env := filepath.Join(dir, "env")
	os.Symlink(victim, env)
	if _, err := AddSecrets(env, []Secret{{"TOKEN", "sk-abcdefghijklmnopqrstuvwxyz012345"}}, "test"); err == nil {
		t.Error("AddSecrets wrote through a symlinked env file")
	}
	if b, _ := os.ReadFile(victim); string(b) != "export A=1\n" {
		t.Errorf("the linked file changed: %q", b)
	}
}

// TestRedImportSecretsNotCopied (red team): values the client reader
// does not call secret but that are (a DB_PASS, a session cookie, a
// webhook URL, a Sentry DSN), in an entry's env or a docker -e, go to the
// env file, never into the policy; a plain constant stays a setenv value.
func TestRedImportSecretsNotCopied(t *testing.T) {
	vals := map[string]string{"DB_PASS": "hunter2", "COOKIE": "session=abcdef0123456789",
		"SLACK_WEBHOOK": "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
		"SENTRY_DSN":    "https://abc@o1.ingest.sentry.io/1"}
	env := `"LOG_LEVEL": "debug"`
	dash := ""
	for k, v := range vals {
		env += `, "` + k + `": "` + v + `"`
		dash += `"-e", "` + k + `=` + v + `", `
	}
	_, servers := redHome(t, `"host": {"command": "/bin/cat", "env": {`+env+`}},
		"dock": {"command": "docker", "args": ["run", "-i", "--rm", `+dash+`"img:1"]}`)
	for _, s := range servers {
		if s.Policy == nil {
			t.Fatalf("%s: skipped: %s", s.Entry, s.Skipped)
		}
		src := string(s.Policy.Render())
		for k, v := range vals {
			if strings.Contains(src, v) || strings.Contains(strings.Join(s.Policy.GrantLines(), "\n"), v) {
				t.Errorf("%s: the value of %s is in the policy or the report:\n%s", s.Entry, k, src)
			}
		}
		if len(s.Secrets) != len(vals) {
			t.Errorf("%s: %d secrets for the env file, want %d", s.Entry, len(s.Secrets), len(vals))
		}
	}
	if !strings.Contains(string(servers[0].Policy.Render()), `"LOG_LEVEL": "debug"`) {
		t.Errorf("a plain constant is no setenv value any more:\n%s", servers[0].Policy.Render())
	}
}
