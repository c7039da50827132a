package escape_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/protect"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
	"github.com/tailscale/hujson"
)

// ci: under CI=true a missing backend fails, never skips.
var ci = os.Getenv("CI") == "true"

// secret is planted in $HOME/.aws/credentials; no output may ever hold it.
const secret = "aws_secret_access_key = planted-escape-secret"

// exitTampered is mcpolicy-launch's exit code when it refuses a launch: the
// artefact's hash differs, or a mount source is or holds a symlink or left
// its base.
const exitTampered = 8

// Sandbox views of the project, shared by the bind backends' policy.
const (
	workspace = "/workspace"
	genTarget = "/gen"
)

// bindPolicy is the policy of the bwrap, docker and podman scenarios: the
// project read-write, and a nested source (src/gen) at its own target.
const bindPolicy = `version: "v1"
servers: attacker: {
	command: ["/bin/sh", "/workspace/attack.sh"]
	image:   %q
	mounts: [
		{source: ".", target: "/workspace", mode: "rw"},
		{source: "src/gen", target: "/gen", mode: "rw"},
	]
	backends: ["bwrap", "docker"]
}
`

// landlockPolicy is the Landlock scenarios' project: read-only, only data/
// writable (the seed scenario, seed_test.go, runs a read-write project
// there).
const landlockPolicy = `version: "v1"
servers: attacker: {
	command: ["/bin/sh", "attack.sh"]
	workdir: "/workspace"
	runtime: "system"
	mounts: [
		{source: ".", target: "/workspace", mode: "ro"},
		{source: "data", target: "/data", mode: "rw"},
	]
	backends: ["landlock"]
}
`

// naiveMounts are the policy's mounts as a naive wiring binds them: plain
// binds that follow symlinks, the top level open, nothing protected.
var naiveMounts = []struct{ source, target string }{{".", workspace}, {"src/gen", genTarget}}

// suite is what every scenario shares: the binaries, the image, which
// backends this machine runs.
type suite struct {
	base     string // /var/tmp/mcpolicy-escape-*: binaries and every project
	mcpolicy string // CGO_ENABLED=0 build of ./cmd/mcpolicy
	launcher string // CGO_ENABLED=0 build of ./cmd/mcpolicy-launch, beside it
	helper   string // CGO_ENABLED=0 build of ./verify/escape/testdata/helper, copied into projects
	image    string // the busybox image's name, in docker and in podman
	// volumeImage is the busybox image with VOLUME /data, /data owned by
	// uid 1000 (the image-volume scenario).
	volumeImage string

	mu       sync.Mutex
	avail    map[string]string   // backend -> why it cannot run here ("" = it can)
	imported map[[2]string]error // {engine, image} -> importing it
	seq      int
}

func newSuite(t *testing.T) *suite {
	t.Helper()
	testbin.SkipShort(t, "the escape suite runs hostile servers under bwrap, Landlock and the engines")
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-escape-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	s := &suite{
		base:     base,
		mcpolicy: filepath.Join(base, "bin", "mcpolicy"),
		launcher: filepath.Join(base, "bin", "mcpolicy-launch"),
		helper:   filepath.Join(base, "bin", "escape-helper"),
		image:    fmt.Sprintf("mcpolicy-escape:t%d-%d", os.Getpid(), time.Now().UnixNano()),
		avail:    map[string]string{},
		imported: map[[2]string]error{},
	}
	s.volumeImage = s.image + "-volume"
	// Copies of the cached static builds, inside base: the sandboxed
	// users must be able to read them.
	for bin, pkg := range map[string]string{s.mcpolicy: testbin.McpolicyPkg, s.launcher: testbin.LaunchPkg, s.helper: "./verify/escape/testdata/helper"} {
		testbin.Install(t, testbin.Build(t, pkg), bin)
	}
	return s
}

func isEngine(backend string) bool { return backend == "docker" || backend == "podman" }

// require skips the test when backend cannot run here, or fails it under
// CI=true. -short skips the engines outside CI.
func (s *suite) require(t *testing.T, backend string) {
	t.Helper()
	if (isEngine(backend) || backend == kube) && testing.Short() && !ci {
		t.Skipf("%s: -short skips the container engines", backend)
	}
	s.mu.Lock()
	why, known := s.avail[backend]
	if !known {
		why = probeBackend(backend)
		s.avail[backend] = why
	}
	s.mu.Unlock()
	if why == "" {
		return
	}
	if ci {
		t.Fatalf("CI=true, so not skipping: %s: %s", backend, why)
	}
	t.Skipf("%s: %s", backend, why)
}

// probeBackend says why backend cannot run on this machine, or "".
func probeBackend(backend string) string {
	if backend == bare {
		// No confinement at all: the weakened wiring of the scenarios
		// whose control is the command itself, spawned as a client would.
		return ""
	}
	if backend == kube {
		return kubeUnavailable()
	}
	b, err := registry.Lookup(backend)
	if err != nil {
		return err.Error()
	}
	return testenv.Unavailable(b.Runtime())
}

// importImage puts the busybox image into engine, once, without a registry.
func (s *suite) importImage(t *testing.T, engine string) {
	t.Helper()
	s.ensureImage(t, engine, s.image, nil, nil)
}

// importVolumeImage is importImage for the image that declares VOLUME /data.
func (s *suite) importVolumeImage(t *testing.T, engine string) {
	t.Helper()
	s.ensureImage(t, engine, s.volumeImage, []string{"data/"}, []string{"VOLUME /data"})
}

// ensureImage imports the busybox rootfs as image into engine, once, with
// the extra folders (owned by uid 1000) and the Dockerfile changes given.
func (s *suite) ensureImage(t *testing.T, engine, image string, dirs1000, changes []string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]string{engine, image}
	err, done := s.imported[key]
	if !done {
		err = doImport(engine, image, dirs1000, changes)
		s.imported[key] = err
	}
	if err != nil {
		t.Fatalf("importing the busybox image %s into %s: %v", image, engine, err)
	}
}

func doImport(engine, image string, dirs1000, changes []string) error {
	rootfs, err := busyboxRootfs(dirs1000)
	if err != nil {
		return err
	}
	return testenv.ImportImage(context.Background(), engine, image, rootfs, changes...)
}

// removeImages runs at the end of the suite.
func (s *suite) removeImages(t *testing.T) {
	for key, err := range s.imported {
		if err != nil {
			continue
		}
		engine, image := key[0], key[1]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if out, err := exec.CommandContext(ctx, engine, "rmi", "-f", image).CombinedOutput(); err != nil {
			t.Logf("%s rmi %s: %v\n%s", engine, image, err, out)
		}
		cancel()
	}
}

// busyboxApplets are linked to /bin/busybox in the image.
var busyboxApplets = []string{"sh", "cat", "cp", "mv", "rm", "ln", "mkdir", "printf", "echo", "touch", "chmod", "tr", "ls", "true", "id"}

// busyboxRootfs is a tar of /bin/busybox (busybox-static) with its applets,
// and the folders the engines mount over; dirs1000 are more folders, owned
// by uid and gid 1000 (the containers' user).
func busyboxRootfs(dirs1000 []string) ([]byte, error) {
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return nil, fmt.Errorf("%v (install busybox-static)", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	for _, d := range []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"etc/", 0o755}, {"home/", 0o755}, {"run/", 0o755}, {"tmp/", 0o1777}, {"var/", 0o755}, {"var/tmp/", 0o1777}, {"workspace/", 0o755}, {"gen/", 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: mtime}); err != nil {
			return nil, err
		}
	}
	for _, d := range dirs1000 {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, Uid: 1000, Gid: 1000, ModTime: mtime}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb)), ModTime: mtime}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bb); err != nil {
		return nil, err
	}
	for _, a := range busyboxApplets {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: mtime}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// entry is a client's MCP server entry, as `mcpolicy client` wrote it.
type entry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// sandbox is one project, its planted home, and the client entry that
// spawns its server on one backend.
type sandbox struct {
	t       *testing.T
	s       *suite
	backend string
	dir     string // holds root, home, markers
	root    string // the project
	home    string // the planted $HOME
	markers string // where a command the attacker planted on the host leaves its marker
	cwd     string // the project's path inside the sandbox
	ranDir  string // where each payload leaves its "it ran" file, relative to the project
	client  string // the `mcpolicy client` target that wrote entry
	// portable: the project's .mcp.json holds the committed form (the
	// launcher by name, the root from CLAUDE_PROJECT_DIR); otherwise the
	// entry is written with this machine's paths (client --file).
	portable bool
	entry    entry
	runs     int
	// naiveIDs, when set, are what the weakened bwrap argv puts for
	// ${UID} and ${GID} (user: "invoker"), with no check.
	naiveIDs []string
	// devWritable: the weakened bwrap argv leaves /dev writable (no
	// --remount-ro /dev), as the emitter did before.
	devWritable bool
}

type projectSpec struct {
	landlock    bool // landlockPolicy, else bindPolicy
	noGit       bool // no git init
	volumeImage bool // the bind policy's image declares VOLUME /data (suite.volumeImage)
	helper      bool // the attack helper at the project's top, as escape-helper
	// env are env grants (names) added to the policy; user is the policy's
	// user ("invoker"), "" for the default.
	env  []string
	user string
	// client is the `mcpolicy client` target whose entry is spawned ("":
	// claude-code, the project's .mcp.json); claude-desktop's is in the
	// planted home and passes --env-file.
	client string
	// envFile, when set, is planted as the user's env file
	// ($HOME/.config/mcpolicy/env, mode 600) before the entry is written.
	envFile string
	// accept are degradations the policy accepts (landlock-tcp-only).
	accept []string
	// files are more files of the project (path below it -> content),
	// committed with it; policy, when set, replaces mcpolicy.cue: a
	// policy file's name below the project and its content, whose %q
	// (if any) is the image.
	files  map[string]string
	policy [2]string
	// noBuild: the project is left unbuilt, with no client entry (the
	// scenario runs mcpolicy build itself, and expects a refusal).
	noBuild bool
	// portable: claude-code's entry in its committed form (see sandbox).
	portable bool
}

// plantedHome is every sandbox's $HOME: the credentials no output may
// hold, and what a widened mount would show.
var plantedHome = map[string]string{
	".aws/credentials": "[default]\n" + secret + "\n",
	".ssh/id_ed25519":  "planted key\n",
	".gitconfig":       "[user]\n\tname = planted\n",
}

// helperName is where the helper sits in the project (spec.helper): the
// payload runs it as ./escape-helper from the project's folder.
const helperName = "escape-helper"

// bare is the pseudo-backend of a weakened wiring with no confinement at
// all: the payload (or the helper) runs on the host, spawned as a client
// would spawn the entry's command. Its project is the Landlock one (host
// paths); it has no client entry.
const bare = "bare"

func (s *suite) sandbox(t *testing.T, backend string, spec projectSpec) *sandbox {
	t.Helper()
	s.mu.Lock()
	s.seq++
	dir := filepath.Join(s.base, fmt.Sprintf("%02d-%s", s.seq, strings.NewReplacer("/", "-").Replace(t.Name())))
	s.mu.Unlock()
	sb := &sandbox{
		t: t, s: s, backend: backend, dir: dir,
		root: filepath.Join(dir, "proj"), home: filepath.Join(dir, "home"), markers: filepath.Join(dir, "markers"),
		cwd: workspace, ranDir: "src",
	}
	image := s.image
	if spec.volumeImage {
		image = s.volumeImage
	}
	policy := fmt.Sprintf(bindPolicy, image)
	if backend == bare {
		spec.landlock = true
	}
	if spec.landlock {
		policy, sb.cwd, sb.ranDir = landlockPolicy, sb.root, "data"
	}
	policy = withServerFields(policy, spec)
	policyName := "mcpolicy.cue"
	if spec.policy[0] != "" {
		policyName, policy = spec.policy[0], spec.policy[1]
		if strings.Contains(policy, "%q") {
			policy = fmt.Sprintf(policy, image)
		}
	}
	sb.client, sb.portable = spec.client, spec.portable
	if sb.client == "" {
		sb.client = "claude-code"
	}
	files := map[string]string{
		"proj/README.md":       "a project\n",
		"proj/src/main.txt":    "code\n",
		"proj/src/gen/out.txt": "generated\n",
		"proj/data/in.txt":     "data\n",
		"proj/.env.local":      "API_TOKEN=planted-env\n",
		"proj/attack.sh":       "echo idle\n",
		"proj/" + policyName:   policy,
	}
	for name, body := range spec.files {
		files["proj/"+name] = body
	}
	for name, body := range plantedHome {
		files["home/"+name] = body
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	must(t, os.MkdirAll(sb.markers, 0o755))
	if spec.envFile != "" {
		sb.writeEnvFile(t, spec.envFile)
	}
	if !spec.noGit {
		sb.git(t, "init", "-q", "-b", "main")
		sb.git(t, "add", "-A")
		sb.git(t, "commit", "-q", "-m", "project")
	}
	if isEngine(backend) {
		s.importImage(t, backend)
		if spec.volumeImage {
			s.importVolumeImage(t, backend)
		}
	}
	if spec.noBuild {
		return sb
	}
	sb.mcpolicyRun(t, "build", sb.root)
	if backend != bare {
		sb.mcpolicyRun(t, sb.clientArgs(backend)...)
	}
	if !spec.noGit {
		sb.git(t, "add", "-A")
		sb.git(t, "commit", "-q", "-m", "confinement")
	}
	// The containers run as uid 1000: the project must be writable by it
	// wherever the mounts allow, so a denial is the confinement's, not the
	// file mode's.
	if out, err := exec.Command("chmod", "-R", "a+rwX", sb.root).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v\n%s", err, out)
	}
	if spec.helper {
		// A copy, never a link: the server may chmod what it can write.
		b, err := os.ReadFile(s.helper)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(sb.root, helperName), b, 0o755))
	}
	if backend == bare {
		return sb
	}
	sb.entry = sb.readEntry(t)
	t.Logf("%s entry: %s %s (env %v)", backend, sb.entry.Command, shellQuote(sb.entry.Args), sb.entry.Env)
	return sb
}

// clientArgs writes the scenario's entry: claude-code's with this
// machine's paths (--file: not the project's committed form) unless the
// scenario is about the committed form (portable).
func (sb *sandbox) clientArgs(backend string) []string {
	args := []string{"client", sb.client, "--backend", backend, "--write", "-p", sb.root}
	if sb.client == "claude-code" && !sb.portable {
		args = append(args, "--file", sb.entryFile())
	}
	return args
}

func (sb *sandbox) mcpolicyRun(t *testing.T, args ...string) {
	t.Helper()
	if code, out := sb.mcpolicyTry(t, nil, args...); code != 0 {
		t.Fatalf("mcpolicy %s: exit %d\n%s", shellQuote(args), code, out)
	}
}

// mcpolicyTry runs mcpolicy on the host with the planted home (and no
// $XDG_CONFIG_HOME: the env file's default is the home's), env on top, and
// returns its exit code and output.
func (sb *sandbox) mcpolicyTry(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(sb.s.mcpolicy, args...)
	cmd.Env = append(append(os.Environ(), "HOME="+sb.home, "XDG_CONFIG_HOME="), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("mcpolicy %s: %v", shellQuote(args), err)
	}
	return 0, string(out)
}

// withServerFields adds the spec's env grants and user to the server of
// policy (bindPolicy or landlockPolicy).
func withServerFields(policy string, spec projectSpec) string {
	var add strings.Builder
	if len(spec.env) > 0 {
		q := make([]string, len(spec.env))
		for i, n := range spec.env {
			q[i] = fmt.Sprintf("%q", n)
		}
		fmt.Fprintf(&add, "\tenv: [%s]\n", strings.Join(q, ", "))
	}
	if spec.user != "" {
		fmt.Fprintf(&add, "\tuser: %q\n", spec.user)
	}
	if len(spec.accept) > 0 {
		q := make([]string, len(spec.accept))
		for i, n := range spec.accept {
			q[i] = fmt.Sprintf("%q", n)
		}
		fmt.Fprintf(&add, "\taccept: [%s]\n", strings.Join(q, ", "))
	}
	return strings.Replace(policy, "servers: attacker: {\n", "servers: attacker: {\n"+add.String(), 1)
}

// envFilePath is the user's env file: the default `mcpolicy client` names
// with the planted home and no $XDG_CONFIG_HOME.
func (sb *sandbox) envFilePath() string {
	return filepath.Join(sb.home, ".config", "mcpolicy", "env")
}

// writeEnvFile writes the user's env file as docs/clients.md says to
// create it: its folder 700, the file 600, one link.
func (sb *sandbox) writeEnvFile(t *testing.T, body string) {
	t.Helper()
	p := sb.envFilePath()
	must(t, os.MkdirAll(filepath.Dir(p), 0o700))
	must(t, os.Chmod(filepath.Dir(p), 0o700))
	os.Remove(p)
	must(t, os.WriteFile(p, []byte(body), 0o600))
}

// entryFile is the client config `mcpolicy client` wrote the entry into.
func (sb *sandbox) entryFile() string {
	if sb.client == "claude-desktop" {
		return filepath.Join(sb.home, ".config", "Claude", "claude_desktop_config.json")
	}
	return filepath.Join(sb.root, ".mcp.json")
}

func (sb *sandbox) readEntry(t *testing.T) entry {
	t.Helper()
	file := sb.entryFile()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = hujson.Standardize(b); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var cfg struct {
		MCPServers map[string]entry `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	e, ok := cfg.MCPServers["attacker"]
	if !ok || e.Command == "" {
		t.Fatalf("%s has no entry for attacker:\n%s", file, b)
	}
	return e
}

// gitEnv is the environment of every git command the test runs on the
// host: the planted home, no system config.
func (sb *sandbox) gitEnv() []string {
	return []string{
		"HOME=" + sb.home, "PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CEILING_DIRECTORIES=" + sb.dir,
		"GIT_AUTHOR_NAME=escape", "GIT_AUTHOR_EMAIL=escape@example.invalid",
		"GIT_COMMITTER_NAME=escape", "GIT_COMMITTER_EMAIL=escape@example.invalid",
	}
}

func (sb *sandbox) git(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir, cmd.Env = sb.root, sb.gitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", shellQuote(args), err, out)
	}
}

// hostGit is the user's next git commands in the project, on the host:
// `git status` (core.fsmonitor, post-index-change) and `git commit`
// (pre-commit and the other commit hooks). It returns the markers left
// by any command the attacker planted. Run it after the snapshot: git
// itself rewrites .git/index.
func (sb *sandbox) hostGit(t *testing.T) []string {
	t.Helper()
	for _, args := range [][]string{{"status"}, {"commit", "-q", "--allow-empty", "-m", "the user's next commit"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		// safe.directory=*: a container writes as uid 1000, and a user
		// whose uid matches would not be asked.
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "safe.directory=*"}, args...)...)
		cmd.Dir, cmd.Env = sb.root, sb.gitEnv()
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Logf("host git %s: %v: %s", strings.Join(args, " "), err, lastLines(out, 3))
		}
	}
	return sb.markersFound(t)
}

func (sb *sandbox) markersFound(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(sb.markers)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// marker is the host path a planted command touches.
func (sb *sandbox) marker(name string) string { return filepath.Join(sb.markers, name) }

// requireNoCommandRan runs the user's next git commands and fails if any
// planted command left its marker.
func (sb *sandbox) requireNoCommandRan(t *testing.T) {
	t.Helper()
	if m := sb.hostGit(t); len(m) > 0 {
		t.Errorf("%s: commands the attacker planted ran on the host: markers %v", sb.backend, m)
	}
}

// A step is one attempt of the payload.
type step struct {
	name string
	sh   string // shell, run from the project's folder in the sandbox
	kind stepKind
	want []string // mustFailWith: the errnos that count as the confinement's answer
}

type stepKind int

const (
	mustBeDenied stepKind = iota // fails with a denial: EROFS, EBUSY, EACCES, EPERM, EXDEV
	mayWork                      // the confinement allows it; what happens next is checked
	mustNotRead                  // fails, whatever the errno, and reveals nothing
	mustFailWith                 // fails with one of the step's errnos
)

func deny(name, sh string) step        { return step{name: name, sh: sh, kind: mustBeDenied} }
func may(name, sh string) step         { return step{name: name, sh: sh, kind: mayWork} }
func mustNotLeak(name, sh string) step { return step{name: name, sh: sh, kind: mustNotRead} }

// denyWith is a step that must fail with one of errnos: the answers of a
// confinement that hides or refuses the thing (ENOENT for a socket that is
// not there, ENOSYS for a filtered syscall...).
func denyWith(name, sh string, errnos ...string) step {
	return step{name: name, sh: sh, kind: mustFailWith, want: errnos}
}

// payload is attack.sh: each step in a subshell, its result on one line,
// run from cwd (the project's folder in the sandbox, or on the host).
func (sb *sandbox) payload(cwd, ran string, steps []step) string {
	var b strings.Builder
	b.WriteString("# the escape suite's payload: the server's own code, rewritten\n")
	fmt.Fprintf(&b, "cd %s || exit 97\necho START\n: > %s\n", shq(cwd), shq(ran))
	b.WriteString(`try() {
	if out=$( (eval "$2") 2>&1 ); then
		printf 'RESULT\t%s\tok\t%s\n' "$1" "$(printf '%s' "$out" | tr '\n\t' '  ')"
	else
		printf 'RESULT\t%s\tfail\t%s\n' "$1" "$(printf '%s' "$out" | tr '\n\t' '  ')"
	fi
}
`)
	for _, s := range steps {
		fmt.Fprintf(&b, "try %s %s\n", shq(s.name), shq(s.sh))
	}
	b.WriteString("echo DONE\n")
	return b.String()
}

// outcome is what one launch did.
type outcome struct {
	how     string // "entry" or the weakened wiring
	code    int
	stdout  string
	stderr  string
	ran     bool // the payload started: START printed or its file exists
	ranFile bool // its file reached the host: the sandbox can write its grant
	// tty is what reached the user's terminal (launchOpts.tty) as the
	// test read it from the pty's master, carriage returns and all; stdout
	// is then the same with the carriage returns removed.
	tty     string
	done    bool
	results map[string]result
	steps   []step
	took    time.Duration
}

type result struct {
	ok    bool
	errno string // for a failure: the errno its message names
	msg   string
}

// launchEntry writes the payload and spawns the client entry as a client
// does: its command and args, HOME and PATH plus the entry's env, stdin
// from /dev/null, in the project's folder.
func (sb *sandbox) launchEntry(t *testing.T, steps ...step) outcome {
	t.Helper()
	return sb.launch(t, "entry", sb.entry.Command, sb.entry.Args, sb.entry.Env, steps)
}

func (sb *sandbox) launch(t *testing.T, how, command string, args []string, env map[string]string, steps []step) outcome {
	t.Helper()
	return sb.launchWith(t, how, command, args, launchOpts{env: env}, steps)
}

// launchOpts are how a client might spawn the entry beyond the plain case.
type launchOpts struct {
	env    map[string]string // variables beside HOME and PATH (the entry's env, a planted one)
	onHost bool              // the payload runs unconfined: it starts in the project's host folder
	stdin  *os.File          // nil: /dev/null
	// ctty: the spawned command leads a new session whose controlling
	// terminal is stdin, as a client started from a terminal shares it.
	ctty       bool
	extraFiles []*os.File // inherited as descriptors 3, 4, ... (nil entries stay closed)
	// thread runs first on the locked OS thread the command is spawned
	// from: credentials such as the session keyring are per thread.
	thread func() error
	// cred, when set, is who the command runs as (the test runs as root
	// in CI; a client started by an ordinary user runs as that user).
	cred *syscall.Credential
	// tty, when set, is the user's terminal: its slave is the command's
	// stdin, stdout and stderr and its controlling terminal, as a client
	// started in a terminal hands them on; the payload's results are read
	// from the master (the test reads it as the user's terminal shows it).
	tty *pty
	// prefix runs before the command (prefix[0] with prefix[1:], then the
	// command and its args), and attr changes how it is spawned.
	prefix []string
	attr   func(*syscall.SysProcAttr)
}

func (sb *sandbox) launchWith(t *testing.T, how, command string, args []string, opts launchOpts, steps []step) outcome {
	t.Helper()
	sb.runs++
	ran := filepath.Join(sb.ranDir, fmt.Sprintf(".ran-%d", sb.runs))
	attack := filepath.Join(sb.root, "attack.sh")
	cwd := sb.cwd
	if opts.onHost {
		cwd = sb.root
	}
	body := sb.payload(cwd, ran, steps)
	if opts.tty != nil {
		// A step's stdout and stderr are its result: the payload keeps
		// its own at 5 and 6, for the steps that write to the terminal.
		body = strings.Replace(body, "echo START\n", "exec 5>&1 6>&2\necho START\n", 1)
	}
	must(t, os.WriteFile(attack, []byte(body), 0o666))
	os.Chmod(attack, 0o666)

	vars := map[string]string{"HOME": sb.home, "PATH": os.Getenv("PATH")}
	for k, v := range opts.env {
		vars[k] = v
	}
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	if len(opts.prefix) > 0 {
		command, args = opts.prefix[0], slices.Concat(opts.prefix[1:], []string{command}, args)
	}
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Env, cmd.Dir = environ, sb.root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if opts.stdin != nil {
		cmd.Stdin = opts.stdin
	}
	if opts.tty != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = opts.tty.slave, opts.tty.slave, opts.tty.slave
		opts.ctty = true
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if opts.ctty {
		cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
	}
	if opts.cred != nil {
		cmd.SysProcAttr.Credential = opts.cred
	}
	if opts.attr != nil {
		opts.attr(cmd.SysProcAttr)
	}
	cmd.ExtraFiles = opts.extraFiles
	start := time.Now()
	var err error
	if opts.thread == nil {
		err = cmd.Run()
	} else {
		done := make(chan error, 1)
		go func() {
			// Never unlocked: the thread, and what thread changed, ends
			// with this goroutine.
			runtime.LockOSThread()
			if err := opts.thread(); err != nil {
				done <- fmt.Errorf("preparing the spawning thread: %w", err)
				return
			}
			done <- cmd.Run()
		}()
		err = <-done
	}
	o := outcome{how: how, stdout: stdout.String(), stderr: stderr.String(), results: map[string]result{}, steps: steps, took: time.Since(start)}
	if opts.tty != nil {
		// What the relay (or the command itself) wrote: it may still
		// be on its way once the command has returned.
		o.tty = opts.tty.read(t, 300*time.Millisecond, 0)
		o.stdout = strings.ReplaceAll(o.tty, "\r", "")
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: starting %s: %v", sb.backend, command, err)
	}
	_, statErr := os.Lstat(filepath.Join(sb.root, ran))
	o.ranFile = statErr == nil
	o.ran = o.ranFile || strings.Contains(o.stdout, "START")
	o.done = strings.Contains(o.stdout, "DONE")
	for _, line := range strings.Split(o.stdout, "\n") {
		f := strings.SplitN(line, "\t", 4)
		if len(f) < 3 || f[0] != "RESULT" {
			continue
		}
		r := result{ok: f[2] == "ok"}
		if len(f) == 4 {
			r.msg = strings.TrimSpace(f[3])
		}
		if !r.ok {
			r.errno = errnoOf(r.msg)
		}
		o.results[f[1]] = r
	}
	t.Logf("%s via %s: exit %d in %s", sb.backend, how, o.code, o.took.Round(time.Millisecond))
	return o
}

// requireDenied checks that the payload ran to its end, every mustBeDenied
// step failed with a denial and every mustNotRead step failed, and that the
// secret appeared nowhere. It logs what the attacker saw.
func (o outcome) requireDenied(t *testing.T, backend string) {
	t.Helper()
	if !o.done {
		t.Errorf("%s via %s: the payload did not run to its end (exit %d)\nstdout:\n%s\nstderr:\n%s", backend, o.how, o.code, o.stdout, lastLines([]byte(o.stderr), 15))
	}
	if o.done && !o.ranFile {
		t.Errorf("%s via %s: the payload could not write inside its grant: every denial below proves nothing", backend, o.how)
	}
	o.requireNoSecret(t, backend)
	for _, s := range o.steps {
		r, seen := o.results[s.name]
		switch {
		case !seen:
			if o.done {
				t.Errorf("%s: %s: no result", backend, s.name)
			}
		case s.kind == mayWork:
			t.Logf("%s: %s: %s (allowed; what follows is checked)", backend, s.name, r.describe())
		case r.ok:
			t.Errorf("%s: %s: the attack SUCCEEDED (%s)", backend, s.name, r.msg)
		case s.kind == mustBeDenied && !denial[r.errno]:
			t.Errorf("%s: %s: failed, but not with a denial: %s; the attempt proves nothing", backend, s.name, r.describe())
		case s.kind == mustFailWith && !slices.Contains(s.want, r.errno):
			t.Errorf("%s: %s: failed, but with %s, not one of %v: the attempt proves nothing (%s)", backend, s.name, r.describe(), s.want, r.msg)
		case s.kind == mustFailWith:
			t.Logf("%s: %s: %s (%s)", backend, s.name, r.describe(), r.msg)
		default:
			t.Logf("%s: %s: %s", backend, s.name, r.describe())
		}
	}
}

// requireRefused checks that the launcher refused the launch as tampered
// (exit 8) and that nothing of the payload ran.
func (o outcome) requireRefused(t *testing.T, backend string) {
	t.Helper()
	o.requireNoSecret(t, backend)
	if o.code != exitTampered || o.ran {
		t.Errorf("%s via %s: exit %d, payload ran: %v; want exit %d and nothing run\nstdout:\n%s\nstderr:\n%s",
			backend, o.how, o.code, o.ran, exitTampered, o.stdout, lastLines([]byte(o.stderr), 15))
		return
	}
	t.Logf("%s: the next launch was refused: exit %d: %s", backend, o.code, lastLines([]byte(o.stderr), 1))
}

func (o outcome) requireNoSecret(t *testing.T, backend string) {
	t.Helper()
	if strings.Contains(o.stdout, secret) || strings.Contains(o.stderr, secret) {
		t.Errorf("%s via %s: the planted credentials were read:\n%s", backend, o.how, o.stdout)
	}
}

// requireSucceeded is the weakened wiring's check: the named steps worked.
func (o outcome) requireSucceeded(t *testing.T, backend string, names ...string) {
	t.Helper()
	for _, n := range names {
		r, seen := o.results[n]
		if !seen || !r.ok {
			t.Errorf("weakened %s: %s: %s; the attack must succeed here, or the suite cannot tell an escape from a denial\nstdout:\n%s\nstderr:\n%s",
				backend, n, r.describe(), o.stdout, lastLines([]byte(o.stderr), 15))
			continue
		}
		t.Logf("weakened %s: %s: succeeded", backend, n)
	}
}

func (r result) describe() string {
	switch {
	case r.ok:
		return "ok"
	case r.errno != "":
		return r.errno
	case r.msg == "":
		return "failed (no message)"
	}
	return "failed: " + r.msg
}

// denial is the errnos of a confinement's refusal.
var denial = map[string]bool{"EROFS": true, "EBUSY": true, "EACCES": true, "EPERM": true, "EXDEV": true}

// errnoOf names the errno a failure message shows: the helper's
// "errno=ENAME", or glibc's and musl's strerror texts, as coreutils, dash
// and busybox print them.
func errnoOf(msg string) string {
	if i := strings.Index(msg, "errno="); i >= 0 {
		name, _, _ := strings.Cut(msg[i+len("errno="):], " ")
		return name
	}
	for _, e := range []struct{ text, name string }{
		{"Read-only file system", "EROFS"},
		{"Device or resource busy", "EBUSY"}, {"Resource busy", "EBUSY"},
		{"Permission denied", "EACCES"},
		{"Operation not permitted", "EPERM"},
		{"Invalid cross-device link", "EXDEV"}, {"Cross-device link", "EXDEV"},
		{"No such file or directory", "ENOENT"},
		// dash's and busybox's words for ENOENT on a redirection.
		{"Directory nonexistent", "ENOENT"}, {"nonexistent directory", "ENOENT"},
		{"No such device or address", "ENXIO"},
		{"File exists", "EEXIST"},
		{"Directory not empty", "ENOTEMPTY"},
		{"Not a directory", "ENOTDIR"},
		{"Is a directory", "EISDIR"},
		{"Invalid argument", "EINVAL"},
		{"No space left on device", "ENOSPC"},
	} {
		if strings.Contains(msg, e.text) {
			return e.name
		}
	}
	return ""
}

// snapshot is what must not change on the host: every file under the
// project's protected top-level names (protect.Names, and alwaysHashed)
// and under the planted home, by type, mode and sha256; and the project's
// top-level names.
type snapshot map[string]string

// alwaysHashed are top-level names the scenarios attack that the snapshot
// hashes whatever protect.Names says: a name dropped from the list must
// show as a change, not as a name no longer looked at.
var alwaysHashed = []string{".hg", ".mvn", "mcpolicy.d", "mcpolicy.jsonnet"}

func (sb *sandbox) snapshot(t *testing.T) snapshot {
	t.Helper()
	snap := snapshot{}
	ents, err := os.ReadDir(sb.root)
	if err != nil {
		t.Fatal(err)
	}
	var top []string
	for _, e := range ents {
		top = append(top, e.Name())
		if protect.Match(e.Name()) != "" || slices.Contains(alwaysHashed, e.Name()) {
			walk(t, snap, "proj", sb.root, e.Name())
		}
	}
	snap["proj/ (top-level names)"] = strings.Join(top, " ")
	walk(t, snap, "home", sb.home, ".")
	return snap
}

// walk records root/rel and everything below it, following no symlink.
func walk(t *testing.T, snap snapshot, label, root, rel string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(root, rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		key := label + "/" + filepath.ToSlash(r)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			snap[key] = "symlink -> " + target
		case d.IsDir():
			snap[key] = fmt.Sprintf("dir %v", info.Mode())
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			snap[key] = fmt.Sprintf("file %v sha256:%s", info.Mode(), hex.EncodeToString(sum[:]))
		default:
			snap[key] = fmt.Sprintf("other %v", info.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// stateKey is the home's mcpolicy state folder in a snapshot: the launcher
// records every session there (outside every grant) and check and sessions
// write the end of each, so what changes there is mcpolicy's own. It is
// still walked: an entry there that is not a 0600 file or a 0700 folder
// shows as a change (ownDiff).
const stateKey = "home/.local/state/mcpolicy"

// ownDiff says what in the state folder is not what mcpolicy writes there.
func ownDiff(k, v string) bool {
	if k == stateKey || !strings.HasPrefix(k, stateKey+"/") {
		return false
	}
	return !strings.HasPrefix(v, "file -rw------- ") && v != "dir drwx------"
}

// diff lists what differs between two snapshots.
func (a snapshot) diff(b snapshot) []string {
	var out []string
	for k, w := range b {
		if ownDiff(k, w) {
			out = append(out, fmt.Sprintf("mcpolicy's state folder holds %s (%s)", k, w))
		}
	}
	for k := range a {
		if strings.HasPrefix(k, stateKey+"/") {
			delete(a, k)
		}
	}
	for k, w := range b {
		if strings.HasPrefix(k, stateKey+"/") {
			delete(b, k)
		}
		// The folders the launcher makes (0700) when the home had none.
		if _, had := a[k]; !had && strings.HasPrefix(stateKey+"/", k+"/") && w == "dir drwx------" {
			delete(b, k)
		}
	}
	for k, v := range a {
		switch w, ok := b[k]; {
		case !ok:
			out = append(out, fmt.Sprintf("removed %s (%s)", k, v))
		case w != v:
			out = append(out, fmt.Sprintf("changed %s: %s -> %s", k, v, w))
		}
	}
	for k, w := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("added %s (%s)", k, w))
		}
	}
	sort.Strings(out)
	return out
}

// requireUnchanged fails when the host differs from before.
func (sb *sandbox) requireUnchanged(t *testing.T, before snapshot) {
	t.Helper()
	if d := before.diff(sb.snapshot(t)); len(d) > 0 {
		t.Errorf("%s: the host changed:\n  %s", sb.backend, strings.Join(d, "\n  "))
	}
}

// requireChanged is the weakened wiring's check on the host.
func (sb *sandbox) requireChanged(t *testing.T, before snapshot) {
	t.Helper()
	d := before.diff(sb.snapshot(t))
	if len(d) == 0 {
		t.Errorf("weakened %s: the host did not change; the suite cannot see an escape", sb.backend)
		return
	}
	if len(d) > 12 {
		d = append(d[:12], fmt.Sprintf("... and %d more", len(d)-12))
	}
	t.Logf("weakened %s: the host changed, as it must here:\n  %s", sb.backend, strings.Join(d, "\n  "))
}

// entryArtefact is the file under .mcpolicy/ the entry makes its launcher
// read at each launch, or "" when the entry carries everything itself.
func (sb *sandbox) entryArtefact() string {
	for _, a := range sb.entry.Args {
		a = sb.expand(a)
		if strings.HasPrefix(a, filepath.Join(sb.root, ".mcpolicy")+"/") {
			return a
		}
	}
	return ""
}

func (sb *sandbox) expand(s string) string {
	return strings.NewReplacer("${PROJECT_ROOT}", sb.root, "${HOME}", sb.home).Replace(s)
}

// widen edits an artefact out of band, as an attack that got through would
// have: a bwrap argv gains the home folder at /home, a Landlock ruleset
// the whole project read-write and the home read-only, a shell wrapper a
// bind of the home; anything else one more byte.
func widen(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ruleset map[string]any
	switch argv, rewrap, err := bwrapArgv(b); {
	case err == nil:
		b = rewrap(append([]string{"--ro-bind", "${HOME}", "/home"}, argv...))
	case json.Unmarshal(b, &ruleset) == nil && ruleset["readWrite"] != nil:
		ruleset["readWrite"] = append(ruleset["readWrite"].([]any), "${PROJECT_ROOT}")
		ro, _ := ruleset["readOnly"].([]any)
		ruleset["readOnly"] = append(ro, "${HOME}")
		b, _ = json.MarshalIndent(ruleset, "", "  ")
	case bytes.Contains(b, []byte("exec bwrap \\\n")):
		b = bytes.Replace(b, []byte("exec bwrap \\\n"), []byte("exec bwrap --ro-bind \"${HOME}\" /home \\\n"), 1)
	default:
		b = append(b, '\n')
	}
	must(t, os.WriteFile(path, b, 0o666))
}

// bwrapArgv reads a bwrap artefact: a JSON argv (before the launcher), or
// an object whose "args" is the argv (the launcher's spec). rewrap writes
// another argv in the same form, the rest of the object kept.
func bwrapArgv(b []byte) (argv []string, rewrap func([]string) []byte, err error) {
	if json.Unmarshal(b, &argv) == nil {
		return argv, func(a []string) []byte { out, _ := json.MarshalIndent(a, "", "  "); return append(out, '\n') }, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(obj["args"], &argv); err != nil || len(argv) == 0 {
		return nil, nil, fmt.Errorf("neither a JSON argv nor an object with args")
	}
	return argv, func(a []string) []byte {
		obj["args"], _ = json.Marshal(a)
		out, _ := json.MarshalIndent(obj, "", "  ")
		return append(out, '\n')
	}, nil
}

// The weakened wirings.

// bwrapOps is how many values each bwrap option takes (as in clientcfg).
var bwrapOps = map[string]int{
	"--ro-bind": 2, "--ro-bind-try": 2, "--bind": 2, "--bind-try": 2, "--dev-bind": 2, "--dev-bind-try": 2,
	"--tmpfs": 1, "--size": 1, "--perms": 1, "--chmod": 2, "--dir": 1, "--symlink": 2, "--proc": 1,
	"--dev": 1, "--mqueue": 1, "--file": 2, "--bind-data": 2, "--ro-bind-data": 2, "--remount-ro": 1,
	"--setenv": 2, "--unsetenv": 1, "--chdir": 1, "--uid": 1, "--gid": 1,
	"--hostname": 1, "--argv0": 1, "--exec-label": 1, "--file-label": 1, "--lock-file": 1,
	"--sync-fd": 1, "--info-fd": 1, "--json-status-fd": 1, "--block-fd": 1, "--userns-block-fd": 1,
	"--seccomp": 1, "--add-seccomp-fd": 1, "--args": 1, "--cap-add": 1, "--cap-drop": 1,
	"--userns": 1, "--userns2": 1, "--pidns": 1, "--bind-fd": 2, "--ro-bind-fd": 2,
	"--overlay-src": 1, "--overlay": 3, "--tmp-overlay": 1, "--ro-overlay": 1,
}

// underMount reports whether a sandbox path is a mount target of the
// policy or below one.
func underMount(p string) bool {
	for _, m := range naiveMounts {
		if p == m.target || strings.HasPrefix(p, m.target+"/") {
			return true
		}
	}
	return false
}

// weakBwrapArgv is an unverified launcher's argv: the artefact as it is now
// (whoever wrote it), with every mount in the policy's targets replaced by
// naive binds of the policy's mounts, which follow symlinks and protect
// nothing.
func (sb *sandbox) weakBwrapArgv(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(sb.root, ".mcpolicy", "bwrap", "attacker.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	argv, _, err := bwrapArgv(b)
	if err != nil {
		t.Fatalf("%s: %v: the weakened wiring needs updating", path, err)
	}
	var naive []string
	for _, m := range naiveMounts {
		naive = append(naive, "--bind", filepath.Join(sb.root, m.source), m.target)
	}
	var out []string
	at := -1
	i := 0
	for i < len(argv) {
		a := argv[i]
		if a == "--" || !strings.HasPrefix(a, "--") {
			break
		}
		n := bwrapOps[a]
		if i+n >= len(argv) {
			break
		}
		v := argv[i+1 : i+1+n]
		if sb.devWritable && a == "--remount-ro" && v[0] == "/dev" {
			i += 1 + n
			continue
		}
		if n > 0 && underMount(v[n-1]) {
			if at < 0 {
				at = len(out)
			}
			i += 1 + n
			continue
		}
		out = append(out, argv[i:i+1+n]...)
		i += 1 + n
	}
	if at < 0 {
		at = len(out)
	}
	out = slices.Insert(out, at, naive...)
	out = append(out, argv[i:]...)
	for j := range out {
		out[j] = sb.expand(out[j])
		if sb.naiveIDs != nil {
			// An unverified launcher's ${UID} and ${GID}: whatever ids
			// it was given, root included.
			out[j] = strings.NewReplacer("${UID}", sb.naiveIDs[0], "${GID}", sb.naiveIDs[1]).Replace(out[j])
		}
	}
	return out
}

func (sb *sandbox) launchWeakBwrap(t *testing.T, steps ...step) outcome {
	t.Helper()
	return sb.launchWeakBwrapWith(t, nil, launchOpts{}, steps...)
}

// launchWeakBwrapWith is launchWeakBwrap with more bwrap options, placed
// before the root is remounted read-only (so a bind can create its target),
// and the given launch options; bwrap starts with the environment the
// client gives it, as the wrapper scripts before the launcher did.
func (sb *sandbox) launchWeakBwrapWith(t *testing.T, extra []string, opts launchOpts, steps ...step) outcome {
	t.Helper()
	argv := sb.weakBwrapArgv(t)
	at := slices.Index(argv, "--remount-ro")
	if at < 0 {
		at = slices.Index(argv, "--")
	}
	if at < 0 {
		t.Fatalf("weakened bwrap argv without --remount-ro or --: %q: the weakened wiring needs updating", argv)
	}
	argv = slices.Insert(argv, at, extra...)
	t.Logf("weakened bwrap: bwrap %s", shellQuote(argv))
	return sb.launchWith(t, "weakened bwrap argv (no launcher)", "bwrap", argv, opts, steps)
}

// launchBare runs the payload with no confinement at all, from the
// project's host folder, spawned as a client spawns an entry's command
// (opts: its stdin, terminal, descriptors, thread).
func (sb *sandbox) launchBare(t *testing.T, opts launchOpts, steps ...step) outcome {
	t.Helper()
	opts.onHost = true
	return sb.launchWith(t, "bare command (no launcher, no sandbox)", "/bin/sh", []string{filepath.Join(sb.root, "attack.sh")}, opts, steps)
}

// weakEngineArgs is the entry's engine args run without the launcher,
// with every mount in the policy's targets replaced by naive binds.
func (sb *sandbox) weakEngineArgs(t *testing.T) (engine string, args []string) {
	t.Helper()
	engine, args = sb.entry.Command, sb.entry.Args
	if filepath.Base(engine) == "mcpolicy-launch" {
		i := slices.Index(args, "--")
		if i < 0 {
			t.Fatalf("launcher entry without --: %q", args)
		}
		for j := 0; j < i; j++ {
			if args[j] == "--engine" && j+1 < i {
				engine = args[j+1]
			} else if v, ok := strings.CutPrefix(args[j], "--engine="); ok {
				engine = v
			}
		}
		args = args[i+1:]
	}
	var naive []string
	for _, m := range naiveMounts {
		naive = append(naive, "--mount", "type=bind,source="+filepath.Join(sb.root, m.source)+",target="+m.target)
	}
	var out []string
	at := -1
	for i := 0; i < len(args); i++ {
		a := sb.expand(args[i])
		if (a == "--mount" || a == "-v" || a == "--volume") && i+1 < len(args) && underMount(mountTarget(a, sb.expand(args[i+1]))) {
			if at < 0 {
				at = len(out)
			}
			i++
			continue
		}
		out = append(out, a)
	}
	if at < 0 {
		t.Fatalf("no mount of the policy's targets in the entry's args %q: the weakened wiring needs updating", args)
	}
	return engine, slices.Insert(out, at, naive...)
}

func mountTarget(flag, spec string) string {
	if flag != "--mount" {
		if f := strings.Split(spec, ":"); len(f) >= 2 {
			return f[1]
		}
		return ""
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "target" || k == "dst" || k == "destination" {
			return v
		}
	}
	return ""
}

func (sb *sandbox) launchWeakEngine(t *testing.T, steps ...step) outcome {
	t.Helper()
	engine, args := sb.weakEngineArgs(t)
	t.Logf("weakened %s: %s %s", sb.backend, engine, shellQuote(args))
	env := map[string]string{}
	for k, v := range sb.entry.Env {
		env[k] = v
	}
	return sb.launch(t, "weakened engine args (no launcher)", engine, args, env, steps)
}

// launchWeakLandlock runs the committed ruleset with the launcher, unverified
// (no --sha256): what an entry did before the hash.
func (sb *sandbox) launchWeakLandlock(t *testing.T, steps ...step) outcome {
	t.Helper()
	ruleset := filepath.Join(sb.root, ".mcpolicy", "landlock", "attacker.json")
	return sb.launch(t, "weakened launcher (no --sha256)", sb.s.launcher, []string{ruleset}, map[string]string{"PROJECT_ROOT": sb.root}, steps)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// shq quotes s for a POSIX shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			q[i] = a
		} else {
			q[i] = shq(a)
		}
	}
	return strings.Join(q, " ")
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
