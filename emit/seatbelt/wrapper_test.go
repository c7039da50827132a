package seatbelt

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"mvdan.cc/sh/v3/syntax"
)

// TestWrapperRefusesASwappedSource runs the wrapper's path checks with sh
// (here, on Linux: everything before sandbox-exec is POSIX): a mount source
// below the project that became a symlink since the build is refused with
// exit 8; the same tree without the swap passes.
func TestWrapperRefusesASwappedSource(t *testing.T) {
	p := plan(compiler.HostPath{Base: compiler.ProjectRoot, Rel: "data"})
	pr, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := Wrapper(p, pr, "../..")
	if err != nil {
		t.Fatal(err)
	}
	// Stop before sandbox-exec, and let root (the test) run it.
	script := strings.Replace(string(sh), `if [ "$(id -u)" -eq 0 ]; then`, `if false; then`, 1)
	script = script[:strings.Index(script, "exec "+Env)] + "echo checked\n"
	for _, swapped := range []bool{false, true} {
		dir := t.TempDir()
		root := filepath.Join(dir, "proj")
		os.MkdirAll(filepath.Join(root, "data"), 0o755)
		os.MkdirAll(filepath.Join(root, ".mcpolicy", "seatbelt"), 0o755)
		os.MkdirAll(filepath.Join(dir, "home", ".aws"), 0o755)
		if swapped {
			os.RemoveAll(filepath.Join(root, "data"))
			if err := os.Symlink("../home", filepath.Join(root, "data")); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("/bin/sh", "-c", script, filepath.Join(root, ".mcpolicy/seatbelt/s.sh"))
		cmd.Env = []string{"PROJECT_ROOT=" + root, "HOME=" + filepath.Join(dir, "home"), "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		switch {
		case swapped && (code != 8 || !strings.Contains(string(out), "symlink")):
			t.Errorf("a swapped source: exit %d, want 8\n%s", code, out)
		case !swapped && (code != 0 || !strings.Contains(string(out), "checked")):
			t.Errorf("the control: exit %d, want 0\n%s", code, out)
		}
	}
}

// TestArgumentsTranslated: seatbelt runs with host paths, so every
// argument naming a sandbox path, whole or after --flag=, becomes the host
// path (the scratch folder's included); a sandbox path inside a longer
// word is refused with its position and a hint, never passed on silently.
func TestArgumentsTranslated(t *testing.T) {
	p := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
	p.Command = []string{"node", "/w/index.js", "--data=/data/db", "/tmp/cache", "--tmp=/tmp", "stdio", "/var/log/x", "https://example.com/w/x"}
	pr, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	args, err := Args(p, pr, compiler.Placeholders{}, "x.sb")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--", "node", "${PROJECT_ROOT}/index.js", "--data=${HOME}/.cache/x/db", "${SCRATCH}/cache", "--tmp=${SCRATCH}", "stdio", "/var/log/x", "https://example.com/w/x"}
	tail := args[len(args)-len(want):]
	if strings.Join(tail, "\n") != strings.Join(want, "\n") {
		t.Errorf("argv:\n%q\nwant\n%q", tail, want)
	}
	if !strings.Contains(strings.Join(args, "\n"), "SCRATCH=${SCRATCH}\n") || strings.Contains(strings.Join(args, " "), "TMPDIR") {
		t.Errorf("scratch parameter: %q", args)
	}
	sh, err := Wrapper(p, pr, "../..")
	if err != nil {
		t.Fatal(err)
	}
	if want := `-- node "${PROJECT_ROOT}"/index.js '--data='"${HOME}"/.cache/x/db "$SCRATCH"/cache '--tmp='"$SCRATCH" stdio /var/log/x https://example.com/w/x`; !strings.Contains(string(sh), want) {
		t.Errorf("wrapper lacks %s:\n%s", want, sh)
	}

	for i, bad := range map[int]string{2: "--paths=/w/a:/w/b", 3: "-I/w/include", 4: "/w/a,/data/b", 5: "PYTHONPATH=/usr/lib/python3:/w/lib"} {
		q := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
		q.Command = []string{"server", "--stdio", "ok", "ok", "ok", "ok"}
		q.Command[i] = bad
		_, err := Build(q)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("servers.s.command[%d]", i)) ||
			!strings.Contains(err.Error(), "inside a longer word") || !strings.Contains(err.Error(), "hint: pass the path as an argument of its own") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestSearchPath: where the baseline grants Homebrew, its bin comes before
// /usr/bin, whose python3 and git are xcrun shims that fail in a sandbox;
// a bare python3 gets a note when only the shim is found.
func TestSearchPath(t *testing.T) {
	for runtime, want := range map[string]string{
		"static": "/usr/bin:/bin:/usr/sbin:/sbin:/opt/homebrew/bin:/usr/local/bin",
		"system": "/usr/bin:/bin:/usr/sbin:/sbin:/opt/homebrew/bin:/usr/local/bin",
		"node":   "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"python": "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
	} {
		p := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
		p.Runtime.Name = runtime
		p.Command = []string{"python3", "-m", "server"}
		pr, err := Build(p)
		if err != nil {
			t.Fatal(err)
		}
		sh, err := Wrapper(p, pr, "../..")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(sh), "    PATH="+want+" HOME=") {
			t.Errorf("%s: PATH is not %s:\n%s", runtime, want, sh)
		}
		if !strings.Contains(string(sh), `/usr/bin/python3) echo 'mcpolicy: python3 resolves to /usr/bin/python3, an xcrun shim`) {
			t.Errorf("%s: no shim note:\n%s", runtime, sh)
		}
		if _, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(string(sh)), "w.sh"); err != nil {
			t.Errorf("%s: the wrapper is not valid shell: %v", runtime, err)
		}
		if !strings.Contains(string(sh), `"$(PATH=`+want+"; command -v python3 ") {
			t.Errorf("%s: the shim is not looked up on the server's PATH:\n%s", runtime, sh)
		}
	}
	p := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
	pr, _ := Build(p)
	if sh, _ := Wrapper(p, pr, "../.."); strings.Contains(string(sh), "xcrun") {
		t.Errorf("a note for a command that is no shim:\n%s", sh)
	}
}
