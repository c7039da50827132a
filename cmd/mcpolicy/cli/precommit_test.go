package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreCommitFramework runs this repository's hooks with the real
// pre-commit framework (`pre-commit try-repo`, which builds mcpolicy from
// the repository as `language: golang` does for users) in a fixture repo,
// and checks mcpolicy-diff blocks a widening and passes a narrow change.
func TestPreCommitFramework(t *testing.T) {
	if _, err := exec.LookPath("pre-commit"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pre-commit is not installed; CI must install it (apt-get install pre-commit)")
		}
		t.Skip("pre-commit is not installed")
	}
	self, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	gitRun(t, repo, "init", "-q")
	os.MkdirAll(filepath.Join(repo, "shop"), 0o755)
	os.MkdirAll(filepath.Join(repo, "docs"), 0o755)
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), basePolicy)
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "base")
	cache := filepath.Join(t.TempDir(), "cache") // one environment for both runs
	try := func() (string, error) {
		cmd := exec.Command("pre-commit", "try-repo", self, "mcpolicy-diff", "--all-files")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "PRE_COMMIT_HOME="+cache)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), strings.Replace(basePolicy, `target: "/workspace"}`, `target: "/workspace", mode: "rw"}`, 1))
	gitRun(t, repo, "add", "-A")
	if out, err := try(); err == nil || !strings.Contains(out, "WIDENED MOUNT_RW") {
		t.Fatalf("pre-commit let a widening through (%v):\n%s", err, out)
	}
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), strings.Replace(basePolicy, `{source: "docs", target: "/docs"},`, "", 1))
	gitRun(t, repo, "add", "-A")
	if out, err := try(); err != nil {
		t.Fatalf("pre-commit refused a narrowing (%v):\n%s", err, out)
	}
}
