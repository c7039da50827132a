package escape_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The bytecode-plant scenario: code the host's interpreter runs next,
// which git does not show. The server plants a __pycache__/*.pyc whose
// header copies the committed source's mtime and size (the next import
// runs it instead of the source), and a .pth file in the git-ignored
// venv's site-packages (run at every start of that interpreter: pip,
// pytest, the editor's language server). At the top of a read-write mount
// __pycache__ and .venv are protected names: read-only. Below the top
// (pkg/__pycache__, data/__pycache__, created by the server) no mount can
// refuse a name that does not exist yet: what holds there is lint's
// RW_CODE_CACHE error on the policy before launch, asserted here; the
// launch itself does not, and the scenario logs that the host ran it.
var bytecodeScenarios = []scenario{
	{
		name: "bytecode-plant", spec: bytecodeSpec, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			py := preparePython(t, sb)
			requireLintRefusesCode(t, sb)
			if sb.backend == "landlock" {
				requireLandlockProtectsPycache(t, sb)
			}
			before := sb.snapshot(t)
			sb.launchEntry(t, bytecodeSteps(py)...).requireDenied(t, sb.backend)
			sb.requireUnchanged(t, before)
			sb.requireNoCommandRan(t)
			planted := []string{"pkg/__pycache__/util2.", "data/__pycache__/report."}
			if sb.backend == "landlock" {
				planted = planted[1:] // the project is read-only there: only data/ is a grant
			}
			requireReported(t, sb, planted...)
			ran := py.hostRuns(t, sb)
			for _, m := range []string{"pyc-top", "pth"} {
				if ran[m] {
					t.Errorf("%s: the host's python ran the planted %s", sb.backend, m)
				}
			}
			for _, m := range []string{"pyc-pkg", "pyc-data"} {
				if ran[m] {
					t.Logf("%s: below the top, the host's python ran the planted %s: no mount can refuse a name the server creates there; lint refused this policy before launch (RW_CODE_CACHE) and mcpolicy check reported the planted bytecode after it", sb.backend, m)
				}
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			py := preparePython(t, sb)
			before := sb.snapshot(t)
			steps := bytecodeSteps(py)
			sb.launchWeakBwrap(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
			sb.requireChanged(t, before)
			ran := py.hostRuns(t, sb)
			for _, m := range []string{"pyc-top", "pth", "pyc-pkg", "pyc-data"} {
				if !ran[m] {
					t.Errorf("weakened %s: the host's python did not run the planted %s: the suite cannot see the escape", sb.backend, m)
				}
			}
		},
	},
}

// bytecodeSpec: main.py imports util (at the top), pkg.util2 (a package)
// and data.report (in data/, the Landlock policy's read-write folder);
// __pycache__/ and .venv/ are git-ignored.
var bytecodeSpec = projectSpec{files: map[string]string{
	".gitignore":      "__pycache__/\n.venv/\n",
	"main.py":         "import util\nimport pkg.util2\nfrom data import report\n",
	"util.py":         "X = 1\n",
	"pkg/__init__.py": "",
	"pkg/util2.py":    "Y = 2\n",
	"data/report.py":  "Z = 3\n",
}}

// python is what the scenario learned of the host's python3, and where it
// staged the attacker's files.
type python struct {
	tag, lib string // sys.implementation.cache_tag; the venv's lib/pythonX.Y
}

// preparePython makes what the user has before the server starts: a venv
// (python3 -m venv --without-pip, no network) and the top's __pycache__
// from an earlier run; and stages, in src/attack/, what the server writes:
// each .pyc with its source's mtime and size in the header, whose code
// touches a marker on the host, and a .pth that does.
func preparePython(t *testing.T, sb *sandbox) python {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if ci {
			t.Fatalf("CI=true, so not skipping: python3 is not installed: %v", err)
		}
		t.Skipf("python3 is not installed: %v", err)
	}
	hostPython(t, sb.root, "python3", "-m", "venv", "--without-pip", ".venv")
	hostPython(t, sb.root, "python3", "-c", "import py_compile; py_compile.compile('util.py', doraise=True)")
	out := hostPython(t, sb.root, "python3", "-c", "import sys; print(sys.implementation.cache_tag, 'python%d.%d' % sys.version_info[:2])")
	f := strings.Fields(out)
	if len(f) != 2 {
		t.Fatalf("python3 said %q", out)
	}
	py := python{tag: f[0], lib: f[1]}
	must(t, os.MkdirAll(filepath.Join(sb.root, "src", "attack"), 0o755))
	for _, c := range [][2]string{{"util.py", "pyc-top"}, {"pkg/util2.py", "pyc-pkg"}, {"data/report.py", "pyc-data"}} {
		hostPython(t, sb.root, "python3", "-c", plantPyc, c[0], sb.marker(c[1]), filepath.Join("src", "attack", c[1]+".pyc"))
	}
	must(t, os.WriteFile(filepath.Join(sb.root, "src", "attack", "evil.pth"),
		[]byte("import os; open("+pyQuote(sb.marker("pth"))+", 'w').write('ran')\n"), 0o644))
	// As sandbox() does: a denial must be the confinement's, not a mode's.
	if out, err := exec.Command("chmod", "-R", "a+rwX", sb.root).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v\n%s", err, out)
	}
	return py
}

// plantPyc writes argv[3]: a timestamp .pyc for the source argv[1], its
// header the source's mtime and size, its code writing the marker argv[2].
const plantPyc = `import importlib.util, marshal, os, sys
src, marker, out = sys.argv[1:4]
st = os.stat(src)
code = compile("open(%r, 'w').write('ran')\n" % marker, src, "exec")
head = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
head += (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
open(out, "wb").write(head + marshal.dumps(code))
`

func pyQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// hostPython runs a command in dir on the host, with a plain environment
// (no PYTHON* variable), and returns its output.
func hostPython(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("host %s: %v\n%s", shellQuote(args), err, out)
	}
	return string(out)
}

// bytecodeSteps are the server's writes: the top's pyc (over the user's,
// and through a swapped __pycache__), the venv's .pth, and the pyc of a
// package below the top and of data/ (allowed where the folder is
// writable: what follows is checked).
func bytecodeSteps(py python) []step {
	pyc := func(dir, name string) string { return dir + "/__pycache__/" + name + "." + py.tag + ".pyc" }
	return []step{
		deny("plant __pycache__/util.pyc with util.py's mtime and size", "cp src/attack/pyc-top.pyc "+pyc(".", "util")),
		deny("swap __pycache__ for a planted one", "mv __pycache__ __pycache__.old && mkdir __pycache__ && cp src/attack/pyc-top.pyc "+pyc(".", "util")),
		deny("plant evil.pth in .venv's site-packages", "cp src/attack/evil.pth .venv/lib/"+py.lib+"/site-packages/evil.pth"),
		may("plant pkg/__pycache__/util2.pyc (below the top)", "mkdir -p pkg/__pycache__ && cp src/attack/pyc-pkg.pyc "+pyc("pkg", "util2")),
		may("plant data/__pycache__/report.pyc (below the top)", "mkdir -p data/__pycache__ && cp src/attack/pyc-data.pyc "+pyc("data", "report")),
	}
}

// hostRuns is the user's next python3 main.py and the venv's interpreter
// starting (as pip or pytest would), on the host; the markers left.
func (py python) hostRuns(t *testing.T, sb *sandbox) map[string]bool {
	t.Helper()
	for _, c := range [][]string{{"python3", "main.py"}, {filepath.Join(sb.root, ".venv", "bin", "python"), "-c", "pass"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Dir, cmd.Env = sb.root, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + sb.home}
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Logf("host %s: %v: %s", shellQuote(c), err, lastLines(out, 3))
		}
	}
	ran := map[string]bool{}
	for _, m := range sb.markersFound(t) {
		ran[m] = true
	}
	t.Logf("%s: after the host's python3 main.py and .venv/bin/python: markers %v", sb.backend, sb.markersFound(t))
	return ran
}

// requireLintRefusesCode: lint, before launch, refuses the policy with
// RW_CODE_CACHE, naming the Python sources below the top whose
// __pycache__ the server can create (on Landlock, data/'s report.py at
// the top of its read-write mount, whose __pycache__ is absent).
func requireLintRefusesCode(t *testing.T, sb *sandbox) {
	t.Helper()
	want := "pkg/"
	if sb.backend == "landlock" {
		want = "report.py"
	}
	code, out := sb.mcpolicyTry(t, nil, "lint", sb.root)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "RW_CODE_CACHE error") {
			line = l
		}
	}
	if code != 5 || !strings.Contains(line, want) {
		t.Errorf("%s: mcpolicy lint: exit %d, want 5 with an RW_CODE_CACHE error naming %s:\n%s", sb.backend, code, want, out)
		return
	}
	t.Logf("%s: lint refuses the policy before launch: %s", sb.backend, line)
}

// requireLandlockProtectsPycache: where data/__pycache__ exists when the
// policy is built, Landlock's ruleset binds it read-only inside the
// read-write data/ (the launcher's minimal root), as bwrap binds a
// protected name present then. Built elsewhere: the project's artefacts
// stay the ones its entry pins.
func requireLandlockProtectsPycache(t *testing.T, sb *sandbox) {
	t.Helper()
	dir := filepath.Join(sb.root, "data", "__pycache__")
	must(t, os.Mkdir(dir, 0o777))
	defer os.Remove(dir)
	out := t.TempDir()
	code, msg := sb.mcpolicyTry(t, nil, "build", "--out", out, sb.root)
	b, _ := os.ReadFile(filepath.Join(out, "landlock", "attacker.json"))
	if code != 0 || !strings.Contains(string(b), `"${PROJECT_ROOT}/data/__pycache__"`) {
		t.Errorf("landlock: mcpolicy build with data/__pycache__ present: exit %d, want its ruleset to protect it:\n%s\n%s", code, msg, b)
		return
	}
	t.Logf("landlock: with data/__pycache__ present the ruleset binds it read-only")
}

// requireReported: after the session, mcpolicy check (with the entry's
// HOME) fails naming each planted path as bytecode: what no mount can
// refuse below the top is evidence in the write report.
func requireReported(t *testing.T, sb *sandbox, paths ...string) {
	t.Helper()
	code, out := sb.mcpolicyTry(t, []string{"XDG_STATE_HOME="}, "check", "-p", sb.root)
	// On Landlock the planted data/__pycache__ is a protected name at the
	// top of the read-write grant data/: the plan now binds it read-only,
	// so the committed artefacts are stale (exit 6, drift), and check
	// shows the report beside that.
	if want := exitFindings; code != want && !(sb.backend == "landlock" && code == 6) {
		t.Errorf("%s: mcpolicy check after the planting session: exit %d, want %d\n%s", sb.backend, code, want, out)
	}
	for _, p := range paths {
		if !lineHas(out, p, "bytecode") {
			t.Errorf("%s: mcpolicy check does not flag %s as bytecode:\n%s", sb.backend, p, out)
		}
	}
}
