package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/runtime/probe/probetable"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
	"github.com/mcpolicy/mcpolicy/runtime/seccomp"
)

// TestEngine runs the emitted args on real container engines, with the
// hidden `mcpolicy probe` in place of the server, and checks what the kernel
// answered for every access the policy grants or takes away. Two controls
// widen the args by hand and check that the harness sees the widening, so a
// pass is not an artefact of a probe that cannot succeed.
//
// Without an engine the subtest skips, except under CI=true, where it fails:
// CI must install docker and podman.
func TestEngine(t *testing.T) {
	testbin.SkipShort(t, "runs containers on docker and podman")
	// The probe runs in the containers: a static mcpolicy for Linux.
	probeBinary := func(t *testing.T) string {
		t.Helper()
		bin, err := testbin.PathFor("linux", testbin.McpolicyPkg)
		if err != nil {
			t.Fatalf("building the probe: %v", err)
		}
		return bin
	}

	for _, e := range []engine{
		{name: "docker", repo: "mcpolicy-probe", version: "{{.Server.Version}}"},
		{name: "podman", repo: "localhost/mcpolicy-probe", version: "{{.Client.Version}}"},
	} {
		t.Run(e.name, func(t *testing.T) {
			start := time.Now()
			e.require(t)
			testEngine(t, e, probeBinary(t))
			t.Logf("%s: %s", e.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// engine is a container engine CLI that takes the emitted args after its name.
type engine struct {
	name    string // binary
	repo    string // image repository the imported probe image is tagged in
	version string // --format of `ENGINE version` giving the engine's version
}

// require skips or, under CI, fails when the engine is not usable.
func (e engine) require(t *testing.T) {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") == "true" {
		fail = func(format string, args ...any) { t.Fatalf("CI=true, so not skipping: "+format, args...) }
	}
	if _, err := exec.LookPath(e.name); err != nil {
		fail("%s is not installed (%v); CI must install it to test the docker emitter on a real engine", e.name, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, e.name, "info").CombinedOutput(); err != nil {
		fail("%s info: %v\n%s\nthe engine must run to test the docker emitter on a real engine", e.name, err, lastLines(out, 10))
	}
	if v, err := exec.CommandContext(ctx, e.name, "version", "--format", e.version).CombinedOutput(); err == nil {
		t.Logf("%s version %s", e.name, bytes.TrimSpace(v))
	}
}

// run runs the engine CLI with args and stdin, returning stdout; any failure
// is fatal and shows stderr.
func (e engine) run(ctx context.Context, t *testing.T, stdin *os.File, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, e.name, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s\nstdout:\n%s", e.name, shellQuote(args), err, stderr.Bytes(), stdout.Bytes())
	}
	return stdout.Bytes()
}

// expectation is one attempt and what the confinement must answer.
type expectation struct{ op, target, want, why string }

func (x expectation) arg() string { return x.op + ":" + x.target }

func (x expectation) Row() (op, target, want, why string) { return x.op, x.target, x.want, x.why }

func testEngine(t *testing.T, e engine, probeBin string) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	image := importImage(ctx, t, e, probeBin)

	// A host listener on loopback: reachable from the host, and never from a
	// container without network. Only loopback addresses are used.
	hostAddr := testenv.LoopbackListener(t)

	root, home := writeProject(t)
	awsCreds := filepath.Join(home, ".aws", "credentials")
	sshKey := filepath.Join(home, ".ssh", "id_ed25519")

	expect := []expectation{
		{"read", "/workspace/data.txt", "ok", "rw grant"},
		{"create", "/workspace/docs/new.txt", "ok", "rw grant"},
		{"create", "/workspace/new.txt", "EROFS", "fixed top level"},
		{"create", "/workspace/.envrc", "EROFS", "absent protected name"},
		{"read", "/docs/readme.txt", "ok", "ro grant"},
		{"write", "/docs/readme.txt", "EROFS", "ro grant"},
		{"read", awsCreds, "ENOENT", "host home not in view"},
		{"read", sshKey, "ENOENT", "host home not in view"},
		{"write", "/workspace/.git/config", "EROFS", "protected path in rw mount"},
		{"create", "/x", "EROFS", "read-only root"},
		{"create", "/etc/x", "EROFS", "read-only root"},
		{"create", "/tmp/x", "ok", "scratch"},
		{"create", "/run/x", "EROFS", "masked"},
		{"create", "/var/tmp/x", "EROFS", "masked"},
		{"create", "/dev/shm/x", "EROFS", "masked"},
		{"connect", hostAddr, "ECONNREFUSED", "no network"},
	}
	command := []string{"/bin/mcpolicy", "probe"}
	for _, x := range expect {
		command = append(command, x.arg())
	}
	writePolicy(t, root, image, command)

	proj, err := project.Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := proj.Compile(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 1 {
		t.Fatalf("compiled %d plans, want 1", len(plans))
	}
	plan := plans[0]
	args, err := docker.Args(plan, compiler.Machine{ProjectRoot: root, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	// As client entries run them: through the launcher's checks, which fix
	// the project's top level and bind .git read-only.
	profile := filepath.Join(t.TempDir(), "seccomp.json") // the launcher's memfd, as a file the engine reads
	if err := os.WriteFile(profile, seccomp.EngineProfile(), 0o644); err != nil {
		t.Fatal(err)
	}
	if args, err = (launch.Engine{Path: e.name, Root: root, Home: home, Unprotected: plan.UnprotectedNames(), Verifier: probeBin, Seccomp: profile}).Prepare(args); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s", e.name, shellQuote(args))
	t.Cleanup(func() { removeContainers(e, plan.Hash) })

	got := probeRun(ctx, t, e, args)
	probetable.Check(t, e.name+" emitted args", expect, got)

	// The controls: the same args widened by hand, each asking only the
	// attempt the widening must change. If they still see the denial, the
	// harness cannot tell a confined run from an unconfined one.
	prefix := args[:len(args)-len(plan.Command)] // up to and including the image
	t.Run("control-network-host", func(t *testing.T) {
		x := expectation{"connect", hostAddr, "ok", "--network host"}
		wide := replaceOnce(t, prefix, []string{"--network", "none"}, []string{"--network", "host"})
		probetable.Check(t, e.name+" --network host", []expectation{x}, probeRun(ctx, t, e, append(wide, "/bin/mcpolicy", "probe", x.arg())))
	})
	t.Run("control-docs-rw", func(t *testing.T) {
		x := expectation{"write", "/docs/readme.txt", "ok", "/docs without readonly"}
		i := slices.IndexFunc(prefix, func(s string) bool {
			return strings.Contains(s, "target=/docs,") || strings.HasSuffix(s, "target=/docs")
		})
		if i < 0 || !strings.HasSuffix(prefix[i], ",readonly") {
			t.Fatalf("no read-only --mount for /docs in %q", prefix)
		}
		wide := replaceOnce(t, prefix, []string{prefix[i]}, []string{strings.TrimSuffix(prefix[i], ",readonly")})
		probetable.Check(t, e.name+" /docs rw", []expectation{x}, probeRun(ctx, t, e, append(wide, "/bin/mcpolicy", "probe", x.arg())))
	})
	// A source swapped for a symlink after the launcher's check, before
	// the engine mounts it (a server still running elsewhere can race that
	// instant): the engine follows the link, and the verifier inside the
	// container sees another inode and refuses (exit 8) before the server.
	// The unswapped runs above are the control.
	t.Run("swap-between-check-and-mount", func(t *testing.T) {
		docs := filepath.Join(root, "docs")
		if err := os.Rename(docs, docs+".real"); err != nil {
			t.Fatal(err)
		}
		defer func() { os.Remove(docs); os.Rename(docs+".real", docs) }()
		if err := os.Symlink(home, docs); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, e.name, args...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != launch.ExitTampered || !strings.Contains(string(out), "not what the launcher checked") {
			t.Fatalf("a swapped source: %v, want exit %d from the verifier\n%s", err, launch.ExitTampered, out)
		}
		if strings.Contains(string(out), "planted") {
			t.Fatalf("the server ran and read the home: %s", out)
		}
		t.Logf("%s: the verifier refused: %s", e.name, lastLines(out, 1))
	})
}

// probeRun runs `ENGINE args...` and parses the probe's JSON lines.
func probeRun(ctx context.Context, t *testing.T, e engine, args []string) []probe.Result {
	t.Helper()
	out := e.run(ctx, t, nil, args...)
	prs, err := probe.Decode(out)
	if err != nil {
		t.Fatalf("%v\nwhole output:\n%s", err, out)
	}
	return prs
}

// replaceOnce returns a copy of args with the one occurrence of old (a run
// of consecutive args) replaced by new; anything else is fatal, so a control
// never silently runs the unmodified args.
func replaceOnce(t *testing.T, args, old, new []string) []string {
	t.Helper()
	at := -1
	for i := 0; i+len(old) <= len(args); i++ {
		if slices.Equal(args[i:i+len(old)], old) {
			if at >= 0 {
				t.Fatalf("%q occurs more than once in %q", old, args)
			}
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("%q not found in %q", old, args)
	}
	out := slices.Clone(args[:at])
	out = append(out, new...)
	return append(out, args[at+len(old):]...)
}

// importImage builds a one-binary image from a rootfs tar, without any
// registry, under a tag unique to this run, and removes it at cleanup.
func importImage(ctx context.Context, t *testing.T, e engine, probeBin string) string {
	t.Helper()
	tarPath := filepath.Join(t.TempDir(), "rootfs.tar")
	if err := writeRootfs(tarPath, probeBin); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	image := fmt.Sprintf("%s:test-%d-%d", e.repo, os.Getpid(), time.Now().UnixNano())
	e.run(ctx, t, f, "import", "-", image)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, e.name, "rmi", "-f", image).CombinedOutput(); err != nil {
			t.Logf("%s rmi %s: %v\n%s", e.name, image, err, out)
		}
	})
	return image
}

// writeRootfs writes /bin/mcpolicy and the empty folders the probe's
// targets live in.
func writeRootfs(path, probeBin string) error {
	bin, err := os.ReadFile(probeBin)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	mtime := time.Unix(0, 0)
	dirs := []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"etc/", 0o755}, {"run/", 0o755}, {"tmp/", 0o1777}, {"var/", 0o755}, {"var/tmp/", 0o1777}, {"workspace/", 0o755}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/mcpolicy", Mode: 0o755, Size: int64(len(bin)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
		f.Close()
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		f.Close()
		return err
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeProject writes a project the container's uid 1000 may write where
// granted, and a home holding secrets outside it.
func writeProject(t *testing.T) (root, home string) {
	t.Helper()
	root, home = t.TempDir(), t.TempDir()
	files := map[string]string{
		filepath.Join(root, "data.txt"):            "hello",
		filepath.Join(root, ".git", "config"):      "[core]\n",
		filepath.Join(root, "docs", "readme.txt"):  "read me\n",
		filepath.Join(home, ".aws", "credentials"): "[default]\naws_secret_access_key = planted\n",
		filepath.Join(home, ".ssh", "id_ed25519"):  "planted key\n",
	}
	for p, s := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	// chmod: the umask narrowed the modes above, and TempDir is 0700.
	for _, d := range []string{root, filepath.Join(root, ".git"), filepath.Join(root, "docs")} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for p := range files {
		if strings.HasPrefix(p, root) {
			if err := os.Chmod(p, 0o666); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root, home
}

func writePolicy(t *testing.T, root, image string, command []string) {
	t.Helper()
	cmd, err := json.Marshal(command) // JSON is CUE
	if err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`version: "v1"

servers: probe: {
	image:   %s
	command: %s
	mounts: [
		{source: ".", target: "/workspace", mode: "rw"},
		{source: "docs", target: "/docs", mode: "ro"},
	]
	scratch: {target: "/tmp", size: "16m"}
}
`, strconv.Quote(image), cmd)
	p := filepath.Join(root, "mcpolicy.cue")
	if err := os.WriteFile(p, []byte(policy), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
}

// removeContainers removes containers left by a killed run (the args carry
// --rm, so normally there are none), found by the plan label.
func removeContainers(e engine, hash string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, e.name, "ps", "-aq", "--filter", "label="+docker.LabelPlan+"="+hash).Output()
	if err != nil {
		return
	}
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		exec.CommandContext(ctx, e.name, append([]string{"rm", "-f"}, ids...)...).Run()
	}
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
