// Package testenv tells tests whether a sandbox backend can run on this
// machine: the one probe the kernel and engine suites share.
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// Unavailable says why a backend's sandbox (rt, its emit.Backend's
// Runtime) cannot confine a process here, or "" when it can: each is
// tried, not assumed from a binary on PATH.
func Unavailable(rt artefact.Runtime) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch rt.Sandbox {
	case artefact.Bwrap:
		return bwrapUnavailable(ctx, rt.Program)
	case artefact.Engine:
		if _, err := exec.LookPath(rt.Program); err != nil {
			return rt.Program + " is not installed"
		}
		if out, err := exec.CommandContext(ctx, rt.Program, "info").CombinedOutput(); err != nil {
			return fmt.Sprintf("%s info: %v: %s", rt.Program, err, lastLines(out, 5))
		}
	case artefact.Landlock:
		return landlockUnavailable()
	default: // a cluster's (KubePlay), or macOS's
		return fmt.Sprintf("no test here runs a sandbox of kind %d", rt.Sandbox)
	}
	return ""
}

// Bwrap says why program (a bubblewrap) cannot make a sandbox here, or "".
func Bwrap(program string) string {
	return Unavailable(artefact.Runtime{Sandbox: artefact.Bwrap, Program: program})
}

// bwrapUnavailable tries a sandbox with /usr alone: binding the host's
// whole / would also remount every engine's overlay, and one a container
// tears down meanwhile fails the probe with EINVAL, which says nothing
// about bwrap.
func bwrapUnavailable(ctx context.Context, program string) string {
	if _, err := exec.LookPath(program); err != nil {
		return program + " is not installed"
	}
	args := []string{"--unshare-all", "--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/lib", "/lib64"} {
		args = append(args, "--ro-bind-try", d, d)
	}
	if out, err := exec.CommandContext(ctx, program, append(args, "true")...).CombinedOutput(); err != nil {
		return fmt.Sprintf("%s cannot make a sandbox: %v: %s", program, err, bytes.TrimSpace(out))
	}
	return ""
}

// KubePlay says why engine (podman's Runtime) cannot play a Kubernetes
// manifest here (`kube play`, which the tests run a cluster's artefacts
// with), or "".
func KubePlay(engine artefact.Runtime) string {
	if why := Unavailable(engine); why != "" {
		return why
	}
	// kube play builds its pause image from catatonit (a podman
	// recommendation, not a dependency: --no-install-recommends leaves it out).
	if _, err := exec.LookPath("catatonit"); err != nil {
		if _, err := os.Stat("/usr/libexec/podman/catatonit"); err != nil {
			return "catatonit is not installed: podman kube play needs it for the Pod's infra container (apt-get install catatonit)"
		}
	}
	return ""
}

func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LoopbackListener listens on 127.0.0.1 for the test's life, accepting and
// closing every connection, and returns its address: something a confined
// process must not reach.
func LoopbackListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// Processes lists the host's processes, this one apart, whose argv holds
// token (an engine's containers' included: their processes are the
// host's too): what a test that must leave nothing running looks for.
func Processes(token string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(token)) {
			out = append(out, pid)
		}
	}
	return out
}

// KillProcesses kills (SIGKILL) every process whose argv holds token
// until none has been seen for a while (a chain that replaces itself
// shows gaps), for at most d; it fails t if some still run.
func KillProcesses(t testing.TB, token string, d time.Duration) {
	t.Helper()
	quiet := 0
	for end := time.Now().Add(d); quiet < 20 && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		pids := Processes(token)
		if len(pids) == 0 {
			quiet++
			continue
		}
		quiet = 0
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if pids := Processes(token); len(pids) > 0 {
		t.Errorf("cleanup: processes of %s still run: %v", token, pids)
	}
}
