package seatbelt

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
)

// standInName is the name under which this test binary plays sandbox-exec:
// it prints what it was given, exactly as the kernel handed it over.
const standInName = "sandbox-exec"

type standInReport struct {
	Args []string
	Env  []string
}

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == standInName {
		json.NewEncoder(os.Stdout).Encode(standInReport{Args: os.Args[1:], Env: os.Environ()})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// wrapperShells are the ways a client or a user starts the wrapper: by its
// shebang (/bin/sh, dash here; bash 3.2 in POSIX mode on macOS), and
// through each shell by name.
var wrapperShells = []struct {
	name string
	argv []string // before the script; nil: the script itself
}{
	{"shebang", nil},
	{"sh", []string{"sh"}},
	{"dash", []string{"dash"}},
	{"bash", []string{"bash"}},
	{"bash-posix", []string{"bash", "--posix"}},
	{"zsh", []string{"zsh"}},
}

// shellOrSkip finds a shell: missing in CI it fails (CI installs them
// all), elsewhere the case is skipped.
func shellOrSkip(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed, and CI must run the wrapper under it: add it to .ci/run's packages", name)
	}
	t.Skipf("%s is not installed here (CI installs it)", name)
	return ""
}

// TestWrapperEnvironment is the wrapper's environment under every shell
// that may run it, with the caller's environment hostile: a secret, names
// that are no shell identifier (npm's per-registry token, AWS-SESSION),
// BASH_ENV and ENV, a function exported by bash, a value with a newline
// that reads like `export -p` output, the proxy names set to elsewhere.
// The stand-in for sandbox-exec must receive exactly the granted variables
// the caller set (an empty one empty, an unset one absent), with their
// values byte for byte, plus the fixed set the wrapper documents (PATH,
// HOME and TMPDIR at the scratch folder, the proxy variables); and the
// scratch folder must exist and be what -D SCRATCH names.
func TestWrapperEnvironment(t *testing.T) {
	p := plan(compiler.HostPath{Base: compiler.ProjectRoot, Rel: "data"})
	p.Env = []compiler.EnvGrant{{Name: "TOKEN"}, {Name: "EMPTY_ONE"}, {Name: "UNSET_ONE"}, {Name: "HOME"}, {Name: "HTTPS_PROXY"}, {Name: "PROJECT_ROOT"}, {Name: "SCRATCH"}}
	p.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24567}
	const token = "t0k'en\" $(touch pwned) `touch pwned` \\ ${HOME} \nexport AWS_SECRET_ACCESS_KEY=x\n=tail=  "
	for _, sc := range wrapperShells {
		t.Run(sc.name, func(t *testing.T) {
			w := startWrapper(t, p, sc.argv, nil, func(w *wrapperRun) []string {
				startup := filepath.Join(w.dir, "startup.sh")
				os.WriteFile(startup, []byte("export LEAKED_BY_STARTUP_FILE=1\n"), 0o644)
				return []string{
					"TOKEN=" + token, "EMPTY_ONE=", "SCRATCH=the caller's",
					"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
					"npm_config_//registry.npmjs.org/:_authToken=npm_0123456789abcdef",
					"AWS-SESSION=session-secret",
					"BASH_ENV=" + startup, "ENV=" + startup,
					"BASH_FUNC_greet%%=() {  echo hi\n}",
					"NOTE=one\nexport UNSET_ONE=planted\nexport TOKEN=replaced",
					"HTTPS_PROXY=http://elsewhere:1", "NO_PROXY=*",
				}
			})
			// The scratch folder: made under the caller's TMPDIR, resolved,
			// handed to the profile, and the server's HOME and TMPDIR.
			scratch := w.param("SCRATCH")
			if fi, err := os.Stat(scratch); err != nil || !fi.IsDir() || !strings.HasPrefix(filepath.Base(scratch), "mcpolicy-scratch.") || filepath.Dir(scratch) != w.tmp {
				t.Errorf("scratch folder %q: %v (args %q)", scratch, err, w.got.Args)
			}
			want := []string{
				"EMPTY_ONE=", "HOME=" + scratch, "PATH=" + strings.Join(SearchPath(p.Runtime.Name), ":"),
				"PROJECT_ROOT=" + w.root, "SCRATCH=the caller's", "TMPDIR=" + scratch, "TOKEN=" + token,
			}
			for _, kv := range sandbox.ProxyEnv(p.Network.ProxyPort) {
				want = append(want, kv[0]+"="+kv[1])
			}
			w.wantEnv(want)
			w.wantArgs("-f", filepath.Join(w.root, ".mcpolicy", "seatbelt", "s.sb"),
				"-D", "MOUNT_0="+w.root, "-D", "MOUNT_1="+filepath.Join(w.root, "data"), "-D", "SCRATCH="+scratch,
				"--", w.root+"/bin/server", "--stdio")
			for _, d := range []string{w.dir, w.root} {
				if _, err := os.Stat(filepath.Join(d, "pwned")); err == nil {
					t.Errorf("a value ran as code")
				}
			}
		})
	}
}

// TestWrapperEnvironmentNoGrants: with no grant, no scratch and no network
// the server gets PATH and HOME=/var/empty only, and what the wrapper is
// given as arguments changes nothing (its positional parameters carry the
// granted variables to env -i: they are emptied even when there are none).
func TestWrapperEnvironmentNoGrants(t *testing.T) {
	p := plan(compiler.HostPath{Base: compiler.ProjectRoot, Rel: "data"})
	p.Env, p.Scratch, p.Accept, p.Runtime.Name = nil, nil, nil, "system"
	for _, sc := range wrapperShells {
		t.Run(sc.name, func(t *testing.T) {
			w := startWrapper(t, p, sc.argv, []string{"INJECTED=1", "/bin/sh", "-c", "echo escaped"}, func(*wrapperRun) []string {
				return []string{"AWS_SECRET_ACCESS_KEY=x", "TOKEN=y"}
			})
			w.wantEnv([]string{"HOME=/var/empty", "PATH=" + strings.Join(SearchPath("system"), ":")})
			w.wantArgs("-f", filepath.Join(w.root, ".mcpolicy", "seatbelt", "s.sb"),
				"-D", "MOUNT_0="+w.root, "-D", "MOUNT_1="+filepath.Join(w.root, "data"),
				"--", w.root+"/bin/server", "--stdio")
		})
	}
}

// wrapperRun is one start of a plan's wrapper, in a fresh project, with
// this test binary as sandbox-exec.
type wrapperRun struct {
	t                    *testing.T
	dir, root, home, tmp string
	got                  standInReport
}

// startWrapper writes the plan's wrapper into .mcpolicy/seatbelt of a
// fresh project and runs it: through shell (nil: by its shebang), with
// args after it, and a caller's environment of PATH, HOME, TMPDIR,
// PROJECT_ROOT and what callerEnv adds.
func startWrapper(t *testing.T, p *compiler.Plan, shell, args []string, callerEnv func(*wrapperRun) []string) *wrapperRun {
	t.Helper()
	var argv []string
	if shell != nil {
		argv = append([]string{shellOrSkip(t, shell[0])}, shell[1:]...)
	}
	pr, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := Wrapper(p, pr, "../..")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &wrapperRun{t: t, dir: t.TempDir()}
	w.root, w.home, w.tmp = filepath.Join(w.dir, "proj"), filepath.Join(w.dir, "home"), filepath.Join(w.dir, "tmp")
	for _, d := range []string{filepath.Join(w.root, "data"), filepath.Join(w.root, ".mcpolicy", "seatbelt"), w.home, w.tmp, filepath.Join(w.dir, "bin")} {
		os.MkdirAll(d, 0o755)
	}
	standIn := filepath.Join(w.dir, "bin", standInName)
	if err := os.Symlink(self, standIn); err != nil {
		t.Fatal(err)
	}
	script := strings.Replace(string(sh), SandboxExec+" ", standIn+" ", 1)
	if os.Geteuid() == 0 { // the wrapper refuses root, which runs this test here
		script = strings.Replace(script, `if [ "$(id -u)" -eq 0 ]; then`, `if false; then`, 1)
	}
	path := filepath.Join(w.root, ".mcpolicy", "seatbelt", "s.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	argv = append(append(argv, path), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = w.dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + w.home, "TMPDIR=" + w.tmp, "PROJECT_ROOT=" + w.root}, callerEnv(w)...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%v\n%s%s", err, out, stderr)
	}
	if err := json.Unmarshal(out, &w.got); err != nil {
		t.Fatalf("the stand-in's report: %v\n%s", err, out)
	}
	return w
}

// param is the value of sandbox-exec's -D NAME=value.
func (w *wrapperRun) param(name string) string {
	for i := 0; i+1 < len(w.got.Args); i++ {
		if v, ok := strings.CutPrefix(w.got.Args[i+1], name+"="); ok && w.got.Args[i] == "-D" {
			return v
		}
	}
	return ""
}

func (w *wrapperRun) wantEnv(want []string) {
	w.t.Helper()
	env := slices.Clone(w.got.Env)
	slices.Sort(env)
	slices.Sort(want)
	if !slices.Equal(env, want) {
		w.t.Errorf("the server's environment:\n%s\nwant exactly\n%s", listEnv(env), listEnv(want))
	}
}

func (w *wrapperRun) wantArgs(want ...string) {
	w.t.Helper()
	if !slices.Equal(w.got.Args, want) {
		w.t.Errorf("sandbox-exec's arguments:\n%q\nwant\n%q", w.got.Args, want)
	}
}

func listEnv(env []string) string {
	var b strings.Builder
	for _, kv := range env {
		fmt.Fprintf(&b, "  %q\n", kv)
	}
	return b.String()
}
