//go:build linux

package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// TestExecHandsOverToTheLauncher: `mcpolicy exec` with mcpolicy-launch
// beside it execs the launcher with the launch, so that what stays
// beside the running server is the small launcher, not mcpolicy; the
// launch's log line is still exec's.
func TestExecHandsOverToTheLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a confined server")
	}
	if hostcaps.Detect().ABI < 1 {
		t.Skip("no Landlock on this machine")
	}
	bin, err := testbin.Path(testbin.McpolicyPkg)
	if err != nil {
		t.Fatal(err)
	}
	launcher, err := testbin.Path(testbin.LaunchPkg)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(launcher) != filepath.Dir(bin) {
		t.Fatalf("testbin built mcpolicy (%s) and the launcher (%s) in different folders", bin, launcher)
	}
	canary, err := testbin.Path(testbin.CanaryPkg)
	if err != nil {
		t.Fatal(err)
	}
	// Not below t.TempDir (mode 0700): a root launcher runs the server
	// as 1000:1000, which must reach its grant.
	dir, err := os.MkdirTemp("", "mcpolicy-handover-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	if err := testbin.CopyFile(canary, filepath.Join(dir, "bin", "canary")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: s: {
	image:    "localhost/none:x"
	command:  ["/opt/canary/canary", "/opt/canary"]
	runtime:  "static"
	backends: ["landlock"]
	mounts: [{source: "bin", target: "/opt/canary"}]
}
`)
	cmd := exec.Command(bin, "exec", "-p", dir, "--server", "s")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The canary's first line says it runs: the handover is done by then.
	var said strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		fmt.Fprintln(&said, sc.Text())
		if strings.HasPrefix(sc.Text(), "canary: startup read") {
			break
		}
	}
	exe, exeErr := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid))
	stdin.Close()
	rest, _ := io.ReadAll(stderr)
	said.Write(rest)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exec: %v\n%s", err, said.String())
	}
	want, _ := filepath.EvalSymlinks(launcher)
	if exeErr != nil || exe != want {
		t.Errorf("the process exec started runs %q (%v), want the launcher %s\n%s", exe, exeErr, want, said.String())
	}
	recs, err := launchlog.Read(launchlog.Path(filepath.Join(state, "mcpolicy"), dir, "s"))
	if err != nil || len(recs) != 1 || recs[0].Entry != "exec" || recs[0].Exit == nil || *recs[0].Exit != 0 {
		t.Errorf("launch log: %+v (%v), want one record of exec's, exit 0", recs, err)
	}
}
