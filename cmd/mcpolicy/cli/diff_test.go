package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
)

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

const basePolicy = `version: "v1"
servers: indexer: {
	image: "indexer:1"
	mounts: [
		{source: "shop", target: "/workspace"},
		{source: "docs", target: "/docs"},
	]
}
`

var movedPolicy = strings.NewReplacer(`"shop"`, `"../shop"`, `"docs"`, `"../docs"`).Replace(basePolicy)

// TestDiffAgainstGit walks a repository through commits that widen, one
// thing at a time, and through ones that change nothing that confines.
func TestDiffAgainstGit(t *testing.T) {
	repo := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	gitRun(t, repo, "init", "-q")
	os.MkdirAll(filepath.Join(repo, "shop"), 0o755)
	os.MkdirAll(filepath.Join(repo, "docs"), 0o755)
	commit := func(policyFile, content, msg string) {
		t.Helper()
		writeFile(t, filepath.Join(repo, policyFile), content)
		gitRun(t, repo, "add", "-A")
		gitRun(t, repo, "commit", "-q", "--allow-empty", "-m", msg)
	}
	commit("mcpolicy.cue", basePolicy, "base")

	steps := []struct {
		name, file, content string
		code                int
		want                []string
	}{
		{"ro to rw", "mcpolicy.cue", strings.Replace(basePolicy, `target: "/workspace"}`, `target: "/workspace", mode: "rw"}`, 1), ExitWidened,
			[]string{"mcpolicy.cue:5:3: indexer WIDENED MOUNT_RW: mount /workspace: ro -> rw (was HEAD~1:mcpolicy.cue:5:3)"}},
		{"mount to its parent", "mcpolicy.cue", strings.Replace(basePolicy, `source: "shop"`, `source: "."`, 1), ExitWidened,
			[]string{"WIDENED MOUNT_MOVED_UP: mount /workspace moved up: ${PROJECT_ROOT}/shop -> ${PROJECT_ROOT}"}},
		{"env name", "mcpolicy.cue", strings.Replace(basePolicy, `image: "indexer:1"`, `image: "indexer:1"`+"\n\tenv: [\"GITHUB_TOKEN\"]", 1), ExitWidened,
			[]string{"mcpolicy.cue:4:8: indexer WIDENED ENV_ADDED: environment variable GITHUB_TOKEN passed through"}},
		{"network", "mcpolicy.cue", strings.Replace(basePolicy, `image: "indexer:1"`, `image: "indexer:1"`+"\n\tnetwork: allow: [\"api.github.com:443\"]", 1), ExitWidened,
			[]string{"WIDENED NETWORK_OPENED: network none -> api.github.com:443"}},
		{"reorder and comments", "mcpolicy.cue", `version: "v1"
// the indexer, reordered
servers: indexer: {
	mounts: [
		{source: "docs", target: "/docs"}, // docs first now
		{source: "shop", target: "/workspace"},
	]
	image: "indexer:1"
}
`, ExitOK, []string{"no grant changed"}},
		// Relative sources start at the policy file's folder: moved, it says "../".
		{"moved to mcpolicy.d", "mcpolicy.d/main.cue", movedPolicy, ExitOK, []string{"no grant changed"}},
		{"waived widening", "mcpolicy.d/main.cue", strings.Replace(movedPolicy, `image: "indexer:1"`, `image: "indexer:1"`+"\n\twaive: [{rule: \"MOUNT_RW\", reason: \"writes its index\"}]", 1) + "", ExitOK, nil},
	}
	for i, s := range steps {
		if s.name == "moved to mcpolicy.d" {
			os.Remove(filepath.Join(repo, "mcpolicy.cue"))
		}
		if s.name == "waived widening" {
			s.content = strings.Replace(s.content, `target: "/workspace"}`, `target: "/workspace", mode: "rw"}`, 1)
			s.want = []string{"WIDENED MOUNT_RW: mount /workspace: ro -> rw", "[waived: writes its index]"}
		}
		commit(s.file, s.content, s.name)
		code, out, errs := run(t, "diff", "--against", "HEAD~1", "-p", repo)
		if code != s.code {
			t.Errorf("step %d (%s): exit %d, want %d\n%s%s", i, s.name, code, s.code, out, errs)
		}
		for _, w := range s.want {
			if !strings.Contains(out, w) {
				t.Errorf("step %d (%s): output lacks %q:\n%s", i, s.name, w, out)
			}
		}
		// Back to the base for the next step, so each step widens one thing.
		if s.name != "moved to mcpolicy.d" && s.name != "waived widening" && s.name != "reorder and comments" {
			commit(s.file, basePolicy, "back")
		}
	}

	code, _, errs := run(t, "diff", "--against", "no-such-ref", "-p", repo)
	if code != ExitError || !strings.Contains(errs, "not in this clone") {
		t.Errorf("missing ref: exit %d: %s", code, errs)
	}
	code, out, _ := run(t, "diff", "--against", "HEAD~1", "-p", repo, "--format", "markdown")
	if code != ExitOK || !strings.Contains(out, "widened, waived: writes its index") {
		t.Errorf("markdown: exit %d:\n%s", code, out)
	}
}

// TestHookInstall: the installed hook blocks a widening commit, lets a
// narrow one through, and keeps a foreign hook unless told.
func TestHookInstall(t *testing.T) {
	t.Parallel()
	bin := testbin.Mcpolicy(t)
	repo := t.TempDir()
	home := t.TempDir()
	gitRun(t, repo, "init", "-q")
	os.MkdirAll(filepath.Join(repo, "shop"), 0o755)
	os.MkdirAll(filepath.Join(repo, "docs"), 0o755)
	writeFile(t, filepath.Join(repo, ".git", "hooks", "pre-commit"), "#!/bin/sh\necho foreign hook\n")
	os.Chmod(filepath.Join(repo, ".git", "hooks", "pre-commit"), 0o755)
	env := append(os.Environ(), "HOME="+home, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	sh := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := sh(bin, "hook", "install"); err == nil || !strings.Contains(out, "not mcpolicy's") {
		t.Fatalf("a foreign hook was not refused: %v\n%s", err, out)
	}
	if out, err := sh(bin, "hook", "install", "--chain"); err != nil {
		t.Fatalf("hook install --chain: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), basePolicy)
	sh(bin, "build")
	sh("git", "add", "-A")
	if out, err := sh("git", "commit", "-q", "-m", "base"); err != nil || !strings.Contains(out, "foreign hook") {
		t.Fatalf("first commit (the chained hook must run): %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), strings.Replace(basePolicy, `target: "/workspace"}`, `target: "/workspace", mode: "rw"}`, 1))
	sh(bin, "build")
	sh("git", "add", "-A")
	if out, err := sh("git", "commit", "-q", "-m", "widen"); err == nil || !strings.Contains(out, "WIDENED MOUNT_RW") {
		t.Fatalf("a widening commit went through: %v\n%s", err, out)
	}
}
