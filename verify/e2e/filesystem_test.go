package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// secret is the planted credentials' secret: no output may ever hold it.
const secret = "planted-e2e-secret-Zq81xW"

// hello is the content of README.md, the file read inside the grant.
const hello = "hello from inside the grant\n"

// gitConfigAttack is what the server is asked to write into .git/config:
// a command git would run on the host at the user's next `git status`.
const gitConfigAttack = "[core]\n\tfsmonitor = touch /tmp/mcpolicy-e2e-pwned\n"

// fsPolicy confines the filesystem server: the project read-only at
// /workspace (its bin/ holds the static binary, which the server runs from
// there), data/ read-write. The image (%[2]q) is empty: on docker and
// podman too the binary arrives through the project's mount.
const fsPolicy = `version: "v1"

servers: files: {
	description: "%[1]s, serving the project"
	image:   %[2]q
	command: ["/workspace/bin/mcp-filesystem-server", "/workspace"]
	runtime: "static" // a static Go binary: no /usr, no loader
	backends: ["bwrap", "landlock", "docker"]
	mounts: [
		{source: ".", target: "/workspace"},                    // GRANT: the project, read-only
		{source: "data", target: "/workspace/data", mode: "rw"}, // GRANT: data/, read-write
	]
}
`

// world is the project, the planted home, and where client files go.
type world struct {
	mcpolicy  string
	base      string // holds everything below; removed at the end
	root      string // the project: a git repository
	home      string // $HOME of every client and of mcpolicy
	creds     string // $HOME/.aws/credentials, holding secret
	clients   string // user-scope client files (--file)
	image     string // the empty image, unique to this run
	clientEnv map[string]string
}

func newWorld(t *testing.T, mcpolicy, server string) *world {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-e2e-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	must(t, err)
	must(t, os.Chmod(base, 0o755))
	w := &world{
		mcpolicy: mcpolicy, base: base,
		root: filepath.Join(base, "proj"), home: filepath.Join(base, "home"), clients: filepath.Join(base, "clients"),
		image: fmt.Sprintf("mcpolicy-e2e:t%d-%d", os.Getpid(), time.Now().UnixNano()),
	}
	w.creds = filepath.Join(w.home, ".aws", "credentials")
	files := map[string]string{
		"proj/README.md":        hello,
		"proj/.gitignore":       "bin/\n",
		"proj/data/notes.txt":   "notes\n",
		"proj/mcpolicy.cue":     fmt.Sprintf(fsPolicy, serverModule+" "+serverVersion, w.image),
		"home/.aws/credentials": "[default]\naws_access_key_id = AKIAE2EPLANTED\naws_secret_access_key = " + secret + "\n",
	}
	for name, body := range files {
		p := filepath.Join(base, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	must(t, os.MkdirAll(w.clients, 0o755))
	// The launcher records each session in the home's state folder
	// (outside every grant): mcpolicy's own, left out of the home's
	// snapshot (stateDir); its parents exist, as in most homes.
	must(t, os.MkdirAll(filepath.Join(w.home, ".local", "state"), 0o700))
	bin, err := os.ReadFile(server)
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(w.root, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(w.root, "bin", "mcp-filesystem-server"), bin, 0o755))
	// A link inside the grant to the credentials, absolute.
	must(t, os.Symlink(w.creds, filepath.Join(w.root, "creds-link")))
	w.git(t, "init", "-q", "-b", "main")
	w.git(t, "add", "-A")
	w.git(t, "commit", "-q", "-m", "a project")
	// The containers run as uid 1000: every file is writable by it as far
	// as modes go, so a denial is the confinement's.
	if out, err := exec.Command("chmod", "-R", "a+rwX", w.root).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v\n%s", err, out)
	}
	w.run(t, "build", w.root)
	w.clientEnv = envMap(os.Environ())
	w.clientEnv["HOME"] = w.home
	// mcpolicy installed on the user's PATH: a project's committed entry
	// (.vscode/mcp.json) names mcpolicy-launch, found there at spawn.
	w.clientEnv["PATH"] = filepath.Dir(mcpolicy) + string(filepath.ListSeparator) + w.clientEnv["PATH"]
	return w
}

func (w *world) git(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = w.root
	cmd.Env = []string{
		"HOME=" + w.home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.invalid",
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// run runs mcpolicy in the project with the planted home.
func (w *world) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(w.mcpolicy, args...)
	cmd.Dir = w.root
	cmd.Env = append(os.Environ(), "HOME="+w.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mcpolicy %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeEntries runs `mcpolicy client` for one client and backend and
// returns the file it wrote.
func (w *world) writeEntries(t *testing.T, ck clientKind, backend string) string {
	t.Helper()
	args := []string{"client", ck.target, "--backend", backend, "--write", "-p", w.root}
	file := filepath.Join(w.root, filepath.FromSlash(ck.project))
	if ck.project == "" {
		file = filepath.Join(w.clients, ck.name+"-"+backend+ck.ext)
		args = append(args, "--file", file)
	}
	w.run(t, args...)
	return file
}

// side is what the client brings to a spawn: its environment (the test's,
// with the planted home), the project as its workspace (VS Code's open
// folder; the folder Codex runs in), and "/" as a desktop app's own
// working directory.
func (w *world) side() clientSide {
	return clientSide{env: w.clientEnv, workspace: w.root, cwd: "/"}
}

var backends = []string{"bwrap", "landlock", "docker", "podman"}

// TestFilesystemServer runs mcp-filesystem-server through every entry
// `mcpolicy client` writes, for each backend and client, spawned as that
// client spawns it.
func TestFilesystemServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the end-to-end test runs the real backends")
	}
	if _, err := exec.LookPath("git"); err != nil {
		unavailable(t, "git is not installed")
	}
	mcpolicy, server := tools(t), filesystemServer(t)
	w := newWorld(t, mcpolicy, server)

	var bare time.Duration
	t.Run("unconfined", func(t *testing.T) {
		// A project of its own: this run writes its .git/config.
		bare = unconfined(t, newWorld(t, mcpolicy, server))
	})

	took := map[string]map[string]time.Duration{}
	for _, backend := range backends {
		took[backend] = map[string]time.Duration{}
		t.Run(backend, func(t *testing.T) {
			requireBackend(t, backend)
			if backend == "docker" || backend == "podman" {
				importEmptyImage(t, backend, w.image)
			}
			for _, ck := range clientKinds {
				t.Run(ck.name, func(t *testing.T) {
					file := w.writeEntries(t, ck, backend)
					if raw, err := os.ReadFile(file); err == nil && ck.project != "" && (backend == "docker" || backend == "podman") &&
						!strings.Contains(string(raw), "${workspaceFolder}") {
						t.Errorf("%s: the project-scope entry holds no ${workspaceFolder}:\n%s", file, raw)
					}
					spec, err := ck.spawn(file, "files", w.side())
					if err != nil {
						t.Fatalf("%s cannot read its entry: %v", ck.name, err)
					}
					t.Logf("entry: %s %s (cwd %s)", spec.command, strings.Join(spec.args, " "), spec.dir)
					if d, ok := w.exercise(t, backend, ck.name, spec); ok {
						took[backend][ck.name] = d
					}
				})
			}
		})
	}

	var b strings.Builder
	fmt.Fprintf(&b, "spawn to initialize (unconfined, the server spawned bare: %s):\n%-10s", bare.Round(100*time.Microsecond), "")
	for _, ck := range clientKinds {
		fmt.Fprintf(&b, " %17s", ck.name)
	}
	for _, backend := range backends {
		fmt.Fprintf(&b, "\n%-10s", backend)
		for _, ck := range clientKinds {
			if d, ok := took[backend][ck.name]; ok {
				fmt.Fprintf(&b, " %17s", d.Round(100*time.Microsecond))
			} else {
				fmt.Fprintf(&b, " %17s", "-")
			}
		}
	}
	t.Log(b.String())
}

// view is the project's path as the server sees it: Landlock does not
// remap paths.
func (w *world) view(backend string) string {
	if backend == "landlock" {
		return w.root
	}
	return "/workspace"
}

// exercise speaks MCP to the files entry and checks what it may and may
// not do; it returns spawn-to-initialize, and whether the session started.
func (w *world) exercise(t *testing.T, backend, client string, spec spawnSpec) (time.Duration, bool) {
	view := w.view(backend)
	dataName := client + "-" + backend + ".txt"
	dataBody := "written by the server, spawned by " + client + " on " + backend + "\n"
	gitConfig := filepath.Join(w.root, ".git", "config")
	before, home := snap(t, w.root, "data"), snap(t, w.home, stateDir)
	gitBefore, err := os.ReadFile(gitConfig)
	must(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	s, err := spawn(ctx, spec)
	if err != nil {
		t.Errorf("%s on %s: the entry does not start as the client spawns it: %v", client, backend, err)
		return 0, false
	}
	t.Logf("spawn to initialize: %s (server %s %s, protocol %s)", s.initTook.Round(100*time.Microsecond),
		s.cs.InitializeResult().ServerInfo.Name, s.cs.InitializeResult().ServerInfo.Version, s.cs.InitializeResult().ProtocolVersion)
	var texts []string
	call := func(tool string, args map[string]any) result {
		t.Helper()
		r, err := s.call(ctx, tool, args)
		if err != nil {
			t.Fatalf("%v\nstderr:\n%s", err, tail(s.stderr.String(), 20))
		}
		texts = append(texts, r.text)
		return r
	}
	func() {
		defer func() {
			if exit := s.close(); exit != "" {
				t.Logf("the server's exit after stdin closed: %s", exit)
			}
		}()
		names, err := s.tools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"read_file", "write_file", "list_allowed_directories"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list: no %s in %v", want, names)
			}
		}

		if r := call("list_allowed_directories", map[string]any{}); r.isError || !strings.Contains(r.text, "\n"+view+" ") {
			t.Errorf("list_allowed_directories: %+v, want %s", r, view)
		}

		// Inside the grant: read with its content.
		if r := call("read_file", map[string]any{"path": view + "/README.md"}); r.isError || r.text != hello {
			t.Errorf("read_file README.md inside the grant: isError %v, text %q; want %q", r.isError, r.text, hello)
		}

		// The planted credentials by their host path: the server's own
		// check refuses it (outside its allowed directory).
		r := call("read_file", map[string]any{"path": w.creds})
		if !r.isError {
			t.Errorf("read_file %s: succeeded: %q", w.creds, r.text)
		}
		t.Logf("read_file %s: %s", w.creds, oneLine(r.text))

		// Through a link inside the grant: the server resolves it inside
		// the sandbox, where the target does not exist, so its check lets
		// the path through and the open meets the sandbox's answer,
		// ENOENT. (Unconfined, the server's check would refuse it as a
		// target outside its directory: this one is the sandbox's.)
		r = call("read_file", map[string]any{"path": view + "/creds-link"})
		if !r.isError {
			t.Errorf("read_file creds-link: succeeded: %q", r.text)
		} else if !strings.Contains(r.text, "no such file or directory") {
			t.Errorf("read_file creds-link: failed, but not because the target is absent from the sandbox: %q", r.text)
		}
		t.Logf("read_file %s/creds-link: %s", view, oneLine(r.text))

		// .git/config: inside the read-only grant. The server's own check
		// lets it through; the kernel must refuse the write.
		r = call("write_file", map[string]any{"path": view + "/.git/config", "content": gitConfigAttack})
		if !r.isError {
			t.Errorf("write_file .git/config: succeeded: %q", r.text)
		} else if !kernelDenial(r.text) {
			t.Errorf("write_file .git/config: failed, but not with the kernel's denial: %q", r.text)
		}
		t.Logf("write_file .git/config: %s", oneLine(r.text))

		// Inside the read-write grant: the write reaches the host.
		r = call("write_file", map[string]any{"path": view + "/data/" + dataName, "content": dataBody})
		if r.isError {
			t.Errorf("write_file data/%s inside the read-write grant: %q", dataName, r.text)
		}
		if r := call("read_file", map[string]any{"path": view + "/data/" + dataName}); r.isError || r.text != dataBody {
			t.Errorf("read_file data/%s back: isError %v, text %q", dataName, r.isError, r.text)
		}
	}()

	if b, err := os.ReadFile(filepath.Join(w.root, "data", dataName)); err != nil || string(b) != dataBody {
		t.Errorf("data/%s on the host: %q, %v; want %q", dataName, b, err, dataBody)
	}
	if b, err := os.ReadFile(gitConfig); err != nil || string(b) != string(gitBefore) {
		t.Errorf(".git/config changed on the host:\n%s", b)
	}
	w.checkUnchanged(t, before, home)
	noSecret(t, s, texts)
	return s.initTook, true
}

// unconfined is the control: the server's own command, spawned bare as
// Claude Desktop would spawn it, with nothing around it. The answers the
// confined runs count as the sandbox's must differ here: the link to the
// credentials is refused by the server's own check (not ENOENT), and the
// write to .git/config succeeds (not EROFS). It returns
// spawn-to-initialize.
func unconfined(t *testing.T, w *world) time.Duration {
	gitConfig := filepath.Join(w.root, ".git", "config")
	spec := spawnSpec{command: filepath.Join(w.root, "bin", "mcp-filesystem-server"), args: []string{w.root}, dir: "/"}
	for _, name := range claudeDesktopInherited {
		if v, ok := w.clientEnv[name]; ok {
			spec.env = append(spec.env, name+"="+v)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := spawn(ctx, spec)
	if err != nil {
		t.Fatalf("the server does not start unconfined: %v", err)
	}
	defer s.close()
	t.Logf("spawn to initialize: %s", s.initTook.Round(100*time.Microsecond))
	call := func(tool string, args map[string]any) result {
		t.Helper()
		r, err := s.call(ctx, tool, args)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := call("read_file", map[string]any{"path": w.root + "/README.md"}); r.isError || r.text != hello {
		t.Errorf("read_file README.md: isError %v, text %q", r.isError, r.text)
	}
	r := call("read_file", map[string]any{"path": w.root + "/creds-link"})
	if !r.isError || !strings.Contains(r.text, "symlink target outside allowed directories") {
		t.Errorf("read_file creds-link unconfined: %+v; want the server's own refusal", r)
	}
	t.Logf("read_file creds-link: %s", oneLine(r.text))
	if r := call("write_file", map[string]any{"path": w.root + "/.git/config", "content": gitConfigAttack}); r.isError {
		t.Errorf("write_file .git/config unconfined: %q; it must work here, or the confined runs' denial proves nothing", r.text)
	}
	if b, _ := os.ReadFile(gitConfig); string(b) != gitConfigAttack {
		t.Errorf(".git/config after the unconfined write: %q", b)
	} else {
		t.Logf("write_file .git/config: written on the host")
	}
	return s.initTook
}

// checkUnchanged fails when the project (but data/) or the home changed
// since the snapshots.
// stateDir is mcpolicy's state folder in the home: the launcher's session
// records (the write report) are written there at every launch.
const stateDir = ".local/state/mcpolicy"

func (w *world) checkUnchanged(t *testing.T, project, home snapshot) {
	t.Helper()
	if c := project.changes(snap(t, w.root, "data")); len(c) > 0 {
		t.Errorf("the project changed on the host outside data/: %v", c)
	}
	if c := home.changes(snap(t, w.home, stateDir)); len(c) > 0 {
		t.Errorf("the home changed on the host: %v", c)
	}
}

// noSecret fails when the planted secret appears in anything the session
// produced: the raw stdout, stderr, the tool texts.
func noSecret(t *testing.T, s *session, texts []string) {
	t.Helper()
	for what, out := range map[string]string{
		"stdout": s.stdout.String(), "stderr": s.stderr.String(), "tool results": strings.Join(texts, "\n"),
	} {
		if strings.Contains(out, secret) || strings.Contains(out, "AKIAE2EPLANTED") {
			t.Errorf("the planted credentials appear in the server's %s", what)
		}
	}
}

// kernelDenial reports whether a tool's error text carries the kernel's
// refusal of a write (EROFS, EACCES, EPERM), not the server's own check.
func kernelDenial(text string) bool {
	for _, s := range []string{"read-only file system", "permission denied", "operation not permitted"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
