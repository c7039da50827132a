package supervise_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/syncbuf"
	"github.com/mcpolicy/mcpolicy/internal/testenv"

	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/project"
)

// trapScript is the server of TestRunPassesSignals: a shell whose traps
// write the signal's name in its read-write grant and exit with a status
// of their own.
const trapScript = "trap 'echo TERM > /out/marker; exit 3' TERM; " +
	"trap 'echo INT > /out/marker; exit 4' INT; " +
	"trap 'echo HUP > /out/marker; exit 5' HUP; " +
	"echo ready; while :; do /bin/sleep 0.1; done"

// TestRunPassesSignals (issue #21): `mcpolicy run` sent SIGTERM, SIGINT or
// SIGHUP passes it on to the server, whose trap runs — it writes a marker
// in its read-write grant — and run exits with the server's own status.
// Under bwrap that means the process bwrap runs, never bwrap itself (it
// would die of the signal, and --die-with-parent would SIGKILL the
// sandbox); and a terminal's Ctrl-C, which signals run's whole process
// group, must not reach bwrap either. Each backend run supports (bwrap,
// docker, podman; landlock is `mcpolicy exec`, seatbelt macOS only), with
// no network and with an egress allowlist (under bwrap the forwarder then
// stands between bwrap and the server).
func TestRunPassesSignals(t *testing.T) {
	t.Parallel()
	setup(t)
	concurrently(t, []string{"bwrap", "docker", "podman"}, func(t *testing.T, backend string) {
		needBackend(t, backend)
		for _, network := range []string{"none", "allowlist"} {
			proj, server := trapProject(t, backend, network)
			for _, c := range []struct {
				sig   syscall.Signal
				name  string
				code  int
				group bool // to run's process group, as a terminal does
			}{
				{syscall.SIGTERM, "TERM", 3, false},
				{syscall.SIGINT, "INT", 4, false},
				{syscall.SIGHUP, "HUP", 5, false},
				{syscall.SIGINT, "INT", 4, true},
			} {
				how := "to run"
				if c.group {
					how = "to run's process group"
				}
				t.Run(fmt.Sprintf("network %s, SIG%s %s", network, c.name, how), func(t *testing.T) {
					code, marker, out := runSignalled(t, backend, proj, server, c.sig, c.group)
					if code != c.code || marker != c.name {
						t.Errorf("exit %d, marker %q; want exit %d (the server's trap) and marker %q\n%s", code, marker, c.code, c.name, out)
					}
				})
			}
		}
	})
}

// trapProject writes and returns a project whose server runs trapScript
// with a read-write grant at /out, under backend, with no network or an
// allowlist.
func trapProject(t *testing.T, backend, network string) (dir, server string) {
	t.Helper()
	server = "trap-" + backend + "-" + network + "-" + w.marker + randomHex(2)
	dir = filepath.Join(base, "projects", server)
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "out"), 0o777) // uid 1000 in a container writes there
	confine := `backends: ["bwrap"]
	runtime: "system"`
	if backend != "bwrap" {
		confine = fmt.Sprintf(`backends: ["docker"]
	image: %q`, shellImage(t, backend))
	}
	net := `"none"`
	if network == "allowlist" {
		net = fmt.Sprintf(`allow: ["api.test:%d"]`, w.httpPort)
	}
	command, _ := json.Marshal([]string{"/bin/sh", "-c", trapScript})
	policy := fmt.Sprintf(`version: "v1"
servers: %q: {
	%s
	mounts: [{source: "out", target: "/out", mode: "rw"}]
	command: %s
	network: %s
}
`, server, confine, command, net)
	if err := os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, server
}

// runSignalled starts `mcpolicy run` for the trap server, sends sig once
// the server is ready (to run alone, or to its process group), and returns
// run's exit status, the marker the server wrote and what run printed.
func runSignalled(t *testing.T, backend, proj, server string, sig syscall.Signal, group bool) (int, string, string) {
	t.Helper()
	marker := filepath.Join(proj, "out", "marker")
	os.Remove(marker)
	stdinR, stdinW, err := os.Pipe() // held open: docker run -i ends at EOF
	if err != nil {
		t.Fatal(err)
	}
	defer stdinW.Close()
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdoutR.Close()
	var stderr syncbuf.Buffer
	cmd := exec.Command(w.bin, "run", "--policy", proj, "--server", server, "--backend", backend, "--self", w.bin, "--log", filepath.Join(proj, "decisions.jsonl"))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, &stderr
	// Its own TMPDIR: TestEgressRun counts the socket folders in this
	// binary's.
	tmpdir := filepath.Join(proj, "tmp")
	os.MkdirAll(tmpdir, 0o755)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmpdir, "XDG_RUNTIME_DIR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as a shell's job
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	stdoutW.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		select {
		case <-exited:
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if backend != "bwrap" { // whatever a failure left
			if c := containers(t, backend, docker.LabelPlan+"="+planHash(t, proj, server)); c != "" {
				exec.Command(backend, append([]string{"rm", "-f"}, ids(c)...)...).Run()
			}
		}
	}()
	var stdout syncbuf.Buffer
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdoutR)
		for sc.Scan() {
			stdout.Write([]byte(sc.Text() + "\n"))
			if sc.Text() == "ready" {
				close(ready)
			}
		}
	}()
	dump := func() string { return fmt.Sprintf("stdout: %s\nstderr: %s", stdout.String(), stderr.String()) }
	select {
	case <-ready:
	case err := <-exited:
		exited <- err
		t.Fatalf("mcpolicy run ended before the server was ready: %v\n%s", err, dump())
	case <-time.After(60 * time.Second):
		t.Fatalf("the server was not ready within 60 s\n%s", dump())
	}
	// The trap is set before the server says it is ready.
	target := cmd.Process.Pid
	if group {
		target = -target
	}
	if err := syscall.Kill(target, sig); err != nil {
		t.Fatal(err)
	}
	var werr error
	select {
	case werr = <-exited:
		exited <- werr
	case <-time.After(30 * time.Second):
		t.Fatalf("mcpolicy run still running 30 s after %v\n%s", sig, dump())
	}
	code := 0
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
		t.Errorf("mcpolicy run was ended by %v itself", ws.Signal())
	} else {
		code = cmd.ProcessState.ExitCode()
	}
	b, _ := os.ReadFile(marker)
	return code, strings.TrimSpace(string(b)), dump()
}

// planHash compiles the project's plan for its hash (the label its
// containers carry).
func planHash(t *testing.T, proj, server string) string {
	p, err := project.Discover(filepath.Join(proj, "mcpolicy.cue"))
	if err != nil {
		return "none"
	}
	plans, err := p.Compile(home(t))
	if err != nil {
		return "none"
	}
	for _, pl := range plans {
		if pl.Server == server {
			return pl.Hash
		}
	}
	return "none"
}

// shellImage imports, once per engine and test run, an image holding only
// busybox-static as /bin/sh and /bin/sleep (and an empty /tmp), and
// removes it when the test is over.
func shellImage(t *testing.T, engine string) string {
	t.Helper()
	name := "localhost/mcpolicy-signal-sh:" + w.marker
	if exec.Command(engine, "image", "inspect", name).Run() == nil {
		return name // imported for the other network mode
	}
	bb, err := os.ReadFile("/bin/busybox")
	need(t, err == nil, "no /bin/busybox (the busybox-static package): the engines' trap server needs a static shell")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777})
	tw.WriteHeader(&tar.Header{Name: "out/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bb))})
	tw.Write(bb)
	for _, l := range []string{"sh", "sleep"} {
		tw.WriteHeader(&tar.Header{Name: "bin/" + l, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	tw.Close()
	testenv.Import(context.Background(), t, engine, name, buf.Bytes())
	t.Cleanup(func() { exec.Command(engine, "rmi", "-f", name).Run() })
	return name
}
