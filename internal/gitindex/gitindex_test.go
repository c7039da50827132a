package gitindex_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/gitindex"
)

// files share prefixes, so that version 4's prefix compression is used.
var files = []string{"README.md", "src/a.py", "src/ab.py", "src/pkg/__init__.py", "src/pkg/mod.py", "z/very/deep/name with space.txt"}

func repo(t *testing.T, args ...[]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git makes the fixtures: not installed")
	}
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range append([][]string{{"init", "-q"}, {"add", "-A"}}, args...) {
		cmd := exec.Command("git", a...)
		cmd.Dir, cmd.Env = dir, []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + dir}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
	return dir
}

// TestVersions: each version git writes reads back as the same paths.
func TestVersions(t *testing.T) {
	want := map[string]uint32{}
	for _, f := range files {
		want[f] = 0o100644
	}
	for name, args := range map[string][][]string{
		"v2": {{"update-index", "--index-version", "2"}},
		// skip-worktree is an extended flag: git writes version 3.
		"v3": {{"update-index", "--index-version", "2"}, {"update-index", "--skip-worktree", "src/a.py"}},
		"v4": {{"update-index", "--index-version", "4"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := repo(t, args...)
			idx, err := gitindex.Of(dir)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(idx)
			if err != nil {
				t.Fatal(err)
			}
			if v := int(b[7]); "v"+string(rune('0'+v)) != name {
				t.Fatalf("git wrote version %d, want %s", v, name)
			}
			got, err := gitindex.Read(idx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// TestWorktreeFile: a .git file names the git directory whose index it is.
func TestWorktreeFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: ../elsewhere/.git/worktrees/w\n"), 0o644)
	got, err := gitindex.Of(dir)
	if want := filepath.Join(filepath.Dir(dir), "elsewhere/.git/worktrees/w/index"); err != nil || got != want {
		t.Errorf("Of = %q, %v; want %q", got, err, want)
	}
}

// TestBroken: a truncated or foreign file is an error, never a partial
// list: the caller must know its filter failed.
func TestBroken(t *testing.T) {
	dir := repo(t)
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"truncated": b[:len(b)/2], "empty": nil, "foreign": []byte("not an index at all, but long enough"),
		"version 5": append(append(append([]byte{}, b[:7]...), 5), b[8:]...),
	} {
		if _, err := gitindex.Parse(data, 20); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestModes: each path comes with the mode git recorded: an executable
// and a symlink are told from a plain file.
func TestModes(t *testing.T) {
	dir := repo(t)
	os.Chmod(filepath.Join(dir, "src/a.py"), 0o755)
	os.Symlink("a.py", filepath.Join(dir, "src/link"))
	cmd := exec.Command("git", "add", "-A")
	cmd.Dir, cmd.Env = dir, []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + dir}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git add: %v\n%s", err, out)
	}
	got, err := gitindex.Read(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]uint32{"README.md": 0o100644, "src/a.py": 0o100755, "src/link": 0o120000} {
		if got[p] != want {
			t.Errorf("%s: mode %o, want %o", p, got[p], want)
		}
	}
}
