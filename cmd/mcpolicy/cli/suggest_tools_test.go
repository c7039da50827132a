package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// TestSuggestTools: from the server's launch log (its default place, and
// --from-log), the tool refused by the allow list is proposed by its
// exact name as a patch of tools.allow; the deny and the argument
// constraint that refused the others are named with their fields, and
// nothing of them is patched; --write applies it, and then nothing is
// left to suggest.
func TestSuggestTools(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(dir, 0o755)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("HOME", t.TempDir())
	policy := `version: "v1"
servers: memory: {
	image: "m:1"
	tools: {
		allow: ["read_graph", "search_*", "read_file"]
		deny: ["delete_*"]
		args: read_file: path: {under: ["/workspace"]}
	}
}
`
	file := filepath.Join(dir, "mcpolicy.cue")
	os.WriteFile(file, []byte(policy), 0o644)
	fixture, err := os.ReadFile("../../../evidence/suggest/testdata/launch-tools.log")
	if err != nil {
		t.Fatal(err)
	}
	logFile := launchlog.Path(filepath.Join(state, "mcpolicy"), dir, "memory")
	os.MkdirAll(filepath.Dir(logFile), 0o700)
	os.WriteFile(logFile, fixture, 0o600)
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Run(append([]string{"suggest", "-p", dir}, args...), &out, &errb)
		return out.String(), errb.String(), code
	}
	for _, args := range [][]string{nil, {"--from-log", logFile}} {
		out, stderr, code := run(args...)
		if code != 0 || !strings.Contains(out, `+		allow: ["read_graph", "search_*", "read_file", "create_entities"]`) {
			t.Errorf("suggest %v: exit %d\n%s%s", args, code, out, stderr)
		}
		for _, want := range []string{
			`suggested: tool create_entities, by its exact name (2 calls refused`,
			`not suggested: tool "delete_entities" (1 decision): denied by servers.memory.tools.deny[0] ("delete_*"): suggest never removes a deny`,
			`not suggested: tool "read_file" argument "path" (1 decision): the path is not under servers.memory.tools.args.read_file.path.under ["/workspace"]`,
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("suggest %v: no %q in:\n%s", args, want, stderr)
			}
		}
		if strings.Contains(stderr, "not decisions") {
			t.Errorf("suggest %v: the launch log's lines were taken for a server's output:\n%s", args, stderr)
		}
		if b, _ := os.ReadFile(file); string(b) != policy {
			t.Errorf("the policy changed without --write")
		}
	}
	if _, stderr, code := run("--write"); code != 0 {
		t.Fatalf("--write: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), `allow: ["read_graph", "search_*", "read_file", "create_entities"]`) {
		t.Errorf("--write wrote:\n%s", b)
	}
	out, stderr, code := run()
	if code != 0 || out != "" || !strings.Contains(stderr, "nothing to allow for memory") {
		t.Errorf("after --write: exit %d\n%s%s", code, out, stderr)
	}
}
