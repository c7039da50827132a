package escape_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/testenv"
)

// The daemon scenario: the server starts a process in a new session
// (setsid: out of its process group and session, past a Pdeathsig), with
// its output detached, and exits. Nothing may keep running once the entry
// has returned: a survivor, confined or not, would keep acting with no
// client watching (rewrite its grant after `mcpolicy prove` put it back).
var daemonScenarios = []scenario{
	{
		name: "daemon-outlives", backends: allBackends, weakBackend: bare,
		real: func(t *testing.T, sb *sandbox) {
			d := newDaemon(t, sb)
			before := sb.snapshot(t)
			steps := d.steps()
			o := sb.launchEntry(t, steps...)
			o.requireDenied(t, sb.backend)
			if r := o.results[steps[1].name]; !r.ok {
				t.Fatalf("%s: %s: %s: the daemon never ran, so its end proves nothing\nstdout:\n%s\nstderr:\n%s", sb.backend, steps[1].name, r.describe(), o.stdout, lastLines([]byte(o.stderr), 15))
			}
			// The Landlock launcher returns once its PID namespace's init
			// has exited, which the kernel completes only after every
			// process in the namespace is gone. bwrap returns once the server has exited, while the kernel
			// tears its PID namespace down (every process in it already
			// sent SIGKILL); an engine's container likewise: a moment's
			// grace there.
			grace := 2 * time.Second
			if sb.backend == "landlock" {
				grace = 0
			}
			gone := time.Now()
			pids := testenv.Processes(d.token)
			for ; len(pids) > 0 && time.Since(gone) < grace; pids = testenv.Processes(d.token) {
				time.Sleep(5 * time.Millisecond)
			}
			if len(pids) > 0 {
				t.Errorf("%s: %v after the entry returned, the server's daemon still runs: pids %v", sb.backend, grace, pids)
			} else {
				t.Logf("%s: no process of the daemon's %v after the entry returned", sb.backend, time.Since(gone).Round(time.Millisecond))
			}
			if changed, what := d.haunts(time.Second); changed {
				t.Errorf("%s: %s", sb.backend, what)
			} else {
				t.Logf("%s: %s", sb.backend, what)
			}
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// No launcher: the client spawns the server's command itself,
			// and whatever it leaves running is reparented to init.
			d := newDaemon(t, sb)
			steps := d.steps()
			sb.launchBare(t, launchOpts{}, steps...).requireSucceeded(t, "bare", names(steps)...)
			pids := testenv.Processes(d.token)
			if len(pids) == 0 {
				t.Errorf("bare: the daemon did not outlive the command: the suite cannot see a survivor")
			}
			changed, what := d.haunts(2 * time.Second)
			if !changed {
				t.Errorf("bare: %s: the suite cannot see a survivor at work", what)
			}
			t.Logf("bare: still running after the command returned: pids %v; %s", pids, what)
		},
	},
}

// daemon is the process the payload leaves behind: a shell whose argv
// holds token, rewriting file (on the host) every 100 ms for two minutes.
type daemon struct {
	token string
	file  string // host path
	rel   string // from the payload's folder
}

func newDaemon(t *testing.T, sb *sandbox) *daemon {
	token := "mcpolicy-escape-daemon-" + randHex(t, 8)
	rel := sb.ranDir + "/" + token
	d := &daemon{token: token, rel: rel, file: filepath.Join(sb.root, rel)}
	t.Cleanup(func() { d.kill(t) })
	return d
}

// steps start the daemon (setsid from util-linux, else busybox's; its
// output detached, so that nothing waits for it) and wait for its first
// write.
func (d *daemon) steps() []step {
	sleep := `command -v sleep >/dev/null 2>&1 || sleep() { busybox sleep "$@"; }; `
	body := sleep + `i=0; while [ $i -lt 1200 ]; do echo $i > ` + shq(d.rel) + `; i=$((i+1)); sleep 0.1; done`
	start := `if command -v setsid >/dev/null 2>&1; then set -- setsid; else set -- busybox setsid; fi; "$@" sh -c ` + shq(body) + ` ` + d.token + ` </dev/null >/dev/null 2>&1 &`
	wait := sleep + `i=0; while [ ! -s ` + shq(d.rel) + ` ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; cat ` + shq(d.rel)
	return []step{
		may("start a daemon in a new session (setsid) rewriting "+d.rel+" every 100 ms", start),
		may("wait for the daemon's first write", wait),
	}
}

// haunts reports whether the daemon's file changes within d/2, or comes
// back within d/2 once removed (as `mcpolicy prove` puts a grant back).
func (d *daemon) haunts(wait time.Duration) (bool, string) {
	before, err := os.ReadFile(d.file)
	if err != nil {
		return false, fmt.Sprintf("reading %s: %v", d.file, err)
	}
	for end := time.Now().Add(wait / 2); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if now, err := os.ReadFile(d.file); err != nil || !bytes.Equal(now, before) {
			return true, fmt.Sprintf("%s changed after the entry returned: %q -> %q (%v)", d.file, before, now, err)
		}
	}
	if err := os.Remove(d.file); err != nil {
		return false, fmt.Sprintf("removing %s: %v", d.file, err)
	}
	for end := time.Now().Add(wait / 2); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(d.file); !errors.Is(err, os.ErrNotExist) {
			return true, fmt.Sprintf("%s, removed after the entry returned, was put back (%v)", d.file, err)
		}
	}
	return false, fmt.Sprintf("%s unchanged for %v after the entry returned, and not put back once removed", d.file, wait/2)
}

// kill ends whatever of the daemon still runs (the weakened wiring's, or
// a failed run's).
func (d *daemon) kill(t *testing.T) {
	testenv.KillProcesses(t, d.token, 10*time.Second)
}
