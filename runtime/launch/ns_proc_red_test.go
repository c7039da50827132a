//go:build linux

package launch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// procRedSrc is the attacker of the red-team /proc tests: a static Go
// server that tries, through its own /proc, to reach past its grants.
// Each argument is op:ARG; it prints {"check", "result"} per line.
//
//	reopen:PATH   open PATH read-only, then /proc/self/fd/N read-write
//	write:PATH    open PATH write-only (a /proc file the kernel would obey)
//	read:PATH     read PATH
//	link:PATH     readlink PATH
//	ptrace:PID    PTRACE_ATTACH to PID (stage 2 is its namespace's 1)
//	reexec:CHECK  exec /proc/self/exe with CHECK: the new program's result
//	mountinfo:S   whether /proc/self/mountinfo names S ("yes"/"no")
const procRedSrc = `package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
		case "reopen":
			f, err := os.Open(arg)
			if err != nil {
				res = "open: " + errResult(err)
				break
			}
			g, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_RDWR, 0)
			if err != nil {
				res = errResult(err)
			} else {
				g.Close()
			}
			f.Close()
		case "write":
			f, err := os.OpenFile(arg, os.O_WRONLY, 0)
			if err == nil {
				_, err = f.Write([]byte("1"))
				f.Close()
			}
			if err != nil {
				res = errResult(err)
			}
		case "read":
			if _, err := os.ReadFile(arg); err != nil {
				res = errResult(err)
			}
		case "link":
			p, err := os.Readlink(arg)
			res = p
			if err != nil {
				res = errResult(err)
			}
		case "ptrace":
			pid, _ := strconv.Atoi(arg)
			if err := unix.PtraceAttach(pid); err != nil {
				res = errResult(err)
			}
		case "reexec":
			os.Stdout.Sync()
			err := syscall.Exec("/proc/self/exe", []string{"probe", arg}, os.Environ())
			res = errResult(err)
		case "mountinfo":
			b, err := os.ReadFile("/proc/self/mountinfo")
			res = map[bool]string{true: "yes", false: "no"}[strings.Contains(string(b), arg)]
			if err != nil {
				res = errResult(err)
			}
		}
		enc.Encode(map[string]string{"check": c, "result": res})
	}
}
`

var procRed struct {
	once sync.Once
	path string
	err  error
}

// buildProcRed builds procRedSrc static, once, inside this module (its
// pinned golang.org/x/sys, from the module cache).
func buildProcRed(t *testing.T) string {
	t.Helper()
	procRed.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpolicy-procred-")
		if err != nil {
			procRed.err = err
			return
		}
		main := filepath.Join(dir, "procred", "main.go")
		os.MkdirAll(filepath.Dir(main), 0o755)
		if err := os.WriteFile(main, []byte(procRedSrc), 0o644); err != nil {
			procRed.err = err
			return
		}
		root, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			procRed.err = err
			return
		}
		procRed.path = filepath.Join(dir, "procred", "procred")
		cmd := exec.Command("go", "build", "-o", procRed.path, main)
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			procRed.err = &buildError{err, string(out)}
		}
	})
	if procRed.err != nil {
		t.Fatalf("building the /proc attacker: %v", procRed.err)
	}
	return procRed.path
}

// procAttacks are the attacker's checks. secret is a file outside every
// grant (beside the ruleset), hostPID a host process, bin the launcher's
// copy in the read-only grant, hostPath a host folder no mount names.
func procAttacks(secret, bin string, hostPID int, hostPath string) []string {
	hp := strconv.Itoa(hostPID)
	return []string{
		// Another process's view of the host: stage 2 (PID 1 of the
		// namespace) and the test itself.
		"read:/proc/1/environ", "link:/proc/1/root", "link:/proc/1/exe", "read:/proc/1/fd",
		"read:/proc/" + hp + "/environ", "link:/proc/" + hp + "/root", "read:" + "/proc/" + hp + "/root" + secret,
		"ptrace:1",
		// Writes the kernel would obey.
		"write:/proc/sys/kernel/hostname", "write:/proc/sysrq-trigger", "write:/proc/self/attr/current",
		"write:/proc/self/attr/exec", "write:/proc/self/setgroups", "write:/proc/self/uid_map",
		"write:/proc/self/oom_score_adj", "write:/proc/thread-self/comm", "write:/proc/self/mem",
		"write:/proc/self/coredump_filter",
		// A read-only grant reopened writable through its descriptor.
		"reopen:" + bin, "write:/proc/self/exe",
		// The root it sees through /proc/self and its own exe, re-executed.
		"link:/proc/self/root", "read:/proc/self/root" + secret, "read:" + secret, "mountinfo:" + hostPath,
		"reexec:read:" + secret, // last: the program it execs prints the rest

	}
}

// procAttackFailures are the attacks that got through, from the results.
func procAttackFailures(c map[string]string, secret, bin string, hostPID int) []string {
	var bad []string
	refused := func(k string, ok ...string) {
		got, seen := c[k]
		if !seen {
			bad = append(bad, k+": no result")
			return
		}
		for _, o := range ok {
			if got == o {
				return
			}
		}
		bad = append(bad, k+" = "+got)
	}
	hp := strconv.Itoa(hostPID)
	for _, k := range []string{"read:/proc/1/environ", "link:/proc/1/root", "link:/proc/1/exe", "read:/proc/1/fd",
		"read:/proc/" + hp + "/environ", "link:/proc/" + hp + "/root", "read:" + secret} {
		refused(k, "ENOENT")
	}
	refused("ptrace:1", "ESRCH", "EPERM")
	for _, k := range []string{"write:/proc/sys/kernel/hostname", "write:/proc/sysrq-trigger", "write:/proc/self/attr/current",
		"write:/proc/self/attr/exec", "write:/proc/self/setgroups", "write:/proc/self/uid_map", "write:/proc/self/oom_score_adj",
		"write:/proc/thread-self/comm", "write:/proc/self/mem", "write:/proc/self/coredump_filter", "write:/proc/self/exe"} {
		refused(k, "ENOENT", "EROFS", "EACCES", "EPERM", "ETXTBSY")
	}
	refused("reopen:"+bin, "EROFS", "EACCES", "ETXTBSY")
	refused("link:/proc/self/root", "/")
	return bad
}

// TestRedLandlockProc (issue #34, red team): a server granted proc tries
// to reach past its grants through its /proc: stage 2 and the host's
// processes (environ, root, exe, fds, ptrace), the kernel's writable
// files (sysctl, sysrq, LSM attributes, setgroups, uid_map,
// oom_score_adj, its own memory), a read-only grant reopened read-write
// through /proc/self/fd, its own exe written, a file outside its grants
// through /proc/self/root and after re-executing /proc/self/exe. None
// gets through. /proc/self/mountinfo names the host paths of its own
// mounts (acceptable: they are its grants' paths, which it sees as its
// targets anyway), and no other host folder. The control run binds the
// host's /proc in its place (never the launcher's wiring): the same
// checks then fail, so they can.
func TestRedLandlockProc(t *testing.T) {
	if testing.Short() {
		t.Skip("launches sandboxes")
	}
	hostPID := os.Getpid()
	setup := func(t *testing.T, proc bool) (*procWorld, string, string) {
		w := setupProc(t, proc)
		attacker := filepath.Join(filepath.Dir(w.bin), "procred")
		copyTree(t, buildProcRed(t), attacker)
		os.Chmod(attacker, 0o755)
		w.probe = attacker
		secret := filepath.Join(filepath.Dir(filepath.Dir(w.bin)), "secret")
		if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
			t.Fatal(err)
		}
		return w, secret, w.bin
	}
	hostPath, _ := os.UserHomeDir()
	for name, as := range users(t) {
		t.Run(name, func(t *testing.T) {
			w, secret, bin := setup(t, true)
			r := w.run(t, as, append([]string{w.probe}, procAttacks(secret, bin, hostPID, hostPath)...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			t.Logf("attacks: %v", r.checks)
			if bad := procAttackFailures(r.checks, secret, bin, hostPID); len(bad) > 0 {
				t.Errorf("through its /proc the server reached: %s", strings.Join(bad, "; "))
			}
			if got := r.checks["read:"+secret]; got != "ENOENT" {
				t.Errorf("after exec of /proc/self/exe it read %s: %s", secret, got)
			}
			if got := r.checks["mountinfo:"+hostPath]; got != "no" {
				t.Errorf("/proc/self/mountinfo names %s, a host folder it is not granted: %s", hostPath, got)
			}
		})
	}
	t.Run("control: the host's /proc bound instead", func(t *testing.T) {
		w, secret, bin := setup(t, false)
		w.rs.ReadOnly = append(w.rs.ReadOnly, "/proc")
		r := w.run(t, nil, append([]string{w.probe}, procAttacks(secret, bin, hostPID, hostPath)...)...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		bad := procAttackFailures(r.checks, secret, bin, hostPID)
		t.Logf("control, through the host's /proc: %s", strings.Join(bad, "; "))
		if len(bad) == 0 {
			t.Errorf("control: with the host's /proc every attack was refused all the same: the checks cannot fail")
		}
	})
}
