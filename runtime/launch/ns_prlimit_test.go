//go:build linux

package launch_test

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// priorityChecks are the server's checks on another process's limits and
// priority (reapChecks asks first).
//
//	prlimit:PID   set PID's RLIMIT_CPU to what it is (0: the server itself)
//	nice:PID      set PID's nice value to what it is
func priorityChecks(op, arg string) (string, bool) {
	pid, _ := strconv.Atoi(arg)
	switch op {
	case "prlimit":
		var l unix.Rlimit
		if err := unix.Prlimit(pid, unix.RLIMIT_CPU, nil, &l); err != nil {
			return "get: " + errResult(err), true
		}
		return errResult(unix.Prlimit(pid, unix.RLIMIT_CPU, &l, nil)), true
	case "nice":
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid)
		if err != nil {
			return "get: " + errResult(err), true
		}
		return errResult(unix.Setpriority(unix.PRIO_PROCESS, pid, 20-prio)), true // the syscall answers 20 - nice
	}
	return "", false
}

// TestLandlockAloneCannotThrottleHostProcesses: without namespaces there is
// no PID namespace, and Landlock's scopes do not cover prlimit or
// setpriority: a red team's server set RLIMIT_CPU to one second on every
// process of its user on the host (the client, the editor) and killed
// them. The filter allows those calls on the caller only (pid 0), reading
// included. The victim is a process of the server's user outside the
// sandbox: reading its limit and priority is refused; the server's own
// are not.
func TestLandlockAloneCannotThrottleHostProcesses(t *testing.T) {
	w := setupIssue14(t, artefact.AcceptTCPOnly)
	victim := exec.Command("sleep", "60")
	if os.Getuid() == 0 { // the server runs as the ruleset's user, 1000
		victim = exec.Command("setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups", "sleep", "60")
	}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	pid := strconv.Itoa(victim.Process.Pid)
	w.checks(t, "prlimit:"+pid, "nice:"+pid, "prlimit:0", "nice:0")
	r := w.launch(t, nil, "MCPOLICY_TEST_NO_NS=1")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("Landlock alone: %v", r.checks)
	// Reading them is refused too: it tells which host processes exist.
	for check, want := range map[string]string{"prlimit:" + pid: "get: EPERM", "nice:" + pid: "get: EPERM", "prlimit:0": "ok", "nice:0": "ok"} {
		if got := r.checks[check]; got != want {
			t.Errorf("%s: %q, want %q", check, got, want)
		}
	}
}
