//go:build linux

package launch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
)

// The checks of TestNothingOutlivesTheServer and TestInitOutsideTheDomain,
// run by the confined server (insideMain, through moreChecks):
//
//	signal-init             kill(1, 0): the server signalling stage 2
//
//	daemon:FILE:TOKEN:MODE  start a child in a new session (setsid) that
//	                        haunts FILE, wait for its first write, return
//	haunt:FILE:TOKEN:MODE   the child: write FILE, and by MODE
//	                        write  every 20 ms, for 2 minutes
//	                        hop    start the next haunt (setsid) and exit:
//	                               a chain of short-lived processes
//	                        swarm  start "write" haunts as fast as it can
//	                               (a process forking in a loop; 1000 at
//	                               most), then write every 20 ms
//
// TOKEN is in every haunt's argv: the test finds them in /proc by it.
func reapChecks(op, arg string) string {
	if op == "signal-init" { // may the server signal its namespace's init? (signal 0: the check alone)
		return errResult(syscall.Kill(1, 0))
	}
	if res, ok := priorityChecks(op, arg); ok { // ns_prlimit_test.go
		return res
	}
	if res, ok := terminalChecks(op, arg); ok { // terminal_test.go
		return res
	}
	parts := strings.SplitN(arg, ":", 3)
	if len(parts) != 3 || (op != "daemon" && op != "haunt") {
		return "unknown check " + op
	}
	file, token, mode := parts[0], parts[1], parts[2]
	spawn := func(mode string) error {
		cmd := exec.Command(os.Args[0], roleInside, "haunt:"+file+":"+token+":"+mode)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // out of the server's session
		cmd.Env = os.Environ()
		if err := cmd.Start(); err != nil {
			return err
		}
		cmd.Process.Release() // never waited for: it is meant to outlive us
		return nil
	}
	if op == "daemon" {
		if err := spawn(mode); err != nil {
			return errResult(err)
		}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(file); err == nil {
				return "started"
			}
		}
		return "the daemon never wrote " + file
	}
	write := func(i int) { os.WriteFile(file, []byte(strconv.Itoa(i)+"\n"), 0o666) }
	switch mode {
	case "hop":
		gen, _ := strconv.Atoi(os.Getenv("HAUNT_GEN"))
		write(gen)
		if gen < 5000 { // bounded, should the launcher fail to end it
			os.Setenv("HAUNT_GEN", strconv.Itoa(gen+1))
			spawn("hop")
		}
		os.Exit(0)
	case "swarm":
		for i := 0; i < 1000; i++ {
			spawn("write")
		}
	}
	for i := 0; i < 6000; i++ {
		write(i)
		time.Sleep(20 * time.Millisecond)
	}
	os.Exit(0)
	return ""
}

// haunted reports whether file changes (or comes back once removed)
// within d.
func haunted(file string, d time.Duration) (bool, string) {
	before, err := os.ReadFile(file)
	if err != nil {
		return false, fmt.Sprintf("reading %s: %v", file, err)
	}
	deadline := time.Now().Add(d / 2)
	for ; time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, before) {
			return true, fmt.Sprintf("%s changed after the launcher returned: %q -> %q (%v)", file, before, now, err)
		}
	}
	if err := os.Remove(file); err != nil {
		return false, fmt.Sprintf("removing %s: %v", file, err)
	}
	deadline = time.Now().Add(d / 2)
	for ; time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			return true, fmt.Sprintf("%s, removed after the launcher returned, was put back (%v)", file, err)
		}
	}
	return false, fmt.Sprintf("%s unchanged for %v after the launcher returned, and not put back once removed", file, d)
}

// TestNothingOutlivesTheServer: a server that starts a process in a new
// session (setsid escapes Pdeathsig) leaves nothing running once the
// launcher has returned — the server's PID namespace ends with its init,
// stage 2 — whether that process writes in a loop, replaces itself by a
// new one in a tight loop, or forks in a loop; when the server ends
// because the launcher was told to stop (SIGTERM, forwarded); and when
// the launcher itself is killed (SIGKILL: what a client, or the MCP SDK,
// sends a server that ignores the end of its input and SIGTERM). The
// launcher still returns the server's own status. The control run (the
// wiring before, no PID namespace) shows the daemon surviving and
// rewriting its file, so that the check can fail.
func TestNothingOutlivesTheServer(t *testing.T) {
	w := setupIssue14(t)
	rw := filepath.Join(filepath.Dir(filepath.Dir(w.bin)), "rw")
	if err := os.MkdirAll(rw, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(rw, 0o777) // the server's user, whoever the launcher runs as
	w.rs.ReadWrite = []string{rw}
	// run starts the server: it starts its daemon, then exits 3 — or,
	// with "signalled", waits until the launcher is sent SIGTERM.
	run := func(t *testing.T, as []string, mode string, env ...string) (string, run14, time.Duration) {
		token := fmt.Sprintf("mcpolicy-haunt-%d-%d", os.Getpid(), time.Now().UnixNano())
		t.Cleanup(func() { testenv.KillProcesses(t, token, 20*time.Second) })
		marker := filepath.Join(rw, token)
		daemon, then, sig, want := fmt.Sprintf("daemon:%s:%s:%s", marker, token, mode), "exit:3", syscall.Signal(0), 3
		switch mode {
		case "signalled":
			daemon, then, sig, want = fmt.Sprintf("daemon:%s:%s:write", marker, token), "wait", syscall.SIGTERM, 128+15
		case "launcher killed":
			daemon, then, sig, want = fmt.Sprintf("daemon:%s:%s:write", marker, token), "wait", syscall.SIGKILL, -1 // the launcher's own death
		}
		w.checks(t, daemon, then)
		start := time.Now()
		r := w.launchSignalled(t, as, sig, env...)
		took := time.Since(start)
		if got := r.checks[daemon]; got != "started" {
			t.Fatalf("the server could not start its daemon: %q (exit %d)\n%s", got, r.code, r.stderr)
		}
		if r.code != want {
			t.Errorf("exit %d, want the server's %d\n%s", r.code, want, r.stderr)
		}
		return token, r, took
	}
	for name, as := range users(t) {
		for _, mode := range []string{"write", "hop", "swarm", "signalled", "launcher killed"} {
			t.Run(name+", "+mode, func(t *testing.T) {
				token, r, took := run(t, as, mode)
				if pids := testenv.Processes(token); len(pids) > 0 {
					t.Errorf("after the launcher returned, %d process(es) of the server's still run: %v\n%s", len(pids), pids, r.stderr)
				}
				if changed, what := haunted(filepath.Join(rw, token), time.Second); changed {
					t.Errorf("%s", what)
				} else {
					t.Log(what)
				}
				t.Logf("launcher returned in %v", took.Round(time.Millisecond))
			})
		}
		t.Run(name+", control (unhardened)", func(t *testing.T) {
			token, _, _ := run(t, as, "write", "MCPOLICY_TEST_UNHARDENED=1")
			pids := testenv.Processes(token)
			if len(pids) == 0 {
				t.Errorf("control: the daemon did not outlive the launcher: the check cannot fail")
			}
			changed, what := haunted(filepath.Join(rw, token), 2*time.Second)
			if !changed {
				t.Errorf("control: %s: the check cannot fail", what)
			}
			t.Logf("control: still running after the launcher returned: %v; %s", pids, what)
		})
	}
}

// TestInitOutsideTheDomain: stage 2, resident as the init of the server's
// PID namespace, is outside the server's Landlock domain — the server is
// forked from a thread of its own that confined itself and ended — so
// Landlock (ABI 6 scopes signals) refuses the server a signal to it, as it
// refuses ptrace. Forked from stage 2's own confined thread, the server
// shared that domain: a red team, with the filter's ptrace rule removed,
// ptraced stage 2 into running code on its other threads, which still held
// the capabilities that built the root, and remounted a read-only grant
// read-write.
func TestInitOutsideTheDomain(t *testing.T) {
	w := setupIssue14(t)
	w.checks(t, "signal-init:1", "exit:0")
	for name, as := range users(t) {
		t.Run(name, func(t *testing.T) {
			r := w.launchSignalled(t, as, 0)
			if got := r.checks["signal-init:1"]; got != "EPERM" {
				t.Errorf("kill(1, 0) from the server: %q, want EPERM (Landlock's signal scope: stage 2 outside the server's domain)\n%s", got, r.stderr)
			}
		})
	}
}

// TestInitUndumpable: stage 2 is undumpable, so no process of the
// invoker's user without CAP_SYS_PTRACE — the server among them — may
// read it through /proc or ptrace it, whatever the Landlock domains say:
// the thread that forks the server shares the server's domain for a few
// microseconds after the server starts, and a red team won that race
// (with the filter's ptrace rule removed) to run code on stage 2's other
// threads. Checked as the invoker uid 1000 would: reading stage 2's
// environ, which needs ptrace read access.
func TestInitUndumpable(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs the launch tests as root")
		}
		t.Skip("needs root to launch as uid 1000")
	}
	w := setupIssue14(t, artefact.AcceptTCPOnly, artefact.AcceptUnixSockets)
	w.checks(t, "caps", "wait")
	as := []string{"setpriv", "--reuid", "1000", "--regid", "1000", "--groups", "4242"}
	// With namespaces the server's parent is stage 2, the init; without
	// (Landlock alone, the launcher leading its process group, as here)
	// it is the launcher, which forks the server and waits.
	for _, env := range [][]string{nil, {"MCPOLICY_TEST_NO_NS=1"}} {
		t.Run(fmt.Sprint(env), func(t *testing.T) { undumpable(t, w, as, env) })
	}
}

func undumpable(t *testing.T, w *issue14, as, env []string) {
	var read error
	var stage2 int
	r := w.launchWatched(t, as, syscall.SIGTERM, func(stdout string) {
		for _, line := range strings.Split(stdout, "\n") {
			var c check
			if json.Unmarshal([]byte(line), &c) != nil || c.Check != "caps" {
				continue
			}
			pid, _ := strconv.Atoi(strings.TrimPrefix(strings.Fields(c.Result)[0], "pid="))
			status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", hostPid(pid)))
			for _, l := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(l, "PPid:"); ok {
					stage2, _ = strconv.Atoi(strings.TrimSpace(v))
				}
			}
			cat := exec.Command("setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups", "cat", fmt.Sprintf("/proc/%d/environ", stage2))
			read = cat.Run()
		}
	}, env...)
	if r.code != 128+int(syscall.SIGTERM) || stage2 == 0 {
		t.Fatalf("exit %d, stage 2 pid %d\n%s", r.code, stage2, r.stderr)
	}
	if read == nil {
		t.Errorf("uid 1000 read the server's parent's /proc/%d/environ: it is dumpable, so ptrace-able by the server's user", stage2)
	}
}
