package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRootFromEnv(t *testing.T) {
	env := map[string]string{"CLAUDE_PROJECT_DIR": "/p/q/"}
	root, err := RootFromEnv("CLAUDE_PROJECT_DIR", func(k string) string { return env[k] })
	if err != nil || root != "/p/q" {
		t.Fatalf("got %q, %v", root, err)
	}
	for _, v := range []string{"", "rel/dir"} {
		env["CLAUDE_PROJECT_DIR"] = v
		if _, err := RootFromEnv("CLAUDE_PROJECT_DIR", func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "2.1.141") {
			t.Errorf("%q: want a refusal naming the client version, got %v", v, err)
		}
	}
	if got := rootedPins("/r", []string{"./bin/x=sha256:ab", "/abs/y=sha256:cd"}); got[0] != "/r/bin/x=sha256:ab" || got[1] != "/abs/y=sha256:cd" {
		t.Errorf("rootedPins: %q", got)
	}
	if UnderRoot("/r", "./.mcpolicy/bwrap/s.json") != "/r/.mcpolicy/bwrap/s.json" || UnderRoot("/r", "/x") != "/x" {
		t.Error("UnderRoot")
	}
}

// TestProgramsOutsideGrants: a launcher (or a PATH folder) in any
// server's read-write grant is refused, named with the grant and the
// server; one outside passes; no plan at all is an error, not a pass.
func TestProgramsOutsideGrants(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	out := filepath.Join(root, ".mcpolicy")
	art := filepath.Join(out, "bwrap", "a.json")
	if _, err := ProjectWritable(art, root, home); err == nil {
		t.Fatal("no plans: want an error")
	}
	os.MkdirAll(filepath.Join(out, "plan"), 0o755)
	os.WriteFile(filepath.Join(out, "plan", "a.json"), []byte(`{"server":"a","mounts":[{"source":{"path":"."},"target":"/w","mode":"ro"}]}`), 0o644)
	os.WriteFile(filepath.Join(out, "plan", "b.json"), []byte(`{"server":"b","mounts":[{"source":{"base":"HOME","path":"shared"},"target":"/s","mode":"rw"},{"source":{"base":"PROJECT_ROOT","path":"data"},"target":"/d","mode":"rw"}]}`), 0o644)
	w, err := ProjectWritable(art, root, home)
	if err != nil || len(w) != 2 || w[filepath.Join(home, "shared")] != "b" {
		t.Fatalf("writable %v, %v", w, err)
	}
	ok := []Program{{"the launcher", "/usr/local/bin/mcpolicy-launch"}, {"bwrap", ""}}
	if err := ProgramsOutsideGrants(ok, w); err != nil {
		t.Fatal(err)
	}
	var te *TamperError
	bad := append(ok, Program{"the PATH folder", filepath.Join(home, "shared", "bin")})
	if err := ProgramsOutsideGrants(bad, w); !errors.As(err, &te) || !strings.Contains(err.Error(), `server "b"`) {
		t.Fatalf("want a TamperError naming server b, got %v", err)
	}
	// Reached through a link: still inside.
	os.MkdirAll(filepath.Join(root, "data"), 0o755)
	link := filepath.Join(t.TempDir(), "bin")
	os.Symlink(filepath.Join(root, "data"), link)
	if err := ProgramsOutsideGrants([]Program{{"the launcher", filepath.Join(link, "mcpolicy-launch")}}, w); !errors.As(err, &te) {
		t.Fatalf("through a link: want a TamperError, got %v", err)
	}
}
