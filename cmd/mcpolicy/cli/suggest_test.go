package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
