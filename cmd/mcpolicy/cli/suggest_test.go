package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// TestSuggest: the patch is printed and the file left alone unless
// --write; a policy with two egress servers needs --server; a private
// address is suggested only when named.
func TestSuggest(t *testing.T) {
	dir := t.TempDir()
	policy := `version: "v1"
servers: a: {
	image: "a:1"
	network: allow: ["api.test:443"]
}
servers: b: {
	image: "b:1"
	network: allow: ["api.test:443"]
}
`
	file := filepath.Join(dir, "mcpolicy.cue")
	os.WriteFile(file, []byte(policy), 0o644)
	log := filepath.Join(dir, "decisions.jsonl")
	os.WriteFile(log, []byte(`{"time":"t","action":"deny","method":"GET","host":"10.0.0.5","port":8080,"reason":"not in the allowlist","bytesUp":0,"bytesDown":0}
{"time":"t","action":"deny","method":"CONNECT","host":"evil.test","port":443,"reason":"not in the allowlist","bytesUp":0,"bytesDown":0}
`), 0o644)
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Run(append([]string{"suggest", "-p", dir, "--from-log", log}, args...), &out, &errb)
		return out.String(), errb.String(), code
	}
	if _, stderr, code := run(); code != ExitError || !strings.Contains(stderr, "give --server") {
		t.Errorf("two egress servers, no --server: exit %d: %s", code, stderr)
	}
	out, stderr, code := run("--server", "b")
	if code != 0 || !strings.Contains(out, `+	network: allow: ["api.test:443", "evil.test:443"]`) || strings.Contains(out, "10.0.0.5") ||
		!strings.Contains(stderr, "--allow-private 10.0.0.5") {
		t.Errorf("--server b: exit %d\n%s%s", code, out, stderr)
	}
	if b, _ := os.ReadFile(file); string(b) != policy {
		t.Errorf("the policy changed without --write")
	}
	out, stderr, code = run("--server", "b", "--allow-private", "10.0.0.5", "--write")
	if code != 0 || !strings.Contains(out, `["api.test:443", "10.0.0.5:8080", "evil.test:443"]`) {
		t.Errorf("--allow-private --write: exit %d\n%s%s", code, out, stderr)
	}
	b, _ := os.ReadFile(file)
	if want := strings.Replace(policy, `image: "b:1"
	network: allow: ["api.test:443"]`, `image: "b:1"
	network: allow: ["api.test:443", "10.0.0.5:8080", "evil.test:443"]`, 1); string(b) != want {
		t.Errorf("--write wrote:\n%s\nwant:\n%s", b, want)
	}
	// Applied: nothing left to suggest.
	out, stderr, code = run("--server", "b")
	if code != 0 || out != "" || !strings.Contains(stderr, "allowed now by") || !strings.Contains(stderr, "nothing to suggest") {
		t.Errorf("after --write: exit %d\n%s%s", code, out, stderr)
	}
}

// TestSuggestRedteamLog: a log a hostile server wrote into (its stderr
// is the log without --log): terminal escapes and bidi overrides in every
// field, a zone carrying policy syntax, a line too long for any buffer,
// a line left without its newline. suggest prints nothing a terminal
// acts on, suggests only the exact destinations, hides none the proxy
// logged, and leaves the policy byte for byte (and no file beside it)
// unless --write.
func TestSuggestRedteamLog(t *testing.T) {
	dir := t.TempDir()
	policy := "version: \"v1\"\nservers: a: {\n\timage: \"a:1\"\n\tnetwork: allow: [\"api.test:443\"]\n}\n"
	file := filepath.Join(dir, "mcpolicy.cue")
	os.WriteFile(file, []byte(policy), 0o644)
	logFile := filepath.Join(t.TempDir(), "decisions.jsonl")
	lines := []string{
		`{"action":"deny","method":"GET\u001b[2J\u001b[1;1H","host":"esc.test","port":443,"reason":"not in the allowlist"}`,
		`{"action":"deny","requested":"\u001b]0;owned\u0007a\u202egnp.test","reason":"not a host name: \u001b[31m","denied":"\u009b2J"}`,
		`{"action":"deny","host":"2606:4700::1%\"],mounts:[{source:\"/\",target:\"/h\"}],x:[\"","port":443,"reason":"not in the allowlist"}`,
		`{"action":"deny","host":"up.test","port":443,"rule":"\u2066up.test:443","reason":"upstream: \u001b[2K"}`,
		strings.Repeat("z", 2<<20),
		"partial " + `{"time":"t","action":"deny","method":"CONNECT","host":"real.test","port":443,"reason":"not in the allowlist","bytesUp":0,"bytesDown":0}`,
	}
	os.WriteFile(logFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	var out, errb bytes.Buffer
	code := Run([]string{"suggest", "-p", dir, "--from-log", logFile}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, s := range []string{out.String(), errb.String()} {
		if i := strings.IndexFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && !unicode.IsPrint(r) }); i >= 0 {
			t.Errorf("output holds %q: %q", s[i:min(len(s), i+20)], s)
		}
	}
	if !strings.Contains(out.String(), `network: allow: ["api.test:443", "esc.test:443", "real.test:443"]`) || strings.Count(out.String(), "\n+") != 2 {
		t.Errorf("patch:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "warning: "+logFile+": 2 lines are not decisions") {
		t.Errorf("no warning that the log is shared:\n%s", errb.String())
	}
	if b, _ := os.ReadFile(file); string(b) != policy {
		t.Errorf("the policy changed without --write")
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("files beside the policy: %v", es)
	}
}

// TestSuggestDefaultLog: without --from-log suggest reads the server's
// own log (mcpolicy run's default), says when there is none yet, and
// refuses one a server of the project may write (it could have forged
// it); a log named inside such a grant is read with a warning.
func TestSuggestDefaultLog(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	t.Setenv("XDG_STATE_HOME", state)
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(filepath.Join(proj, "data"), 0o755)
	policy := `version: "v1"
servers: a: {
	image: "a:1"
	network: allow: ["api.test:443"]
	mounts: [{source: "data", target: "/data", mode: "rw"}]
}
`
	os.WriteFile(filepath.Join(proj, "mcpolicy.cue"), []byte(policy), 0o644)
	denial := `{"time":"t","action":"deny","method":"CONNECT","host":"evil.test","port":443,"reason":"not in the allowlist","bytesUp":0,"bytesDown":0}` + "\n"
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Run(append([]string{"suggest", "-p", proj}, args...), &out, &errb)
		return out.String(), errb.String(), code
	}
	if _, stderr, code := run(); code != ExitError || !strings.Contains(stderr, "has no decision log yet") {
		t.Errorf("no log yet: exit %d: %s", code, stderr)
	}
	path, err := supervise.DefaultLog("a", proj)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(denial), 0o600)
	if out, stderr, code := run(); code != 0 || !strings.Contains(out, "evil.test:443") {
		t.Errorf("the default log: exit %d\n%s%s", code, out, stderr)
	}
	planted := filepath.Join(proj, "data", "decisions.jsonl")
	os.WriteFile(planted, []byte(denial), 0o644)
	if out, stderr, code := run("--from-log", planted); code != 0 || !strings.Contains(stderr, "which a server of this project may write") || !strings.Contains(out, "evil.test:443") {
		t.Errorf("a log in a read-write grant: exit %d\n%s%s", code, out, stderr)
	}
}
