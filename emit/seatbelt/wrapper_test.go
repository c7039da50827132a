package seatbelt

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
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
	script = script[:strings.Index(script, "exec "+SandboxExec)] + "echo checked\n"
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
