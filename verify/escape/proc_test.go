package escape_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The Landlock /proc scenario (issue #34), landlock-proc: a policy with
// proc: true gives the server a procfs of its own PID namespace. The
// attacker uses it against the host: a victim the test starts on the host
// (a shell holding a token in its command line and another in its
// environment, as the server's uid) must not be found by listing /proc,
// nor its cmdline or environ read, nor the host's /proc/1/root listed; no
// file under /proc may be written; the server's own /proc/self/status
// must read (else every denial above would be the absence of /proc).
// Weakened: the committed ruleset with the host's /proc granted read-only
// in place of proc (what the launcher never does), run by the launcher
// without --sha256: the victim is listed and its command line read.
func TestEscapeProc(t *testing.T) {
	s := newSuite(t)
	s.require(t, "landlock")
	spec := projectSpec{landlock: true, policy: [2]string{"mcpolicy.cue",
		strings.Replace(landlockPolicy, "servers: attacker: {\n", "servers: attacker: {\n\tproc: true\n", 1)}}
	t.Run("landlock", func(t *testing.T) {
		sb := s.sandbox(t, "landlock", spec)
		v := startProcVictim(t, sb)
		before := sb.snapshot(t)
		o := sb.launchEntry(t, procSteps(v, true)...)
		o.requireDenied(t, sb.backend)
		if r := o.results[ownStatus]; !r.ok {
			t.Errorf("landlock: the server could not read its own /proc/self/status (%s): the denials above prove nothing", r.describe())
		}
		for _, tok := range v.tokens {
			if strings.Contains(o.stdout, tok) || strings.Contains(o.stderr, tok) {
				t.Errorf("landlock: the victim's token %q reached the server", tok)
			}
		}
		sb.requireUnchanged(t, before)
	})
	t.Run("weakened-landlock", func(t *testing.T) {
		sb := s.sandbox(t, "landlock", spec)
		v := startProcVictim(t, sb)
		grantHostProc(t, filepath.Join(sb.root, ".mcpolicy", "landlock", "attacker.json"))
		steps := procSteps(v, false)
		o := sb.launchWeakLandlock(t, steps...)
		o.requireSucceeded(t, "landlock", findVictim, readCmdline, ownStatus)
		if !strings.Contains(o.stdout, v.tokens[0]) {
			t.Errorf("weakened landlock: the victim's command line was not read: the suite cannot see a host process")
		}
	})
}

// The steps the checks name.
const (
	findVictim  = "find the host's victim by listing /proc"
	readCmdline = "read the victim's /proc/PID/cmdline"
	ownStatus   = "read its own /proc/self/status"
)

// procVictim is a host process the server must not see.
type procVictim struct {
	pid    int
	tokens []string // in its command line, in its environment
}

// startProcVictim starts the victim as the server's uid (1000 when the test
// is root, as the plan's user then is on the host), for the test's life.
func startProcVictim(t *testing.T, sb *sandbox) procVictim {
	t.Helper()
	argvTok, envTok := "proc-escape-argv-"+strconv.Itoa(os.Getpid()), "proc-escape-environ-"+strconv.Itoa(os.Getpid())
	cmd := exec.Command("/bin/sh", "-c", "sleep 600; : "+argvTok)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "VICTIM_SECRET=" + envTok}
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	}
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	t.Logf("%s: the victim on the host: pid %d", sb.backend, cmd.Process.Pid)
	return procVictim{pid: cmd.Process.Pid, tokens: []string{argvTok, envTok}}
}

// procSteps attack the host through /proc. confined: the run through the
// entry, where every step but ownStatus must fail.
func procSteps(v procVictim, confined bool) []step {
	pid := strconv.Itoa(v.pid)
	attempt := func(name, sh string) step {
		if confined {
			return mustNotLeak(name, sh)
		}
		return may(name, sh)
	}
	write := func(name, sh string) step {
		if confined {
			return deny(name, sh)
		}
		return may(name, sh)
	}
	return []step{
		may(ownStatus, "grep -c '^Pid:' /proc/self/status"),
		attempt(findVictim, "ls /proc | grep -x "+pid),
		attempt(readCmdline, "tr '\\0' ' ' < /proc/"+pid+"/cmdline"),
		attempt("read the victim's /proc/PID/environ", "tr '\\0' ' ' < /proc/"+pid+"/environ"),
		attempt("list the host's root through /proc/1/root", "ls /proc/1/root/"),
		attempt("read the host's /proc/1/cmdline", "tr '\\0' ' ' < /proc/1/cmdline"),
		attempt("read /proc/keys", "cat /proc/keys"),
		write("write /proc/self/oom_score_adj", "echo 500 > /proc/self/oom_score_adj"),
		write("write /proc/self/comm", "echo attacker > /proc/self/comm"),
	}
}

// grantHostProc is the weakened wiring: the ruleset grants the host's
// /proc read-only and asks for no procfs of the server's own.
func grantHostProc(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	var rs map[string]any
	must(t, json.Unmarshal(b, &rs))
	ro, _ := rs["readOnly"].([]any)
	rs["readOnly"] = append(ro, "/proc")
	delete(rs, "proc")
	b, err = json.MarshalIndent(rs, "", "  ")
	must(t, err)
	must(t, os.WriteFile(path, b, 0o666))
}
