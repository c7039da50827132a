package prove

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
)

// TestSweepOrphans: a prove run killed before its cleanup (SIGKILL, out of
// memory: a hostile server can cause the second) leaves its containers,
// the server running in them with no one attached. The next run that
// uses the engine removes the containers whose owner is gone, and only
// those: not a live run's, not one of another pid namespace.
func TestSweepOrphans(t *testing.T) {
	testbin.SkipShort(t, "runs docker and podman")
	for _, engine := range []string{"docker", "podman"} {
		t.Run(engine, func(t *testing.T) {
			if why := testenv.Unavailable(engine); why != "" {
				if os.Getenv("CI") == "true" {
					t.Fatal(why)
				}
				t.Skip(why)
			}
			image := "mcpolicy-sweep-test:empty"
			imp := exec.Command(engine, "import", "-", image)
			imp.Stdin = strings.NewReader(string(make([]byte, 1024))) // an empty tar: two zero blocks
			if out, err := imp.CombinedOutput(); err != nil {
				t.Fatalf("%s import: %v: %s", engine, err, out)
			}
			t.Cleanup(func() { exec.Command(engine, "rmi", "-f", image).Run() })
			dead := deadPid(t)
			owners := map[string]bool{ // owner -> removed by the sweep
				fmt.Sprintf("%s/%d", pidNamespace(), dead):        true,
				fmt.Sprintf("%s/%d", pidNamespace(), os.Getpid()): false,
				fmt.Sprintf("pid:[1]/%d", dead):                   false, // another namespace: its pids are not ours to judge
			}
			ids := map[string]string{}
			for o := range owners {
				out, err := exec.Command(engine, "create", "--label", LabelOwner+"="+o, image, "/none").Output()
				if err != nil {
					t.Fatalf("%s create: %v", engine, err)
				}
				id := strings.TrimSpace(string(out))
				ids[o] = id
				t.Cleanup(func() { exec.Command(engine, "rm", "-f", id).Run() })
			}
			sweepOrphans(engine)
			for o, removed := range owners {
				err := exec.Command(engine, "inspect", ids[o]).Run()
				if gone := err != nil; gone != removed {
					t.Errorf("owner %s: removed %v, want %v", o, gone, removed)
				}
			}
		})
	}
}

// deadPid is the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
