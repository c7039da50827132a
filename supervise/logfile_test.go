package supervise_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/supervise"
)

// TestOpenLogOutsideWritableGrants: `mcpolicy run --log` is refused inside
// a folder the server may write (named directly, or through a symlink to
// it), where the server could plant a link to the user's ~/.bashrc or
// forge denials; beside a read-only grant and outside every grant it is
// appended to. The red team's attack: the server leaves egress.jsonl ->
// ~/.bashrc in the project it writes, and the next run appends to it.
func TestOpenLogOutsideWritableGrants(t *testing.T) {
	root := t.TempDir()
	proj, home, ro := filepath.Join(root, "proj"), filepath.Join(root, "home"), filepath.Join(root, "docs")
	for _, d := range []string{proj, home, ro} {
		os.Mkdir(d, 0o755)
	}
	bashrc := filepath.Join(home, ".bashrc")
	os.WriteFile(bashrc, []byte("alias ll='ls -l'\n"), 0o600)
	os.Symlink(bashrc, filepath.Join(proj, "egress.jsonl")) // what the server left
	os.Symlink(proj, filepath.Join(root, "proj-link"))

	p := &compiler.Plan{Server: "s", Mounts: []compiler.Mount{
		{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/workspace", Mode: compiler.ReadWrite},
		{Source: compiler.HostPath{Rel: ro}, Target: "/docs", Mode: compiler.ReadOnly},
	}}
	m := compiler.Machine{ProjectRoot: proj, Home: home}
	for _, bad := range []string{
		filepath.Join(proj, "egress.jsonl"),
		filepath.Join(proj, "sub", "new.jsonl"),
		filepath.Join(root, "proj-link", "egress.jsonl"),
	} {
		if f, err := supervise.OpenLog(bad, p, m); err == nil || !strings.Contains(err.Error(), "which server s may write") {
			t.Errorf("%s: %v", bad, err)
			if f != nil {
				f.Close()
			}
		}
	}
	if b, _ := os.ReadFile(bashrc); string(b) != "alias ll='ls -l'\n" {
		t.Errorf("~/.bashrc was written: %q", b)
	}
	for _, ok := range []string{filepath.Join(root, "decisions.jsonl"), filepath.Join(ro, "decisions.jsonl")} {
		f, err := supervise.OpenLog(ok, p, m)
		if err != nil {
			t.Errorf("%s: %v", ok, err)
			continue
		}
		f.Close()
	}
}
