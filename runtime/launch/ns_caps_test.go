//go:build linux

package launch_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// moreChecks are the server's checks for the capability sets and the
// scratch folder (insideMain's default).
//
//	caps          the five capability sets, as /proc/PID/status names them,
//	              read with capget and prctl (the server has no /proc), and
//	              the securebits
//	trap          handle SIGTERM, SIGINT and SIGHUP, say it is ready, and
//	              exit 10+N when signal N comes
//	envwrite:VAR  create a file in the folder $VAR names
//	envstat:VAR   that folder's owner, group and mode, and its path
func moreChecks(op, arg string) string {
	switch op {
	case "caps":
		return capsOfSelf()
	case "trap": // until a signal ends it: handled, exit 10+N
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		fmt.Println(`{"check":"trap","result":"ready"}`)
		select {
		case s := <-sigs:
			os.Exit(10 + int(s.(syscall.Signal)))
		case <-time.After(60 * time.Second):
		}
		return "not signalled"
	case "envwrite":
		dir := os.Getenv(arg)
		if dir == "" {
			return "unset"
		}
		f, err := os.CreateTemp(dir, "written-")
		if err == nil {
			_, err = f.WriteString("x")
			f.Close()
		}
		return errResult(err)
	case "envstat":
		dir := os.Getenv(arg)
		if dir == "" {
			return "unset"
		}
		var st unix.Stat_t
		if err := unix.Lstat(dir, &st); err != nil {
			return errResult(err)
		}
		return fmt.Sprintf("%d:%d:%04o %s", st.Uid, st.Gid, st.Mode&0o7777, dir)
	}
	return reapChecks(op, arg) // reap_test.go
}

// capSets are the names of the capability sets in /proc/PID/status.
var capSets = []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}

// capsOfSelf formats this process's capability sets as /proc shows them:
// "pid=N CapInh=... CapPrm=... CapEff=... CapBnd=... CapAmb=...".
func capsOfSelf() string {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return "capget: " + errResult(err)
	}
	join := func(lo, hi uint32) uint64 { return uint64(hi)<<32 | uint64(lo) }
	var bnd, amb uint64
	for c := 0; c < 64; c++ {
		in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
		if err != nil { // EINVAL: past the kernel's last capability
			break
		}
		if in == 1 {
			bnd |= 1 << c
		}
		if in, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); err == nil && in == 1 {
			amb |= 1 << c
		}
	}
	secbits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
	if err != nil {
		return "PR_GET_SECUREBITS: " + errResult(err)
	}
	return fmt.Sprintf("pid=%d CapInh=%016x CapPrm=%016x CapEff=%016x CapBnd=%016x CapAmb=%016x Securebits=%02x", os.Getpid(),
		join(data[0].Inheritable, data[1].Inheritable), join(data[0].Permitted, data[1].Permitted),
		join(data[0].Effective, data[1].Effective), bnd, amb, secbits)
}

// procCaps reads a process's capability sets from /proc/PID/status, in
// capsOfSelf's format.
// hostPid is the pid, in this process's namespace, of the server that
// says it is pid in its own: with namespaces the launcher gives it a PID
// namespace of its own (NSpid lists a process's pid in each, outermost
// first). The server is the test binary in its inside role.
func hostPid(pid int) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		host, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		status, _ := os.ReadFile("/proc/" + e.Name() + "/status")
		if !bytes.Contains(cmdline, []byte(roleInside)) {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if ns, ok := strings.CutPrefix(line, "NSpid:"); ok {
				if f := strings.Fields(ns); len(f) > 0 && f[len(f)-1] == strconv.Itoa(pid) {
					return host
				}
			}
		}
	}
	return pid
}

func procCaps(pid int) (string, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sets := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		sets[k] = strings.TrimSpace(v)
	}
	out := fmt.Sprintf("pid=%d", pid)
	for _, s := range capSets {
		if sets[s] == "" {
			return "", fmt.Errorf("/proc/%d/status has no %s", pid, s)
		}
		out += " " + s + "=" + sets[s]
	}
	return out, nil
}

// capField is one set's value in a capsOfSelf line.
func capField(line, set string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, set+"="); ok {
			return v
		}
	}
	return ""
}

// TestCapabilitiesEmptied: the server holds no capability in any set —
// effective, permitted, inheritable, ambient and the bounding set — as
// /proc/PID/status shows it from outside and capget/prctl inside, whoever
// launches it, with namespaces and without (a root launcher then empties
// the bounding set before it becomes the plan's user). The one exception
// the kernel imposes: an unprivileged launcher without a user namespace
// has no CAP_SETPCAP, so the bounding set cannot shrink; it stays the
// invoker's, every other set is empty, and -v says so.
func TestCapabilitiesEmptied(t *testing.T) {
	w := setupIssue14(t, artefact.AcceptTCPOnly, artefact.AcceptUnixSockets)
	w.checks(t, "caps", "wait")
	// What the launcher's bounding set is (setpriv leaves it as it is).
	ours, err := procCaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	invokers := capField(ours, "CapBnd")
	const zero = "0000000000000000"
	for name, as := range users(t) {
		for _, mode := range []string{"namespaces", "Landlock alone"} {
			t.Run(name+", "+mode, func(t *testing.T) {
				var env []string
				if mode == "Landlock alone" {
					env = []string{"MCPOLICY_TEST_NO_NS=1"}
				}
				var mu sync.Mutex
				var outside, outsideErr string
				r := w.launchWatched(t, as, syscall.SIGTERM, func(stdout string) {
					mu.Lock()
					defer mu.Unlock()
					for _, line := range strings.Split(stdout, "\n") {
						var c check
						if json.Unmarshal([]byte(line), &c) == nil && c.Check == "caps" {
							pid, _ := strconv.Atoi(strings.TrimPrefix(strings.Fields(c.Result)[0], "pid="))
							if s, err := procCaps(hostPid(pid)); err != nil {
								outsideErr = err.Error()
							} else {
								outside = s
							}
						}
					}
				}, env...)
				mu.Lock()
				defer mu.Unlock()
				if r.code != 128+int(syscall.SIGTERM) {
					t.Fatalf("exit %d, want %d (ended by the test's SIGTERM)\n%s", r.code, 128+int(syscall.SIGTERM), r.stderr)
				}
				inside := r.checks["caps:"]
				t.Logf("inside:  %s\noutside: %s%s", inside, outside, outsideErr)
				if outside == "" {
					t.Fatalf("could not read the server's /proc/PID/status: %s", outsideErr)
				}
				// Only an unprivileged launcher without namespaces lacks CAP_SETPCAP.
				keepsBounding := as != nil && mode == "Landlock alone"
				for _, set := range capSets {
					want := zero
					if set == "CapBnd" && keepsBounding {
						want = invokers
					}
					for view, line := range map[string]string{"/proc/PID/status": outside, "capget/prctl inside": inside} {
						if got := capField(line, set); got != want {
							t.Errorf("%s: %s=%s, want %s", view, set, got, want)
						}
					}
				}
				// noroot, no setuid fixup, both locked: where CAP_SETPCAP allowed it.
				if got, want := capField(inside, "Securebits"), map[bool]string{false: "0f", true: "00"}[keepsBounding]; got != want {
					t.Errorf("securebits %s, want %s", got, want)
				}
				says := "capabilities: every set emptied"
				if keepsBounding {
					says = "capabilities: none held; the bounding set cannot be emptied"
				}
				if !strings.Contains(r.stderr, says) {
					t.Errorf("-v output lacks %q:\n%s", says, r.stderr)
				}
			})
		}
	}
}

// TestScratchDirWithoutNamespaces: Landlock alone with landlock-scratch-dir
// accepted, started by root (who becomes the plan's user) and by an
// unprivileged user: the server's TMPDIR and HOME are its scratch folder,
// it can write there, and the folder belongs to the plan's uid and gid
// with mode 0700.
func TestScratchDirWithoutNamespaces(t *testing.T) {
	w := setupIssue14(t, artefact.AcceptTCPOnly, artefact.AcceptUnixSockets, artefact.AcceptScratchDir)
	w.rs.Scratch, w.rs.ScratchSize = "/tmp", 64<<20
	w.checks(t, "envwrite:TMPDIR", "envwrite:HOME", "envstat:TMPDIR", "envstat:HOME")
	for name, as := range users(t) {
		t.Run(name, func(t *testing.T) {
			r := w.launch(t, as, "MCPOLICY_TEST_NO_NS=1")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			t.Logf("%v", r.checks)
			for _, v := range []string{"TMPDIR", "HOME"} {
				if got := r.checks["envwrite:"+v]; got != "ok" {
					t.Errorf("writing in $%s: %s, want ok", v, got)
				}
			}
			tmp, home := r.checks["envstat:TMPDIR"], r.checks["envstat:HOME"]
			if tmp != home {
				t.Errorf("$TMPDIR is %q, $HOME is %q: want both the scratch folder", tmp, home)
			}
			owner, dir, _ := strings.Cut(tmp, " ")
			if !filepath.IsAbs(dir) {
				t.Fatalf("no scratch folder: $TMPDIR %q", tmp)
			}
			t.Cleanup(func() { // the folder, or the one of ours holding it; never /tmp
				for _, d := range []string{filepath.Dir(dir), dir} {
					if strings.HasPrefix(filepath.Base(d), "mcpolicy-scratch-") {
						os.RemoveAll(d)
						return
					}
				}
			})
			if owner != "1000:1000:0700" {
				t.Errorf("the scratch folder is %s (uid:gid:mode), want 1000:1000:0700", owner)
			}
			// From outside as well: what the kernel says of the folder, and
			// of the one holding it (nobody else's to write).
			var st, parent syscall.Stat_t
			if err := syscall.Lstat(dir, &st); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Lstat(filepath.Dir(dir), &parent); err != nil {
				t.Fatal(err)
			}
			if st.Uid != 1000 || st.Gid != 1000 || st.Mode&0o7777 != 0o700 || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
				t.Errorf("%s: uid %d gid %d mode %o, want a folder of 1000:1000, 0700", dir, st.Uid, st.Gid, st.Mode)
			}
			if parent.Uid != uint32(os.Getuid()) && as == nil || parent.Mode&0o022 != 0 {
				t.Errorf("%s: uid %d mode %o, want the launcher's, writable by nobody else", filepath.Dir(dir), parent.Uid, parent.Mode&0o7777)
			}
		})
	}
}

// TestSignalsReachTheServersHandler: a signal sent to the launcher reaches
// the server's own handler, whose exit status is the launcher's — with
// namespaces (stage 1 forwards it to stage 2, which became the server),
// and without, where the launcher leads its process group and forks the
// server. (Otherwise the launcher execs the server: it is the server.)
func TestSignalsReachTheServersHandler(t *testing.T) {
	w := setupIssue14(t, artefact.AcceptTCPOnly, artefact.AcceptUnixSockets)
	w.checks(t, "trap")
	for _, mode := range []struct {
		name string
		env  []string
	}{
		{"namespaces", nil},
		{"Landlock alone, forked", []string{"MCPOLICY_TEST_NO_NS=1"}},
	} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
			t.Run(fmt.Sprintf("%s, %v", mode.name, sig), func(t *testing.T) {
				r := w.launchSignalled(t, nil, sig, mode.env...)
				if want := 10 + int(sig); r.code != want {
					t.Errorf("exit %d, want %d (the server's handler)\n%s", r.code, want, r.stderr)
				}
			})
		}
	}
}
