package prove_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/evidence/prove"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
)

// The filesystem server of issue #15 item 6: a real third-party MCP
// server (github.com/mark3labs/mcp-filesystem-server v0.11.1, ~14 tools:
// read_file, write_file, move_file, create_directory...), run by prove in
// a correct confinement, must give no false positive on any backend its
// policy lists; run in a weakened one, it must still give exit 7. Neither
// may leave anything behind.

const fsModule = "github.com/mark3labs/mcp-filesystem-server"

// needEngines skips a test that runs sandboxes under -short (CI runs it).
func needEngines(t *testing.T) {
	t.Helper()
	testbin.SkipShort(t, "runs bwrap, Landlock, docker and podman")
}

// fsServer builds the filesystem server, static, into dir
// ($MCPOLICY_FS_SERVER names a binary already built).
func fsServer(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "mcp-filesystem-server")
	if p := os.Getenv("MCPOLICY_FS_SERVER"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(out, b, 0o755)
		return out
	}
	bin, err := testbin.External(fsModule, "v0.11.1")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	testbin.Install(t, bin, out)
	return out
}

const fsImage = "mcpolicy-fs-test:empty"

// fsProject is a project for the filesystem server: the project read-only
// at /workspace (the server's binary in bin/), data/ read-write inside it,
// and a folder beside the project granted read-only — named to sort first,
// where the old prove took it for "a folder outside the grants".
func fsProject(t *testing.T) (base, bin, project string) {
	t.Helper()
	base, bin = workspace(t, "mcpolicy-prove-fs-")
	project = filepath.Join(base, "proj")
	for _, d := range []string{"proj/bin", "proj/data", "proj/docs", "a-shared", "home/.aws", "tmp"} {
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	fsServer(t, filepath.Join(project, "bin"))
	for name, body := range map[string]string{
		"proj/README.md": "hello\n", "proj/docs/guide.txt": "read me\n", "proj/data/existing.txt": "kept\n",
		"a-shared/s.txt": "shared\n", "home/.aws/credentials": "[default]\naws_secret_access_key = planted\n",
		"proj/mcpolicy.cue": fmt.Sprintf(`version: "v1"
servers: fs: {
	image:   %q
	command: ["/workspace/bin/mcp-filesystem-server", "/workspace"]
	runtime: "static"
	backends: ["bwrap", "landlock", "docker"]
	mounts: [
		{source: ".", target: "/workspace"},
		{source: "data", target: "/workspace/data", mode: "rw"},
		{source: %q, target: "/shared"},
	]
}
`, fsImage, filepath.Join(base, "a-shared")),
	} {
		if err := os.WriteFile(filepath.Join(base, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exec.Command("chmod", "-R", "a+rwX", base).Run()
	// The image is empty: the binary comes through the project mount.
	for _, engine := range []string{"docker", "podman"} {
		if exec.Command(engine, "info").Run() != nil {
			continue
		}
		cmd := exec.Command(engine, "import", "-", fsImage)
		cmd.Stdin = strings.NewReader(emptyTar())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s import: %v\n%s", engine, err, out)
		}
		t.Cleanup(func() { exec.Command(engine, "rmi", "-f", fsImage).Run() })
	}
	return base, bin, project
}

// tree is every path below dir with its content (folders as "/").
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel] = "/"
		} else if b, err := os.ReadFile(p); err == nil {
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

// leftovers is what a prove run (process pid, probe bin) may leave
// behind: its stand-in images, the containers it started (named
// mcpolicy-prove-PID-...), the entries of its temporary folder. Other
// runs on the same engines (other tests, other people) are not counted.
func leftovers(tmp, bin string, pid int) []string {
	var out []string
	tag := standInTag(bin)
	for _, engine := range []string{"docker", "podman"} {
		if exec.Command(engine, "info").Run() != nil {
			continue
		}
		imgs, _ := exec.Command(engine, "images", "--format", "{{.Repository}}:{{.Tag}}").Output()
		for _, l := range strings.Fields(string(imgs)) {
			if strings.TrimPrefix(l, "localhost/") == tag {
				out = append(out, engine+" image "+l)
			}
		}
		if pid == 0 {
			continue
		}
		ps, _ := exec.Command(engine, "ps", "-a", "--format", "{{.Names}}").Output()
		for _, l := range strings.Fields(string(ps)) {
			if strings.HasPrefix(l, fmt.Sprintf("mcpolicy-prove-%d-", pid)) {
				out = append(out, engine+" container "+l)
			}
		}
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		out = append(out, "temporary "+e.Name())
	}
	sort.Strings(out)
	return out
}

// runProve runs mcpolicy prove with HOME and TMPDIR below base and returns
// its exit code, output, report and what it left behind.
func runProve(t *testing.T, bin, base, project string, env []string, args ...string) (int, string, prove.Report, []string) {
	t.Helper()
	out := filepath.Join(base, "evidence")
	os.RemoveAll(out)
	cmd := exec.Command(bin, append([]string{"prove", "-p", project, "--out", out}, args...)...)
	cmd.Env = append(append(os.Environ(), "HOME="+filepath.Join(base, "home"), "TMPDIR="+filepath.Join(base, "tmp")), env...)
	var o strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &o
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var rep prove.Report
	if b, err := os.ReadFile(filepath.Join(out, "evidence.json")); err == nil {
		json.Unmarshal(b, &rep)
	}
	md, _ := os.ReadFile(filepath.Join(out, "evidence.md"))
	return code, o.String() + "\n" + string(md), rep, leftovers(filepath.Join(base, "tmp"), bin, cmd.Process.Pid)
}

// TestFilesystemServerNoFalsePositives is the acceptance case: a correct
// confinement, the real server, a tool call per kind of use — writes
// inside the read-write folder, into the read-only project and outside
// every grant, a move, a read, a listing of a granted folder, a read of
// the credentials — exits 0 under every backend the policy lists, with
// the server's refusals shown, the project as it was, and nothing left.
func TestFilesystemServerNoFalsePositives(t *testing.T) {
	needEngines(t)
	ci := os.Getenv("CI") == "true"
	base, bin, project := fsProject(t)
	before := tree(t, project)
	left := leftovers(filepath.Join(base, "tmp"), bin, 0)
	for _, c := range []struct {
		args   []string
		expect string // the call as the plan says
		agrees func(*prove.ServerRow) bool
	}{
		{[]string{"--tool", "write_file", "--arg", "path=/workspace/data/new.txt", "--arg", "content=hi"}, "allowed",
			func(s *prove.ServerRow) bool { return s.Errno == "ok" && s.Same }},
		{[]string{"--tool", "write_file", "--arg", "path=/workspace/notes.txt", "--arg", "content=hi"}, "denied",
			func(s *prove.ServerRow) bool { return s.Errno != "ok" && s.Same }},
		{[]string{"--tool", "write_file", "--arg", "path=" + filepath.Join(base, "outside.txt"), "--arg", "content=hi"}, "denied",
			func(s *prove.ServerRow) bool { return s.Errno == "" && s.Refused != "" && s.Same }},
		{[]string{"--tool", "move_file", "--arg", "source=/workspace/data/existing.txt", "--arg", "destination=/workspace/data/moved.txt"}, "allowed",
			func(s *prove.ServerRow) bool { return s.Errno == "ok" }},
		{[]string{"--tool", "create_directory", "--arg", "path=/workspace/data/a/b"}, "allowed", nil},
		{[]string{"--tool", "read_file", "--arg", "path=/workspace/docs/guide.txt"}, "allowed",
			func(s *prove.ServerRow) bool { return s.Errno == "ok" && strings.Contains(s.Text, "read me") }},
		{[]string{"--tool", "list_directory", "--arg", "path=/shared"}, "allowed", nil},
		{[]string{"--tool", "read_file", "--arg", "path=" + filepath.Join(base, "home/.aws/credentials")}, "denied",
			func(s *prove.ServerRow) bool { return s.Errno != "ok" && s.Same }},
	} {
		name := strings.Join(c.args[1:], " ")
		code, out, rep, now := runProve(t, bin, base, project, nil, c.args...)
		if after := tree(t, project); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("%s: the project changed:\nbefore %v\nafter  %v", name, before, after)
		}
		if fmt.Sprint(now) != fmt.Sprint(left) {
			t.Errorf("%s: left behind: %v (before: %v)", name, now, left)
		}
		if code != 0 {
			t.Errorf("%s: exit %d, want 0 on a correct confinement:\n%s", name, code, out)
			continue
		}
		if strings.Contains(out, "****") {
			t.Errorf("%s: an empty errno in the report:\n%s", name, out)
		}
		if rep.Call == nil || rep.Call.Expect != c.expect {
			t.Errorf("%s: the call's expectation: %+v, want %s", name, rep.Call, c.expect)
		}
		var ran []string
		for _, be := range rep.Backends {
			if be.Skipped != "" || be.Server == nil || be.Server.Skipped != "" {
				if ci {
					t.Errorf("%s: %s not run in CI: %s %+v", name, be.Backend, be.Skipped, be.Server)
				}
				continue
			}
			ran = append(ran, be.Backend)
			for _, row := range be.Rows {
				if row.What == "beside the project, in its parent folder" && strings.Contains(row.Target, "a-shared") {
					t.Errorf("%s: %s: the folder beside the project is a granted mount: %+v", name, be.Backend, row)
				}
			}
			if sv := be.Server; c.agrees != nil && !c.agrees(sv) {
				t.Errorf("%s: %s: the server's row: %+v", name, be.Backend, sv)
			}
		}
		if len(ran) == 0 {
			t.Errorf("%s: no backend ran the server:\n%s", name, out)
		}
	}
}

// weakened writes wrappers for docker and bwrap that mount every
// read-only grant read-write, first on PATH: a sandbox wider than its
// plan, which prove must catch.
func weakened(t *testing.T, dir string) string {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	for tool, rewrite := range map[string]string{
		"docker": `case "$a" in type=bind,*) a=$(printf '%s' "$a" | sed 's/,readonly//') ;; esac`,
		"bwrap":  `case "$a" in --ro-bind) a=--bind ;; --ro-bind-fd) a=--bind-fd ;; --ro-bind-try) a=--bind-try ;; esac`,
	} {
		real, err := exec.LookPath(tool)
		if err != nil {
			continue
		}
		sh := fmt.Sprintf("#!/bin/sh\n# weakened: read-only grants become read-write\nfor a in \"$@\"; do\n\tshift\n\t%s\n\tset -- \"$@\" \"$a\"\ndone\nexec %s \"$@\"\n", rewrite, real)
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(sh), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// TestFilesystemServerWeakened proves the acceptance test can fail: the
// same project and call under a weakened bwrap and docker — read-only
// grants bound read-write — exits 7, on the probe's writes into the
// read-only mounts and on the server's own write, which the host saw;
// the project is put back and nothing is left.
func TestFilesystemServerWeakened(t *testing.T) {
	needEngines(t)
	ci := os.Getenv("CI") == "true"
	base, bin, project := fsProject(t)
	before := tree(t, project)
	left := leftovers(filepath.Join(base, "tmp"), bin, 0)
	path := weakened(t, filepath.Join(base, "weak"))
	code, out, rep, now := runProve(t, bin, base, project, []string{"PATH=" + path},
		"--backend", "bwrap", "--backend", "docker", "--tool", "write_file", "--arg", "path=/workspace/notes.txt", "--arg", "content=hi")
	ran := 0
	for _, be := range rep.Backends {
		if be.Skipped != "" {
			if ci {
				t.Errorf("%s not run in CI: %s", be.Backend, be.Skipped)
			}
			continue
		}
		ran++
		wide := false
		for _, row := range be.Rows {
			if strings.HasPrefix(row.What, "a write into the read-only mount") && !row.Agrees && row.Result == "ok" {
				wide = true
			}
		}
		if !wide {
			t.Errorf("%s: no row caught the read-write binding of a read-only grant", be.Backend)
		}
		if sv := be.Server; sv == nil || sv.Skipped != "" || sv.Agrees || len(sv.Host) == 0 {
			t.Errorf("%s: the server's write into the read-only project went unnoticed: %+v", be.Backend, sv)
		}
	}
	if ran == 0 {
		t.Skip("neither bwrap nor docker runs here")
	}
	if code != 7 {
		t.Errorf("a weakened confinement: exit %d, want 7:\n%s", code, out)
	}
	if after := tree(t, project); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the project changed:\nbefore %v\nafter  %v", before, after)
	}
	if fmt.Sprint(now) != fmt.Sprint(left) {
		t.Errorf("left behind: %v (before: %v)", now, left)
	}
}

// TestProveInterruptedLeavesNothing: SIGINT while prove runs (the moment
// its stand-in image appears) ends it with exit 1, and every image,
// container and temporary folder it made is gone.
func TestProveInterruptedLeavesNothing(t *testing.T) {
	needEngines(t)
	if exec.Command("docker", "info").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("docker is not usable in CI")
		}
		t.Skip("docker is not usable here")
	}
	base, bin, project := fsProject(t)
	tmp := filepath.Join(base, "tmp")
	// A probe of its own (bytes after the ELF change its digest, not what
	// it runs): its stand-in image is one no earlier run can have left.
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(base, "mcpolicy-interrupted")
	if err := os.WriteFile(bin, append(b, []byte(base)...), 0o755); err != nil {
		t.Fatal(err)
	}
	left := leftovers(tmp, bin, 0)
	cmd := exec.Command(bin, "prove", "-p", project, "--out", filepath.Join(base, "evidence"), "--backend", "docker", "--backend", "podman",
		"--tool", "write_file", "--arg", "path=/workspace/data/n.txt", "--arg", "content=x")
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(base, "home"), "TMPDIR="+tmp)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	tag := standInTag(bin)
wait:
	for {
		select {
		case err = <-done:
			t.Fatalf("prove ended before it made its image (%v):\n%s", err, out.String())
		default:
		}
		if exec.Command("docker", "image", "inspect", tag).Run() == nil {
			cmd.Process.Signal(syscall.SIGINT)
			err = <-done
			break wait
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no stand-in image after 2 minutes:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out.String(), "interrupted") {
		t.Errorf("interrupted prove: %v, want exit 1 saying it was interrupted:\n%s", err, out.String())
	}
	now := leftovers(tmp, bin, cmd.Process.Pid)
	if fmt.Sprint(now) != fmt.Sprint(left) {
		t.Errorf("left behind after an interrupt: %v (before: %v)", now, left)
	}
	if _, err := os.Lstat(filepath.Join(project, "data", "n.txt")); err == nil {
		t.Errorf("the call's file is left in the project")
	}
}

// TestProveOnlyTheServersBackends: a server built for bwrap alone is
// proved under bwrap alone, and asking for another backend is an error
// before anything runs.
func TestProveOnlyTheServersBackends(t *testing.T) {
	base, bin := workspace(t, "mcpolicy-prove-backends-")
	project := filepath.Join(base, "proj")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "README.md"), []byte("hello\n"), 0o644)
	os.WriteFile(filepath.Join(project, "mcpolicy.cue"), []byte(`version: "v1"
servers: only: {
	command: ["/bin/true"]
	backends: ["bwrap"]
	mounts: [{source: ".", target: "/w"}]
}
`), 0o644)
	os.MkdirAll(filepath.Join(base, "home"), 0o755)
	os.MkdirAll(filepath.Join(base, "tmp"), 0o755)
	for _, b := range []string{"docker", "landlock", "podman"} {
		code, out, _, _ := runProve(t, bin, base, project, nil, "--backend", b)
		if code != 1 || !strings.Contains(out, "not built for backend "+b) {
			t.Errorf("--backend %s for a bwrap-only server: exit %d, want 1 naming the backend:\n%s", b, code, out)
		}
		if _, err := os.Stat(filepath.Join(base, "evidence", "evidence.json")); err == nil {
			t.Errorf("--backend %s: evidence written though nothing may run", b)
		}
	}
	needEngines(t)
	code, out, rep, _ := runProve(t, bin, base, project, nil)
	var got []string
	for _, be := range rep.Backends {
		got = append(got, be.Backend)
	}
	if code != 0 || strings.Join(got, " ") != "bwrap" {
		t.Errorf("default backends of a bwrap-only server: %v (exit %d), want bwrap only:\n%s", got, code, out)
	}
}
