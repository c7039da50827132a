package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
	"sigs.k8s.io/yaml"
)

// TestPreCommitFramework installs this repository's mcpolicy-diff hook
// the way a user does — a .pre-commit-config.yaml naming the repository
// at a commit, `pre-commit install`, then `git commit` — so the real
// pre-commit framework builds mcpolicy from the repository (`language:
// golang`: `go install ./...` into an environment of its own) and runs it
// from the git hook. The hook must block a widening commit and let a
// narrowing one through.
//
// The repository is this working tree, uncommitted changes included,
// committed into a scratch clone (as `pre-commit try-repo` does). The
// install reuses the host's module and build caches, offline
// (GOPROXY=off): it builds what `go test` just built, from a new folder.
func TestPreCommitFramework(t *testing.T) {
	testbin.SkipShort(t, "builds mcpolicy in a pre-commit environment (go install ./...)")
	if _, err := exec.LookPath("pre-commit"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pre-commit is not installed; CI must install it (apt-get install pre-commit)")
		}
		t.Skip("pre-commit is not installed")
	}
	t.Parallel()
	self, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	hooks, rev := snapshotRepo(t, self)

	// Every module `go install ./...` needs, in the host's module cache
	// (`go test` of one package fetched only that package's).
	goEnv := map[string]string{}
	for _, v := range []string{"GOMODCACHE", "GOCACHE"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		goEnv[v] = strings.TrimSpace(string(out))
	}
	list := exec.Command("go", "list", "-deps", "./...")
	list.Dir = self
	if out, err := list.CombinedOutput(); err != nil {
		t.Fatalf("go list -deps ./... (fetching the modules the hook's build needs): %v\n%s", err, lastLinesOf(out, 20))
	}

	repo := t.TempDir()
	gitRun(t, repo, "init", "-q")
	os.MkdirAll(filepath.Join(repo, "shop"), 0o755)
	os.MkdirAll(filepath.Join(repo, "docs"), 0o755)
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), basePolicy)
	writeFile(t, filepath.Join(repo, ".pre-commit-config.yaml"), fmt.Sprintf(`repos:
- repo: %s
  rev: %s
  hooks: [{id: mcpolicy-diff}]
`, hooks, rev))
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "base")

	preCommitHome := filepath.Join(t.TempDir(), "pre-commit")
	env := append(os.Environ(),
		"PRE_COMMIT_HOME="+preCommitHome, // one hook environment for both commits
		"GOMODCACHE="+goEnv["GOMODCACHE"], "GOCACHE="+goEnv["GOCACHE"], "GOPROXY=off",
		"CGO_ENABLED=0", // what .pre-commit-hooks.yaml tells users for a static build: pre-commit passes it on to go install
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	sh := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := sh("pre-commit", "install"); err != nil {
		t.Fatalf("pre-commit install: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(repo, ".git", "hooks", "pre-commit")); err != nil || !bytes.Contains(b, []byte("pre-commit")) {
		t.Fatalf("pre-commit install wrote no git hook (%v):\n%s", err, b)
	}

	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), strings.Replace(basePolicy, `target: "/workspace"}`, `target: "/workspace", mode: "rw"}`, 1))
	sh("git", "add", "-A")
	out, err := sh("git", "commit", "-q", "-m", "widen")
	if err == nil || !strings.Contains(out, "WIDENED MOUNT_RW") {
		t.Fatalf("pre-commit let a widening commit through (%v):\n%s", err, out)
	}
	if !strings.Contains(out, "mcpolicy diff --against HEAD") {
		t.Errorf("the refusal does not come from the mcpolicy-diff hook:\n%s", out)
	}
	// What `go install ./...` put in the hook's environment: the two
	// commands, nothing else, static.
	installed, _ := filepath.Glob(filepath.Join(preCommitHome, "*", "golangenv-*", "bin", "*"))
	var names []string
	for _, p := range installed {
		names = append(names, filepath.Base(p))
		if err := supervise.CheckStatic(p); err != nil {
			t.Errorf("the golang hook installed %s dynamically linked (CGO_ENABLED=0 was in its environment): %v", p, err)
		}
	}
	if strings.Join(names, " ") != "mcpolicy mcpolicy-launch" {
		t.Errorf("the golang hook installed %q, want mcpolicy and mcpolicy-launch only", names)
	}
	if head, _ := sh("git", "log", "--format=%s", "-1"); strings.TrimSpace(head) != "base" {
		t.Errorf("HEAD is %q after a refused commit, want base", strings.TrimSpace(head))
	}

	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), strings.Replace(basePolicy, `{source: "docs", target: "/docs"},`, "", 1))
	sh("git", "add", "-A")
	if out, err := sh("git", "commit", "-q", "-m", "narrow"); err != nil {
		t.Fatalf("pre-commit refused a narrowing commit (%v):\n%s", err, out)
	}
	if head, _ := sh("git", "log", "--format=%s", "-1"); strings.TrimSpace(head) != "narrow" {
		t.Errorf("HEAD is %q after the narrowing commit, want narrow", strings.TrimSpace(head))
	}
}

// snapshotRepo commits the working tree of the git checkout at dir —
// tracked and untracked files, not the ignored ones — into a new
// repository, and returns its path and the commit.
func snapshotRepo(t *testing.T, dir string) (repo, rev string) {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files in %s (the hook repository must be a git checkout): %v", dir, err)
	}
	repo = filepath.Join(t.TempDir(), "hooks")
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(dir, name)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() { // deleted in the working tree; links and submodules are not ours
			continue
		}
		if err := copyRegular(src, filepath.Join(repo, name), fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, repo, "init", "-q")
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "--no-verify", "-m", "working tree")
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return repo, strings.TrimSpace(string(head))
}

func copyRegular(src, dst string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func lastLinesOf(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestGoInstallBuildsOnlyTheCommands holds `go install ./...` — what
// pre-commit's `language: golang` runs in its clone of this repository
// (pre_commit/languages/golang.py, install_environment) — to the two
// commands a user runs: every other main package (generators, bench tools,
// the canary, the escape suite's helper) sits in a _ or testdata folder,
// which ./... skips, and is listed in the Makefile's HIDDEN, which lint and
// the tests name, so none goes unvetted.
func TestGoInstallBuildsOnlyTheCommands(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	list := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./...")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	const mod = "github.com/mcpolicy/mcpolicy/"
	if got, want := strings.Fields(string(out)), []string{mod + "cmd/mcpolicy", mod + "cmd/mcpolicy-launch"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the main packages of ./... (what `go install ./...` installs) are %q, want only %q", got, want)
	}

	// Every other main package in the tree (nested modules aside), as the
	// Makefile names it.
	var mains []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == ".git" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // a module of its own: not this module's ./...
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !regexp.MustCompile(`(?m)^package main\b`).Match(b) {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := "./" + filepath.ToSlash(rel)
		if pkg != "./cmd/mcpolicy" && pkg != "./cmd/mcpolicy-launch" && !slices.Contains(mains, pkg) {
			mains = append(mains, pkg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^HIDDEN := (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile has no `HIDDEN := ...` line")
	}
	hidden := strings.Fields(string(m[1]))
	slices.Sort(mains)
	if strings.Join(mains, " ") != strings.Join(hidden, " ") {
		t.Errorf("the main packages outside ./... are\n  %s\nthe Makefile's HIDDEN (sorted, which lint and the tests name) is\n  %s", strings.Join(mains, " "), strings.Join(hidden, " "))
	}
}

// TestPreCommitSystemHooks runs the system variants the way `pre-commit
// try-repo` tries a hook repository: with the mcpolicy on PATH, nothing
// built. vet passes on a valid policy; diff refuses a widening in the
// working tree and lets a narrowing through.
func TestPreCommitSystemHooks(t *testing.T) {
	testbin.SkipShort(t, "runs pre-commit try-repo")
	if _, err := exec.LookPath("pre-commit"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pre-commit is not installed; CI must install it (apt-get install pre-commit)")
		}
		t.Skip("pre-commit is not installed")
	}
	t.Parallel()
	self, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	testbin.Install(t, testbin.Mcpolicy(t), filepath.Join(bin, "mcpolicy"))
	hooks, rev := snapshotRepo(t, self)

	repo := t.TempDir()
	gitRun(t, repo, "init", "-q")
	os.MkdirAll(filepath.Join(repo, "shop"), 0o755)
	os.MkdirAll(filepath.Join(repo, "docs"), 0o755)
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), basePolicy)
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "base")
	home := filepath.Join(t.TempDir(), "pre-commit")
	env := append(os.Environ(), "PRE_COMMIT_HOME="+home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	try := func(hook string) (string, error) {
		start := time.Now()
		cmd := exec.Command("pre-commit", "try-repo", hooks, hook, "--ref", rev, "--all-files")
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		t.Logf("pre-commit try-repo %s: %s", hook, time.Since(start).Round(time.Millisecond))
		return string(out), err
	}
	if out, err := try("mcpolicy-vet-system"); err != nil || !strings.Contains(out, "Passed") {
		t.Fatalf("mcpolicy-vet-system on a valid policy (%v):\n%s", err, out)
	}
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), strings.Replace(basePolicy, `target: "/workspace"}`, `target: "/workspace", mode: "rw"}`, 1))
	if out, err := try("mcpolicy-diff-system"); err == nil || !strings.Contains(out, "WIDENED MOUNT_RW") {
		t.Errorf("mcpolicy-diff-system let a widening through (%v):\n%s", err, out)
	}
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), strings.Replace(basePolicy, `{source: "docs", target: "/docs"},`, "", 1))
	if out, err := try("mcpolicy-diff-system"); err != nil {
		t.Errorf("mcpolicy-diff-system refused a narrowing (%v):\n%s", err, out)
	}
	if envs, _ := filepath.Glob(filepath.Join(home, "*", "golangenv-*")); len(envs) > 0 {
		t.Errorf("a system hook built a Go environment: %v", envs)
	}
}

// TestPreCommitHooksHaveSystemTwins: every golang hook has a system
// variant, ID-system, that runs the same command on the same files.
func TestPreCommitHooksHaveSystemTwins(t *testing.T) {
	b, err := os.ReadFile("../../../.pre-commit-hooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var hooks []map[string]any
	if err := yaml.Unmarshal(b, &hooks); err != nil {
		t.Fatal(err)
	}
	byID := map[string]map[string]any{}
	for _, h := range hooks {
		byID[fmt.Sprint(h["id"])] = h
	}
	golang := 0
	for id, h := range byID {
		switch h["language"] {
		case "golang":
			golang++
			twin, ok := byID[id+"-system"]
			if !ok {
				t.Errorf("hook %s has no system variant %s-system", id, id)
				continue
			}
			for _, k := range []string{"entry", "files", "pass_filenames"} {
				if fmt.Sprint(twin[k]) != fmt.Sprint(h[k]) {
					t.Errorf("%s-system's %s is %v, %s's is %v", id, k, twin[k], id, h[k])
				}
			}
			if twin["language"] != "system" {
				t.Errorf("%s-system's language is %v", id, twin["language"])
			}
		case "system":
			if _, ok := byID[strings.TrimSuffix(id, "-system")]; !ok || !strings.HasSuffix(id, "-system") {
				t.Errorf("system hook %s is no ID-system twin of a golang hook", id)
			}
		default:
			t.Errorf("hook %s: language %v", id, h["language"])
		}
	}
	if golang == 0 || len(byID) != 2*golang {
		t.Errorf("%d hooks, %d golang: want each golang hook and its system twin", len(byID), golang)
	}
}
