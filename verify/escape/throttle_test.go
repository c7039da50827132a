package escape_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The host-throttle scenario: a process may lower the limits and the
// priority of any process of its own user (prlimit64 RLIMIT_CPU ends it,
// setpriority(PRIO_USER) renices the whole session), and Landlock's scopes
// do not cover these calls. Under the Landlock launcher without user
// namespaces (hosts that restrict them; the policy accepts
// landlock-tcp-only) there is no PID namespace: every process of the
// server's user on the host is in reach. The seccomp filter allows them on
// the caller only (pid 0), reading another's limits and nice value too
// there (they tell which host processes exist and how they run).
var throttleScenarios = []scenario{
	{
		name: "host-throttle", spec: projectSpec{helper: true, accept: []string{"landlock-tcp-only"}}, backends: []string{"landlock"}, weakBackend: bare,
		real: func(t *testing.T, sb *sandbox) {
			uid := throttleUID(t)
			for _, noNS := range []bool{false, true} {
				how, opts := entryWith(t, sb, uid, noNS)
				v := startVictim(t, uid)
				before := v.state(t)
				snap := sb.snapshot(t)
				steps := throttleSteps(v.pid, uid, noNS)
				o := sb.launchWith(t, how, sb.entry.Command, sb.entry.Args, opts, steps)
				o.requireDenied(t, sb.backend)
				if r := o.results[steps[0].name]; noNS && !r.ok && r.errno != "EPERM" {
					// kill(pid, 0) found the victim (ok, or EPERM from
					// Landlock's signal scope, not ESRCH): it was in reach,
					// no PID namespace.
					t.Errorf("%s via %s: the victim (pid %d) was not in reach (%s): the launch did not run without namespaces, and proves nothing", sb.backend, how, v.pid, r.describe())
				}
				if after := v.state(t); after != before {
					t.Errorf("%s via %s: the host process (pid %d, uid %d) changed: %s -> %s", sb.backend, how, v.pid, uid.id, before, after)
				} else {
					t.Logf("%s via %s: the host process (pid %d, uid %d) is unchanged: %s", sb.backend, how, v.pid, uid.id, after)
				}
				sb.requireUnchanged(t, snap)
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The payload spawned on the host as the client spawns the
			// entry's command, as the victim's user.
			uid := throttleUID(t)
			v := startVictim(t, uid)
			before := v.state(t)
			steps := throttleSteps(v.pid, uid, false)
			for i := range steps {
				steps[i].kind = mayWork
			}
			sb.launchBare(t, launchOpts{cred: uid.cred}, steps...).requireSucceeded(t, "bare", names(steps)...)
			if after := v.state(t); after == before || !strings.Contains(after, "cpu 12345") || !strings.Contains(after, "nice 19") {
				t.Errorf("bare: the host process (pid %d) is %s (was %s), want RLIMIT_CPU 12345 and nice 19: the suite cannot see it throttled", v.pid, after, before)
			} else {
				t.Logf("bare: the host process (pid %d, uid %d) was throttled: %s -> %s", v.pid, uid.id, before, after)
			}
		},
	},
}

// throttleUser is whom the victim and the server run as: the test's own
// uid, or (the test is root, as in CI) a uid of its own, so that
// PRIO_USER reaches nothing but the scenario's processes.
type throttleUser struct {
	id   int
	cred *syscall.Credential // nil: the test's own
}

func throttleUID(t *testing.T) throttleUser {
	t.Helper()
	if os.Getuid() != 0 {
		return throttleUser{id: os.Getuid()}
	}
	for id := 61999; id > 61900; id-- {
		if _, err := user.LookupId(strconv.Itoa(id)); err == nil {
			continue
		}
		return throttleUser{id: id, cred: &syscall.Credential{Uid: uint32(id), Gid: uint32(id)}}
	}
	t.Fatal("no free uid in 61900-61999")
	return throttleUser{}
}

// throttleSteps find the victim, read and set its RLIMIT_CPU and nice
// value, and (only for
// a uid of the test's own) renice every process of the uid. The victim is
// out of sight in a PID namespace (ESRCH); without one, the filter's EPERM
// is the only answer.
func throttleSteps(pid int, uid throttleUser, noNS bool) []step {
	want := []string{"EPERM", "ESRCH"}
	if noNS {
		want = []string{"EPERM"}
	}
	p := strconv.Itoa(pid)
	steps := []step{
		may("kill(host pid "+p+", 0)", helperSh("signal0", p)), // first: whether the victim is in reach
		// Reading tells which host processes exist and how they run.
		denyWith("prlimit64(host pid "+p+", RLIMIT_CPU) get", helperSh("getlimit", p), want...),
		denyWith("getpriority(PRIO_PROCESS, host pid "+p+")", helperSh("getprio", p), want...),
		denyWith("prlimit64(host pid "+p+", RLIMIT_CPU, 12345 s)", helperSh("prlimit", p), want...),
		denyWith("setpriority(PRIO_PROCESS, host pid "+p+", 19)", helperSh("renice", p), want...),
	}
	if uid.cred != nil {
		steps = append(steps, denyWith("setpriority(PRIO_USER, its own uid, 19)", helperSh("renice-user"), "EPERM"))
	}
	return steps
}

// withoutUserNS spawns the entry as a host without unprivileged user
// namespaces would: in a user namespace of the test's (the uid mapped to
// itself) whose user.max_user_namespaces the helper sets to 0, so that the
// launcher finds none allowed and runs Landlock alone. Nothing but the
// nesting limit differs: no PID namespace, the host's processes in sight.
func withoutUserNS(sb *sandbox, opts launchOpts, uid throttleUser) launchOpts {
	opts.prefix = []string{sb.s.helper, "nouserns"}
	opts.attr = func(a *syscall.SysProcAttr) {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid.id, HostID: uid.id, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: uid.gid(), HostID: uid.gid(), Size: 1}}
		a.GidMappingsEnableSetgroups = os.Getuid() == 0
		a.AmbientCaps = []uintptr{unix.CAP_SYS_RESOURCE}
	}
	return opts
}

// entryWith is how the Landlock entry is spawned as uid, with user
// namespaces or (noNS) as on a host without them, and how to say so.
func entryWith(t *testing.T, sb *sandbox, uid throttleUser, noNS bool) (string, launchOpts) {
	t.Helper()
	opts := launchOpts{env: sb.entry.Env, cred: uid.cred}
	if !noNS {
		return "entry (Landlock launcher, namespaces)", opts
	}
	opts = withoutUserNS(sb, opts, uid)
	if err := probeWithoutUserNS(opts); err != nil {
		if ci {
			t.Fatalf("CI=true, so not skipping: the entry cannot be spawned as on a host without user namespaces: %v", err)
		}
		t.Skipf("the entry cannot be spawned as on a host without user namespaces (the test's user namespace: %v): Landlock alone is not tried", err)
	}
	return "entry (Landlock alone: no user namespace can be created)", opts
}

// probeWithoutUserNS runs true as withoutUserNS would run the entry.
func probeWithoutUserNS(opts launchOpts) error {
	cmd := exec.Command(opts.prefix[0], append(opts.prefix[1:], "/bin/true")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: opts.cred}
	opts.attr(cmd.SysProcAttr)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (u throttleUser) gid() int {
	if u.cred != nil {
		return int(u.cred.Gid)
	}
	return os.Getgid()
}

// victim is a process of the server's user on the host, outside every
// sandbox: a stand-in for the client and the editor.
type victim struct{ pid int }

func startVictim(t *testing.T, uid throttleUser) victim {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	if uid.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: uid.cred}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return victim{pid: cmd.Process.Pid}
}

// state is the victim's RLIMIT_CPU soft limit and nice value, as /proc
// shows them.
func (v victim) state(t *testing.T) string {
	t.Helper()
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", v.pid))
	if err != nil {
		t.Fatal(err)
	}
	cpu := "?"
	for _, line := range strings.Split(string(limits), "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "Max cpu time")); len(f) >= 1 && strings.HasPrefix(line, "Max cpu time") {
			cpu = f[0]
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", v.pid))
	if err != nil {
		t.Fatal(err)
	}
	nice := "?"
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 {
		// Fields from the state (the third): the nice value is the 19th.
		if f := strings.Fields(string(stat[i+1:])); len(f) > 16 {
			nice = f[16]
		}
	}
	return "cpu " + cpu + ", nice " + nice
}
