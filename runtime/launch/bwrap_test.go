package launch_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// TestBwrapProgram: the constant is the table's program for bwrap.
func TestBwrapProgram(t *testing.T) {
	if got := backendtraits.Program(backendtraits.Bwrap); got != artefact.BwrapProgram {
		t.Errorf("the backend table starts bwrap with %q, launch runs %q", got, artefact.BwrapProgram)
	}
}

// project makes a folder with a protected .git, a writable src holding a
// nested grant src/gen, a top-level symlink, and a planted secret outside.
func project(t *testing.T) (root, secret string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "proj")
	for _, d := range []string{".git/hooks", "src/gen"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, ".git/config"), "[core]\n")
	write(t, filepath.Join(root, "README"), "hello\n")
	write(t, filepath.Join(root, "src/gen/out.txt"), "generated\n")
	secret = filepath.Join(dir, "secret")
	write(t, filepath.Join(secret, "credentials"), "SECRET\n")
	if err := os.Symlink("src", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	return root, secret
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func spec(command ...string) *launch.BwrapSpec {
	args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
		"--setenv", "PATH", "/usr/bin:/bin", "--proc", "/proc", "--dev", "/dev",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--bind", "${PROJECT_ROOT}/src/gen", "/gen",
		"--bind", "${PROJECT_ROOT}", "/workspace",
		"--ro-bind", "${PROJECT_ROOT}/.git", "/workspace/.git",
		"--remount-ro", "/", "--"}
	return &launch.BwrapSpec{BwrapSpec: artefact.BwrapSpec{Backend: "bwrap", Server: "s", Plan: "sha256:00", Env: []string{"TOKEN"}, Args: append(args, command...)}}
}

func TestPrepareBwrapBindsByDescriptorWithAFixedTop(t *testing.T) {
	root, _ := project(t)
	b, err := launch.PrepareBwrapAt(spec("true"), root, "/nonexistent-home", []string{"TOKEN=s3cret", "OTHER=x"}, "/usr/bin/bwrap")
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(b.Argv, " ")
	if strings.Contains(argv, root) || strings.Contains(argv, "s3cret") {
		t.Errorf("a host path or a value reached bwrap's argv: %s", argv)
	}
	for _, want := range []string{"--ro-bind-fd", "/workspace ", "/workspace/README", "/workspace/src", "/workspace/.git", "/gen", "--args"} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv lacks %q: %s", want, argv)
		}
	}
	if strings.Contains(argv, "/workspace/link") {
		t.Errorf("a top-level symlink was bound (it must stay a link in the read-only root): %s", argv)
	}
	// .git is bound read-only, the root read-only, src and README read-write.
	pairs := map[string]string{}
	for i := 0; i+2 < len(b.Argv); i++ {
		if b.Argv[i] == "--bind-fd" || b.Argv[i] == "--ro-bind-fd" {
			pairs[b.Argv[i+2]] = pairs[b.Argv[i+2]] + b.Argv[i] + " "
		}
	}
	for target, want := range map[string]string{"/workspace": "--ro-bind-fd ", "/workspace/src": "--bind-fd ", "/workspace/README": "--bind-fd ", "/gen": "--bind-fd "} {
		if pairs[target] != want {
			t.Errorf("%s bound as %q, want %q", target, pairs[target], want)
		}
	}
	if !strings.HasPrefix(pairs["/workspace/.git"], "--ro-bind-fd") || strings.Contains(pairs["/workspace/.git"], "--bind-fd") {
		t.Errorf(".git bound as %q, want read-only only", pairs["/workspace/.git"])
	}
	if i := slices.Index(b.Argv, "--args"); i < 0 || i > slices.Index(b.Argv, "--proc") || i < slices.Index(b.Argv, "--clearenv") {
		t.Errorf("--args must come after --clearenv and before --proc: %s", argv)
	}
}

func TestPrepareBwrapRefusesSwappedSources(t *testing.T) {
	for name, swap := range map[string]func(root, secret string) error{
		"nested source":    func(root, secret string) error { return swapDir(filepath.Join(root, "src/gen"), secret) },
		"protected source": func(root, secret string) error { return swapDir(filepath.Join(root, ".git"), secret) },
		"parent of source": func(root, secret string) error { return swapDir(filepath.Join(root, "src"), secret) },
	} {
		t.Run(name, func(t *testing.T) {
			root, secret := project(t)
			if err := swap(root, secret); err != nil {
				t.Fatal(err)
			}
			_, err := launch.PrepareBwrapAt(spec("true"), root, "", nil, "/usr/bin/bwrap")
			var te *launch.TamperError
			if !errors.As(err, &te) {
				t.Fatalf("want a TamperError, got %v", err)
			}
		})
	}
	t.Run("control: the same spec without the swap", func(t *testing.T) {
		root, _ := project(t)
		if _, err := launch.PrepareBwrapAt(spec("true"), root, "", nil, "/usr/bin/bwrap"); err != nil {
			t.Fatal(err)
		}
	})
}

func swapDir(p, to string) error {
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	return os.Symlink(to, p)
}

func TestReadVerified(t *testing.T) {
	f := filepath.Join(t.TempDir(), "a.json")
	write(t, f, "{}\n")
	digest := artefact.Digest([]byte("{}\n"))
	if _, err := launch.ReadVerified(f, digest); err != nil {
		t.Fatal(err)
	}
	write(t, f, "{} \n")
	var te *launch.TamperError
	if _, err := launch.ReadVerified(f, digest); !errors.As(err, &te) {
		t.Fatalf("a rewritten artefact: want a TamperError, got %v", err)
	}
}

// TestBwrapFixedTopUnderTheKernel runs the prepared bwrap for real: the
// server cannot create a top-level name, rename one, or write .git, and
// still writes inside src; nothing but the mounts reaches it.
func TestBwrapFixedTopUnderTheKernel(t *testing.T) {
	kernelTest(t)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is not installed; CI must install it")
		}
		t.Skip("bwrap not installed")
	}
	root, _ := project(t)
	script := `
try() { if "$@" 2>/dev/null; then echo "ok: $*"; else echo "refused: $*"; fi; }
try mkdir /workspace/.vscode
try touch /workspace/new
try mv /workspace/src /workspace/src2
try mv /workspace/.git /workspace/.git.old
try sh -c 'echo x >> /workspace/.git/config'
try sh -c 'echo x > /workspace/src/new.txt'
try sh -c 'echo x >> /workspace/README'
try sh -c 'echo x > /gen/more.txt'
echo "env: $TOKEN $OTHER"
ls -l /proc/self/fd/ /proc/$$/fd/
tr '\0' ' ' < /proc/1/environ; echo "[pid1 env end]"
`
	b, err := launch.PrepareBwrapAt(spec("/bin/sh", "-c", script), root, "", []string{"TOKEN=s3cret", "OTHER=x"}, bwrap)
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := b.Command()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := string(out)
	t.Log(got)
	for _, want := range []string{
		"refused: mkdir /workspace/.vscode", "refused: touch /workspace/new",
		"refused: mv /workspace/src /workspace/src2", "refused: mv /workspace/.git /workspace/.git.old",
		"refused: sh -c echo x >> /workspace/.git/config",
		"ok: sh -c echo x > /workspace/src/new.txt", "ok: sh -c echo x >> /workspace/README", "ok: sh -c echo x > /gen/more.txt",
		"env: s3cret \n", "[pid1 env end]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in the output", want)
		}
	}
	if strings.Contains(got, "OTHER=") || strings.Contains(got, "TOKEN=s3cret [pid1") {
		t.Errorf("bwrap's own process kept an environment: %s", got)
	}
	for _, p := range []string{".vscode", "new", ".git.old"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
}

// TestProtectedSymlinkAtTheTopIsTampering: a protected name that became a
// symlink since the build (the build refuses one) stops the launch: its
// target would be writable through it. Unprotected, it is left as a link.
func TestProtectedSymlinkAtTheTopIsTampering(t *testing.T) {
	root, _ := project(t)
	write(t, filepath.Join(root, "src/hooks.yaml"), "repos: []\n")
	if err := os.Symlink("src/hooks.yaml", filepath.Join(root, ".pre-commit-config.yaml")); err != nil {
		t.Fatal(err)
	}
	var te *launch.TamperError
	if _, err := launch.PrepareBwrapAt(spec("true"), root, "", nil, "/usr/bin/bwrap"); !errors.As(err, &te) {
		t.Fatalf("want a TamperError, got %v", err)
	}
	s := spec("true")
	s.Unprotected = []string{".pre-commit-config.yaml"}
	if _, err := launch.PrepareBwrapAt(s, root, "", nil, "/usr/bin/bwrap"); err != nil {
		t.Fatalf("unprotected: %v", err)
	}
}

// TestEngineNeedsTheProjectRoot: without a root the fixed top level and
// the protected names would silently go: refused.
func TestEngineNeedsTheProjectRoot(t *testing.T) {
	args := []string{"run", "--rm", "--mount", "type=bind,source=/srv/p,target=/workspace", "img:1"}
	if _, err := (launch.Engine{Path: "docker", Home: "/root", Verifier: "/usr/local/bin/mcpolicy-launch", Seccomp: "/proc/self/fd/3"}).Prepare(args); err == nil || !strings.Contains(err.Error(), "project root is unknown") {
		t.Fatalf("got %v", err)
	}
}
