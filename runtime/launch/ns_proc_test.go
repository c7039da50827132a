//go:build linux

package launch_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// procProbeSrc is the server of the /proc tests: a static Go program (no C
// library, as gopls is built) that runs each check of its arguments and
// prints {"check", "result"} per line, as insideMain does.
//
//	exe             os.Executable(): readlink /proc/self/exe
//	read:PATH       open and read PATH: "ok" or the errno
//	write:PATH      open PATH for writing and write a byte
//	pids:PATH       the numeric entries of the folder PATH, sorted
//	pid             its own pid, as its PID namespace numbers it
//	status          /proc/self/status's Pid line, as the kernel shows it
const procProbeSrc = `package main

import (
	"encoding/json"
	"errors"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func errResult(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

func main() {
	enc := json.NewEncoder(os.Stdout)
	for _, c := range os.Args[1:] {
		op, arg, _ := strings.Cut(c, ":")
		res := "ok"
		switch op {
		case "exe":
			p, err := os.Executable()
			res = p
			if err != nil {
				res = errResult(err)
			}
		case "read":
			if _, err := os.ReadFile(arg); err != nil {
				res = errResult(err)
			}
		case "write":
			f, err := os.OpenFile(arg, os.O_WRONLY, 0)
			if err == nil {
				_, err = f.Write([]byte("x"))
				f.Close()
			}
			if err != nil {
				res = errResult(err)
			}
		case "pids":
			ents, err := os.ReadDir(arg)
			if err != nil {
				res = errResult(err)
				break
			}
			var pids []int
			for _, e := range ents {
				if n, err := strconv.Atoi(e.Name()); err == nil {
					pids = append(pids, n)
				}
			}
			sort.Ints(pids)
			b, _ := json.Marshal(pids)
			res = string(b)
		case "pid":
			res = strconv.Itoa(os.Getpid())
		case "status":
			b, err := os.ReadFile("/proc/self/status")
			if err != nil {
				res = errResult(err)
				break
			}
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == "Pid:" {
					res = f[1]
				}
			}
		}
		enc.Encode(map[string]string{"check": c, "result": res})
	}
}
`

var procProbe struct {
	once sync.Once
	path string
	err  error
}

// buildProcProbe builds procProbeSrc static (CGO_ENABLED=0), once per
// test run, with this module's golang.org/x/sys (no network: the module
// cache holds it).
func buildProcProbe(t *testing.T) string {
	t.Helper()
	procProbe.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpolicy-procprobe-")
		if err != nil {
			procProbe.err = err
			return
		}
		main := filepath.Join(dir, "procprobe", "main.go")
		os.MkdirAll(filepath.Dir(main), 0o755)
		if err := os.WriteFile(main, []byte(procProbeSrc), 0o644); err != nil {
			procProbe.err = err
			return
		}
		// Inside this module, so that x/sys is its pinned version.
		root, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			procProbe.err = err
			return
		}
		procProbe.path = filepath.Join(dir, "procprobe", "procprobe")
		cmd := exec.Command("go", "build", "-o", procProbe.path, main)
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			procProbe.err = &buildError{err, string(out)}
		}
	})
	if procProbe.err != nil {
		t.Fatalf("building the /proc probe: %v", procProbe.err)
	}
	return procProbe.path
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// procWorld is a ruleset whose server is the static probe (or a runtime
// of the baseline), launched by this test binary as roleLauncher.
type procWorld struct {
	issue14
	probe string
}

func setupProc(t *testing.T, proc bool) *procWorld {
	t.Helper()
	requireLandlock(t)
	base := workdir(t)
	bin := filepath.Join(base, "bin", "launch.test")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	copyTree(t, os.Args[0], bin)
	os.Chmod(bin, 0o755)
	probe := filepath.Join(base, "bin", "procprobe")
	copyTree(t, buildProcProbe(t), probe)
	os.Chmod(probe, 0o755)
	w := &procWorld{probe: probe}
	w.bin, w.ruleset = bin, filepath.Join(base, "ruleset.json")
	w.rs = artefact.Ruleset{Server: "t", Plan: "sha256:00",
		Baseline:  []string{"/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"},
		ReadOnly:  []string{filepath.Dir(bin)},
		ReadWrite: []string{},
		DevicesRO: []string{"/dev/zero", "/dev/random", "/dev/urandom"}, DevicesRW: []string{"/dev/null"},
		Network: "none", User: "1000:1000", Env: []string{}, Proc: proc,
	}
	return w
}

// run launches command as the server (as the user as says) and returns
// what it printed, by check.
func (w *procWorld) run(t *testing.T, as []string, command ...string) run14 {
	t.Helper()
	w.rs.Command = command
	if err := os.WriteFile(w.ruleset, w.rs.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	return w.launch(t, as)
}

// procChecks are the probe's checks; absent is a host PID the server must
// not find.
func procChecks(absent int) []string {
	return []string{"exe", "read:/proc/self/status", "status", "pid", "pids:/proc", "read:/proc/self/maps",
		"pids:/proc/self/fd", "read:/proc/1/status", "read:/proc/" + strconv.Itoa(absent) + "/status",
		"read:/proc/keys", "read:/proc/key-users", "read:/proc/sys/kernel/hostname", "read:/proc/cpuinfo",
		"write:/proc/self/comm", "write:/proc/self/oom_score_adj", "write:/proc/sys/kernel/hostname"}
}

// TestLandlockProc (issue #34): with proc, a static Go server finds its
// own program (os.Executable reads /proc/self/exe) and reads
// /proc/self/status; its /proc is its own PID namespace's and lists only
// itself (stage 2, the namespace's init, and every host PID are absent);
// nothing under it can be written; /proc/keys and every host-wide file
// are not there. Without proc there is no /proc at all, as before. The
// control run grants the host's /proc in its place (what the launcher
// never does): the host's PIDs appear, so the checks can fail.
func TestLandlockProc(t *testing.T) {
	hostPID := os.Getpid() // a host process the server must not see
	for name, as := range users(t) {
		t.Run(name, func(t *testing.T) {
			w := setupProc(t, true)
			r := w.run(t, as, append([]string{w.probe}, procChecks(hostPID)...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			t.Logf("with proc: %v", r.checks)
			c := r.checks
			if c["exe:"] != w.probe {
				t.Errorf("os.Executable: %q, want %s", c["exe:"], w.probe)
			}
			if c["read:/proc/self/status"] != "ok" || c["read:/proc/self/maps"] != "ok" || !strings.HasPrefix(c["pids:/proc/self/fd"], "[0,1,2") {
				t.Errorf("its own /proc/self: status %s, maps %s, fd %s; want them readable", c["read:/proc/self/status"], c["read:/proc/self/maps"], c["pids:/proc/self/fd"])
			}
			pid := c["pid:"]
			if c["status:"] != pid {
				t.Errorf("/proc/self/status says pid %s, getpid %s: not its own PID namespace's procfs", c["status:"], pid)
			}
			if c["pids:/proc"] != "["+pid+"]" {
				t.Errorf("/proc lists %s, want only the server itself [%s]", c["pids:/proc"], pid)
			}
			for _, hidden := range []string{"/proc/1/status", "/proc/" + strconv.Itoa(hostPID) + "/status", "/proc/keys", "/proc/key-users", "/proc/sys/kernel/hostname", "/proc/cpuinfo"} {
				if got := c["read:"+hidden]; got != "ENOENT" {
					t.Errorf("read %s: %s, want ENOENT (not in the server's /proc)", hidden, got)
				}
			}
			for _, wr := range []string{"/proc/self/comm", "/proc/self/oom_score_adj", "/proc/sys/kernel/hostname"} {
				if got := c["write:"+wr]; !slices.Contains([]string{"EROFS", "EACCES", "ENOENT"}, got) {
					t.Errorf("write %s: %s, want a refusal (read-only, Landlock read only)", wr, got)
				}
			}
		})
	}
	if os.Getuid() == 0 {
		// A plan that says root is the host's root without capabilities:
		// the 0400 host-wide files (/proc/slabinfo, /proc/kcore) would be
		// readable to it in a full procfs.
		t.Run("plan user root", func(t *testing.T) {
			w := setupProc(t, true)
			w.rs.User = "0:0"
			r := w.run(t, nil, w.probe, "pid", "pids:/proc", "read:/proc/1/environ", "read:/proc/slabinfo", "read:/proc/kallsyms", "write:/proc/self/comm")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			t.Logf("plan user root: %v", r.checks)
			if r.checks["pids:/proc"] != "["+r.checks["pid:"]+"]" {
				t.Errorf("/proc lists %s, want only the server [%s]", r.checks["pids:/proc"], r.checks["pid:"])
			}
			for _, k := range []string{"read:/proc/1/environ", "read:/proc/slabinfo", "read:/proc/kallsyms"} {
				if r.checks[k] != "ENOENT" {
					t.Errorf("%s: %s, want ENOENT", k, r.checks[k])
				}
			}
			if r.checks["write:/proc/self/comm"] == "ok" {
				t.Errorf("a root server wrote /proc/self/comm")
			}
		})
	}
	t.Run("without proc", func(t *testing.T) {
		w := setupProc(t, false)
		r := w.run(t, nil, w.probe, "exe", "read:/proc/self/status", "pids:/proc")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		for _, k := range []string{"read:/proc/self/status", "pids:/proc"} {
			if r.checks[k] != "ENOENT" {
				t.Errorf("%s: %s, want ENOENT: no /proc without proc", k, r.checks[k])
			}
		}
		if r.checks["exe:"] == w.probe {
			t.Errorf("os.Executable found %s without /proc", w.probe)
		}
	})
	t.Run("control: the host's /proc granted instead", func(t *testing.T) {
		w := setupProc(t, false)
		w.rs.ReadOnly = append(w.rs.ReadOnly, "/proc")
		r := w.run(t, nil, append([]string{w.probe}, procChecks(hostPID)...)...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		var pids []int
		json.Unmarshal([]byte(r.checks["pids:/proc"]), &pids)
		if !slices.Contains(pids, hostPID) || r.checks["read:/proc/"+strconv.Itoa(hostPID)+"/status"] != "ok" {
			t.Errorf("control: the host's /proc does not show the test's own pid %d (%d pids listed; status %s): the checks above could not see the host's PIDs",
				hostPID, len(pids), r.checks["read:/proc/"+strconv.Itoa(hostPID)+"/status"])
		}
		if r.checks["read:/proc/keys"] != "ok" {
			t.Errorf("control: /proc/keys: %s, want it readable in the host's /proc: the check above could not see it", r.checks["read:/proc/keys"])
		}
	})
}

// TestRuntimesStartWithProc: Node and CPython, from the baseline, start
// under the launcher with proc and read their own /proc/self/exe.
func TestRuntimesStartWithProc(t *testing.T) {
	for _, rt := range []struct{ name, exe, code string }{
		{"node", "/usr/bin/node", `const fs=require("fs");console.log(JSON.stringify({check:"exe",result:fs.readlinkSync("/proc/self/exe")}));console.log(JSON.stringify({check:"maps",result:String(fs.readFileSync("/proc/self/maps").length>0)}))`},
		{"python", "/usr/bin/python3", `import os,json;print(json.dumps({"check":"exe","result":os.readlink("/proc/self/exe")}));print(json.dumps({"check":"maps","result":str(len(open("/proc/self/maps").read())>0).lower()}))`},
	} {
		t.Run(rt.name, func(t *testing.T) {
			real, err := filepath.EvalSymlinks(rt.exe)
			if err != nil {
				t.Skipf("%s: %v", rt.exe, err)
			}
			w := setupProc(t, true)
			flag := map[string]string{"node": "-e", "python": "-c"}[rt.name]
			r := w.run(t, nil, rt.exe, flag, rt.code)
			if r.code != 0 || r.checks["exe:"] != real || r.checks["maps:"] != "true" {
				t.Errorf("%s with proc: exit %d, /proc/self/exe %q (want %s), maps %q\n%s", rt.name, r.code, r.checks["exe:"], real, r.checks["maps:"], r.stderr)
			}
		})
	}
}

// TestProcRefusedWithoutNamespaces: without user namespaces no procfs of
// the server's own can be made, and no degradation accepts the host's in
// its place: the launch is refused (exit 4 from the launcher), saying so.
func TestProcRefusedWithoutNamespaces(t *testing.T) {
	all := []string{artefact.AcceptTCPOnly, artefact.AcceptNoScope, artefact.AcceptScratchDir, artefact.AcceptUnixSockets}
	rs := &artefact.Ruleset{Server: "s", Command: []string{"/usr/bin/true"}, Network: "none", User: "1000:1000", Proc: true, Accept: all}
	_, err := launch.Start(rs, launch.Options{Host: &hostcaps.Host{ABI: 7}})
	var ue *launch.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "needs /proc") || !strings.Contains(err.Error(), "user namespaces") {
		t.Errorf("got %v, want a refusal naming /proc and user namespaces", err)
	}
	rs.Proc = false
	if err := launch.CheckRuleset(rs, hostcaps.Host{ABI: 7}); err != nil {
		t.Errorf("without proc, every degradation accepted: %v", err)
	}

	// Through the launcher, as a host without namespaces runs it.
	w := setupProc(t, true)
	w.rs.Accept = all
	r := w.run(t, nil, w.probe, "exe")
	if r.code != 0 {
		t.Fatalf("with namespaces: exit %d\n%s", r.code, r.stderr)
	}
	r = w.launch(t, nil, "MCPOLICY_TEST_NO_NS=1")
	if r.code != 4 || !strings.Contains(r.stderr, "needs /proc") || len(r.checks) != 0 {
		t.Errorf("without namespaces: exit %d, checks %v, want exit 4 naming /proc and nothing run\n%s", r.code, r.checks, r.stderr)
	}
}
