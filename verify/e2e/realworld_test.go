package e2e_test

// The home and project of the real-server test: five servers installed as
// their installers leave them (go install, npx -y, uv tool install), the
// client files a user has for them, and the files they must not read.

import (
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
)

// keySecret is the planted ~/.ssh/id_ed25519's secret; outsideSecret is
// ~/private/notes.txt's: a file outside every grant, readable by anyone
// as far as modes go. No output may ever hold either.
const (
	keySecret     = "planted-ssh-key-e2e-Yv73kQ"
	outsideSecret = "planted-outside-e2e-Lw28pR"
)

// noteBody is ~/notes/hello.txt, the folder the Node and Python servers
// are given: the file a tool call reads inside the grant.
const noteBody = "a note inside the grant\n"

// memoryGraph is ~/memory.json, the memory server's file: read_graph
// answers with it.
const memoryGraph = `[{"type":"entity","name":"e2e-entity","entityType":"test","observations":["inside the grant"]}]`

// The Node server's package, as `npx -y @example/mcp-notes@1.0.0` installs it.
const (
	npxPackage = "@example/mcp-notes"
	npxVersion = "1.0.0"
	npxBin     = "mcp-notes"
)

// The Python server's tool, as `uv tool install mcp-server-notes` leaves it.
const uvTool = "mcp-server-notes"

// realWorld is the base folder of one run: the home, the project, the
// client files.
type realWorld struct {
	mcpolicy  string
	base      string
	home      string // $HOME of the clients and of mcpolicy
	proj      string // a Go module, gopls's workspace; the folder Claude Code and Codex run in
	clients   string // the client files, per client and backend
	key       string // ~/.ssh/id_ed25519
	outside   string // ~/private/notes.txt
	notes     string // ~/notes, the Node and Python servers' argument
	npxDir    string // ~/.npm/_npx/HASH
	image     string // the empty image, unique to this run
	clientEnv map[string]string
}

// npxHash is the npx cache folder's name for the packages of one npx
// command: npm's libnpmexec hashes the specs, sorted, newline-joined
// (sha512, the first 16 hex digits).
func npxHash(specs ...string) string {
	sum := sha512.Sum512([]byte(strings.Join(specs, "\n")))
	return hex.EncodeToString(sum[:])[:16]
}

func newRealWorld(t *testing.T, mcpolicy string, bins map[string]string) *realWorld {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-e2e-real-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	must(t, err)
	must(t, os.Chmod(base, 0o755))
	w := &realWorld{
		mcpolicy: mcpolicy, base: base,
		home: filepath.Join(base, "home"), proj: filepath.Join(base, "proj"), clients: filepath.Join(base, "clients"),
		image: fmt.Sprintf("mcpolicy-e2e-real:t%d-%d", os.Getpid(), time.Now().UnixNano()),
	}
	w.key = filepath.Join(w.home, ".ssh", "id_ed25519")
	w.outside = filepath.Join(w.home, "private", "notes.txt")
	w.notes = filepath.Join(w.home, "notes")
	w.npxDir = filepath.Join(w.home, ".npm", "_npx", npxHash(npxPackage+"@"+npxVersion))
	root, err := testbin.ModuleRoot()
	must(t, err)

	files := map[string]string{
		"proj/go.mod":                      "module example.com/shop\n\ngo 1.22\n",
		"proj/main.go":                     "package main\n\nimport \"fmt\"\n\n// Greeting is what the shop says.\nfunc Greeting() string { return \"hello\" }\n\nfunc main() { fmt.Println(Greeting()) }\n",
		"home/notes/hello.txt":             noteBody,
		"home/memory.json":                 memoryGraph,
		"home/private/notes.txt":           outsideSecret + "\n",
		"home/.ssh/id_ed25519":             "-----BEGIN OPENSSH PRIVATE KEY-----\n" + keySecret + "\n-----END OPENSSH PRIVATE KEY-----\n",
		"home/.npm/_npx/HASH/package.json": fmt.Sprintf(`{"dependencies":{%q:"^%s"}}`+"\n", npxPackage, npxVersion),
		"home/.local/share/uv/tools/T/pyvenv.cfg": fmt.Sprintf("home = %s\nimplementation = CPython\nuv = 0.5.11\nversion_info = %s\ninclude-system-site-packages = false\n",
			filepath.Dir(systemPython), pythonVersion(t)),
		"home/.local/share/uv/tools/T/uv-receipt.toml": "[tool]\nrequirements = [{ name = \"" + uvTool + "\" }]\nentrypoints = [{ name = \"" + uvTool + "\", install-path = \"~/.local/bin/" + uvTool + "\" }]\n",
	}
	for name, body := range files {
		name = strings.ReplaceAll(name, "HASH", filepath.Base(w.npxDir))
		name = strings.ReplaceAll(name, "/T/", "/"+uvTool+"/")
		writeFile(t, filepath.Join(base, name), body, 0o644)
	}
	must(t, os.Chmod(filepath.Dir(w.key), 0o700))
	must(t, os.Chmod(w.key, 0o600))
	// The memory server writes its file in place; the server runs as
	// another user than the owner here (1000 in containers, root's
	// sandboxes drop to it too).
	must(t, os.Chmod(filepath.Join(w.home, "memory.json"), 0o666))
	must(t, os.MkdirAll(filepath.Join(w.home, ".local", "state"), 0o700))

	// go install: the binaries in ~/go/bin.
	for name, src := range bins {
		testbin.Install(t, src, filepath.Join(w.home, "go", "bin", name))
	}
	w.layNpx(t, filepath.Join(root, "examples", "npx-notes", "package"))
	w.layUvTool(t, filepath.Join(root, "examples", "uvx-notes", "mcp_server_notes"))
	w.git(t, "init", "-q", "-b", "main")
	w.git(t, "add", "-A")
	w.git(t, "commit", "-q", "-m", "a project")
	must(t, os.MkdirAll(w.clients, 0o755))

	w.clientEnv = envMap(os.Environ())
	w.clientEnv["HOME"] = w.home
	// A user's PATH after go install, uv tool update-shell and a Go
	// toolchain install: what the clients pass on.
	goBin, err := exec.LookPath("go")
	must(t, err)
	goBin, err = filepath.EvalSymlinks(goBin)
	must(t, err)
	w.clientEnv["PATH"] = strings.Join([]string{
		filepath.Join(w.home, ".local", "bin"), filepath.Join(w.home, "go", "bin"), filepath.Dir(goBin),
		"/usr/local/bin", "/usr/bin", "/bin"}, ":")
	for _, k := range []string{"GOFLAGS", "GOPATH", "GOMODCACHE", "GOCACHE", "GOROOT", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"} {
		delete(w.clientEnv, k) // the planted home's defaults, not this machine's
	}
	return w
}

// layNpx places the Node server as `npx -y @example/mcp-notes@1.0.0` leaves
// it: ~/.npm/_npx/HASH/node_modules/@example/mcp-notes with its package.json
// "bin", and node_modules/.bin/mcp-notes linking to the script.
func (w *realWorld) layNpx(t *testing.T, src string) {
	t.Helper()
	pkg := filepath.Join(w.npxDir, "node_modules", filepath.FromSlash(npxPackage))
	for _, f := range []string{"package.json", "index.js"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		must(t, err)
		writeFile(t, filepath.Join(pkg, f), string(b), 0o644)
	}
	must(t, os.Chmod(filepath.Join(pkg, "index.js"), 0o755))
	must(t, os.MkdirAll(filepath.Join(w.npxDir, "node_modules", ".bin"), 0o755))
	must(t, os.Symlink("../"+npxPackage+"/index.js", filepath.Join(w.npxDir, "node_modules", ".bin", npxBin)))
	writeFile(t, filepath.Join(w.npxDir, "node_modules", ".package-lock.json"), fmt.Sprintf(
		`{"name":%q,"lockfileVersion":3,"requires":true,"packages":{"node_modules/%s":{"version":%q,"bin":{%q:"index.js"}}}}`+"\n",
		filepath.Base(w.npxDir), npxPackage, npxVersion, npxBin), 0o644)
}

// layUvTool places the Python server as `uv tool install mcp-server-notes`
// leaves it: ~/.local/share/uv/tools/mcp-server-notes, a virtual
// environment (pyvenv.cfg, bin/python linking to the interpreter uv
// found, the package in lib/python3.X/site-packages, bin/NAME a script
// whose #! is the environment's python), and ~/.local/bin/NAME linking to
// the script.
func (w *realWorld) layUvTool(t *testing.T, src string) {
	t.Helper()
	env := filepath.Join(w.home, ".local", "share", "uv", "tools", uvTool)
	site := filepath.Join(env, "lib", "python"+pythonVersion(t)[:strings.LastIndex(pythonVersion(t), ".")], "site-packages")
	b, err := os.ReadFile(filepath.Join(src, "__init__.py"))
	must(t, err)
	writeFile(t, filepath.Join(site, "mcp_server_notes", "__init__.py"), string(b), 0o644)
	must(t, os.MkdirAll(filepath.Join(env, "bin"), 0o755))
	must(t, os.Symlink(systemPython, filepath.Join(env, "bin", "python")))
	must(t, os.Symlink("python", filepath.Join(env, "bin", "python3")))
	writeFile(t, filepath.Join(env, "bin", uvTool), "#!"+filepath.Join(env, "bin", "python")+"\n"+
		"# -*- coding: utf-8 -*-\nimport sys\nfrom mcp_server_notes import main\nif __name__ == \"__main__\":\n"+
		"    if sys.argv[0].endswith(\"-script.pyw\"):\n        sys.argv[0] = sys.argv[0][:-11]\n"+
		"    elif sys.argv[0].endswith(\".exe\"):\n        sys.argv[0] = sys.argv[0][:-4]\n    sys.exit(main())\n", 0o755)
	must(t, os.MkdirAll(filepath.Join(w.home, ".local", "bin"), 0o755))
	must(t, os.Symlink(filepath.Join(env, "bin", uvTool), filepath.Join(w.home, ".local", "bin", uvTool)))
}

// systemPython is the interpreter the uv tool environment links to: the
// distribution's (uv links a venv to the python it found).
const systemPython = "/usr/bin/python3"

var pythonVersionOnce struct {
	v   string
	err error
}

// pythonVersion is systemPython's X.Y.Z.
func pythonVersion(t *testing.T) string {
	t.Helper()
	if pythonVersionOnce.v == "" && pythonVersionOnce.err == nil {
		out, err := exec.Command(systemPython, "-c", "import platform; print(platform.python_version())").Output()
		pythonVersionOnce.v, pythonVersionOnce.err = strings.TrimSpace(string(out)), err
	}
	if pythonVersionOnce.err != nil {
		t.Fatalf("%s: %v", systemPython, pythonVersionOnce.err)
	}
	return pythonVersionOnce.v
}

// npmRegistry serves the one packument npx asks for before it runs what
// its cache holds (libnpmexec resolves the spec first), as the registry
// the user installed from would: no tarball, nothing installed. The
// home's ~/.npmrc points npm at it.
func (w *realWorld) npmRegistry(t *testing.T) {
	t.Helper()
	packument := fmt.Sprintf(`{"name":%q,"dist-tags":{"latest":%q},"versions":{%q:{"name":%q,"version":%q,"bin":{%q:"index.js"},"dist":{"tarball":"http://127.0.0.1/none.tgz"}}}}`,
		npxPackage, npxVersion, npxVersion, npxPackage, npxVersion, npxBin)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.URL.EscapedPath(), "/"+strings.ReplaceAll(npxPackage, "/", "%2f")) || r.URL.Path == "/"+npxPackage {
			rw.Header().Set("Content-Type", "application/json")
			fmt.Fprint(rw, packument)
			return
		}
		http.NotFound(rw, r)
	}))
	t.Cleanup(srv.Close)
	writeFile(t, filepath.Join(w.home, ".npmrc"), "registry="+srv.URL+"/\nupdate-notifier=false\nfund=false\naudit=false\n", 0o600)
}

func (w *realWorld) git(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = w.proj
	cmd.Env = []string{
		"HOME=" + w.home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.invalid",
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// run runs mcpolicy as the user would, in the project with the planted
// home and the client's environment; it returns the combined output.
func (w *realWorld) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(w.mcpolicy, args...)
	cmd.Dir = w.proj
	cmd.Env = environ(w.clientEnv)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func writeFile(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(body), mode))
}
