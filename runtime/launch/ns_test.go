//go:build linux

package launch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// The test binary plays three parts (argv[1]): the launcher's stage 2,
// a launcher (roleLauncher: launch.Start on a ruleset file, as
// mcpolicy-launch does, with the test hooks set from its environment) and
// the confined server (roleInside: it tries the channels of issue #14 and
// prints what the kernel said, one JSON line per check).
const (
	roleLauncher = "__mcpolicy-test-launcher"
	roleInside   = "__mcpolicy-test-inside"
	keyDesc      = "mcpolicy-test-planted-key"
	keyIDArg     = "KEYID" // replaced by the launcher with the key it planted
	plantedEnv   = "MCPOLICY_TEST_PLANTED=planted-env-secret"
	injected     = "echo mcpolicy-tiocsti\n"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case launch.Stage2Arg:
			launch.Stage2()
		case launch.RelayArg:
			launch.Relay(os.Args[2])
		case roleLauncher:
			os.Exit(launcherMain(os.Args[2]))
		case roleInside:
			insideMain(os.Args[2:])
			os.Exit(0)
		case roleListen:
			listenMain(os.Args[2])
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// launcherMain starts the ruleset in file. Its environment says how:
//
//	MCPOLICY_TEST_UNHARDENED=1  the control: the wiring before issue #14
//	MCPOLICY_TEST_NO_NS=1       Landlock alone (as if user namespaces were off)
//	MCPOLICY_TEST_KEY=1         plant a key in a new session keyring first
//	MCPOLICY_TEST_CHILD=1       run the launcher as a child of this process
//	                            (so it does not lead its process group)
func launcherMain(file string) int {
	if os.Getenv("MCPOLICY_TEST_CHILD") == "1" {
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MCPOLICY_TEST_CHILD=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 125
		}
		return 0
	}
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	var rs artefact.Ruleset
	if err := json.Unmarshal(b, &rs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	if os.Getenv("MCPOLICY_TEST_KEY") == "1" {
		// Keyrings are per thread: plant the key on the thread that
		// will start stage 2 (os/exec forks from the calling thread).
		runtime.LockOSThread()
		// A new anonymous session keyring of its own (joining one by name
		// could join an earlier run's).
		if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 {
			fmt.Fprintln(os.Stderr, "join:", e)
			return 125
		}
		id, err := unix.AddKey("user", keyDesc, []byte("planted-secret"), unix.KEY_SPEC_SESSION_KEYRING)
		if err != nil {
			fmt.Fprintln(os.Stderr, "add_key:", err)
			return 125
		}
		// And one in the user keyring (@u), which no session change
		// replaces: a user namespace has its own.
		if _, err := unix.AddKey("user", keyDesc+"-user", []byte("planted-secret"), unix.KEY_SPEC_USER_KEYRING); err != nil {
			fmt.Fprintln(os.Stderr, "add_key @u:", err)
			return 125
		}
		for i, a := range rs.Command {
			rs.Command[i] = strings.ReplaceAll(a, keyIDArg, strconv.Itoa(id))
		}
	}
	// A descriptor of the host's /run left open by the caller, as a client
	// might: through /proc/self/fd/N it leads around any root.
	if fd, err := syscall.Open("/run", syscall.O_RDONLY|syscall.O_DIRECTORY, 0); err == nil {
		const run = 100 // above what the launcher passes on purpose
		if err := syscall.Dup3(fd, run, 0); err != nil {
			fmt.Fprintln(os.Stderr, "dup3:", err)
			return 125
		}
		for i, a := range rs.Command {
			rs.Command[i] = strings.ReplaceAll(a, "LEAKEDFD", strconv.Itoa(run))
		}
	}
	launch.SetUnhardened(os.Getenv("MCPOLICY_TEST_UNHARDENED") == "1")
	opts := launch.Options{Environ: os.Environ(), Verbose: os.Stderr}
	if os.Getenv("MCPOLICY_TEST_NO_NS") == "1" {
		opts.Host = &hostcaps.Host{ABI: hostcaps.Detect().ABI}
	}
	code, err := launch.Start(&rs, opts)
	var ue *launch.UnsupportedError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintln(os.Stderr, err)
		return 4
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

type check struct {
	Check  string `json:"check"`
	Result string `json:"result"`
}

// insideMain runs as the confined server: each argument is a check.
func insideMain(checks []string) {
	enc := json.NewEncoder(os.Stdout)
	for _, c := range checks {
		op, arg, _ := strings.Cut(c, ":")
		var res string
		switch op {
		case "unix": // connect(2) to a named unix socket
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				err = unix.Connect(fd, &unix.SockaddrUnix{Name: arg})
				unix.Close(fd)
			}
			res = errResult(err)
		case "environ": // PATH:NEEDLE, read and searched
			p, needle, _ := strings.Cut(arg, ":")
			b, err := os.ReadFile(p)
			switch {
			case err != nil:
				res = errResult(err)
			case bytes.Contains(b, []byte(needle)):
				res = "found"
			default:
				res = "absent"
			}
		case "keyread": // KEYCTL_READ of a key by its id
			id, _ := strconv.Atoi(arg)
			buf := make([]byte, 256)
			_, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
			res = errResult(err)
		case "keysearch": // KEYCTL_SEARCH of the session keyring
			_, err := unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", arg, 0)
			res = errResult(err)
		case "userkey": // KEYCTL_SEARCH of the user keyring, then KEYCTL_READ
			id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", arg, 0)
			if err == nil {
				_, err = unix.KeyctlBuffer(unix.KEYCTL_READ, id, make([]byte, 256), 0)
			}
			res = errResult(err)
		case "tiocsti": // push a command into the terminal on stdin
			var err error
			for i := 0; i < len(injected) && err == nil; i++ {
				c := injected[i]
				if _, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
					err = e
				}
			}
			res = errResult(err)
		case "ppid":
			res = strconv.Itoa(os.Getppid())
		case "ctty": // is stdin's terminal our controlling terminal? (ENOTTY: no)
			_, err := unix.IoctlGetInt(0, unix.TIOCGSID)
			res = errResult(err)
		case "exit":
			n, _ := strconv.Atoi(arg)
			os.Exit(n)
		case "kill": // by a signal of its own
			n, _ := strconv.Atoi(arg)
			syscall.Kill(os.Getpid(), syscall.Signal(n))
			time.Sleep(10 * time.Second)
		case "wait": // until a signal ends it
			fmt.Println(`{"check":"wait","result":"ready"}`)
			time.Sleep(60 * time.Second)
			res = "not signalled"
		default: // ns_caps_test.go
			res = moreChecks(op, arg)
		}
		enc.Encode(check{c, res})
	}
}

// errResult names an errno as the probe does.
func errResult(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
	}
	return err.Error()
}

// openPTY returns a pseudo-terminal's master and slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// listenUnix plants a listener at p that anyone may connect to.
func listenUnix(t *testing.T, p string) {
	t.Helper()
	os.Remove(p)
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o777)
	t.Cleanup(func() { l.Close(); os.Remove(p) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// issue14 is the world a run sees: the test binary granted read-only, the
// planted sockets, and the ruleset's file.
type issue14 struct {
	bin, ruleset   string
	tmpSock, runSk string
	rs             artefact.Ruleset
}

// checks rewrites the ruleset file with other checks for the server.
func (w *issue14) checks(t *testing.T, checks ...string) {
	t.Helper()
	w.rs.Command = append([]string{w.bin, roleInside}, checks...)
	if err := os.WriteFile(w.ruleset, w.rs.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func setupIssue14(t *testing.T, accept ...string) *issue14 {
	t.Helper()
	requireLandlock(t)
	base := workdir(t)
	bin := filepath.Join(base, "bin", "launch.test")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	copyTree(t, os.Args[0], bin)
	os.Chmod(bin, 0o755)

	// A socket under /tmp, and a stand-in for /run/docker.sock.
	sockDir, err := os.MkdirTemp("/tmp", "mcpolicy-launch-sock-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sockDir, 0o755)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	w := &issue14{bin: bin, tmpSock: filepath.Join(sockDir, "agent.sock"),
		runSk: fmt.Sprintf("/run/mcpolicy-test-%d.sock", os.Getpid())}
	listenUnix(t, w.tmpSock)
	listenUnix(t, w.runSk)

	w.rs = artefact.Ruleset{Server: "t", Plan: "sha256:00",
		Baseline:  []string{"/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"},
		ReadOnly:  []string{filepath.Dir(bin)},
		ReadWrite: []string{},
		DevicesRO: []string{"/dev/zero", "/dev/random", "/dev/urandom"}, DevicesRW: []string{"/dev/null"},
		Network: "none", User: "1000:1000", Env: []string{}, Accept: accept,
	}
	w.ruleset = filepath.Join(base, "ruleset.json")
	w.checks(t, "unix:"+w.tmpSock, "unix:"+w.runSk, "unix:/proc/self/fd/LEAKEDFD/"+filepath.Base(w.runSk),
		"environ:/proc/1/environ:planted-env-secret", "keyread:"+keyIDArg, "keysearch:"+keyDesc, "userkey:"+keyDesc+"-user", "ctty", "tiocsti", "ppid")
	return w
}

type run14 struct {
	code     int
	checks   map[string]string
	stderr   string
	injected bool // the terminal received the injected command
}

// launch runs the launcher (optionally as another user) with a fresh
// pseudo-terminal as stdin and controlling terminal, a planted variable in
// its environment and a key in its session keyring.
func (w *issue14) launch(t *testing.T, as []string, env ...string) run14 {
	t.Helper()
	return w.launchSignalled(t, as, 0, env...)
}

// launchSignalled is launch, sending sig to the launcher once the server
// is running (a "wait" check).
func (w *issue14) launchSignalled(t *testing.T, as []string, sig syscall.Signal, env ...string) run14 {
	t.Helper()
	return w.launchWatched(t, as, sig, nil, env...)
}

// launchWatched is launchSignalled, calling ready (when not nil) with what
// the server printed so far once it is waiting, before the signal.
func (w *issue14) launchWatched(t *testing.T, as []string, sig syscall.Signal, ready func(stdout string), env ...string) run14 {
	t.Helper()
	_, slave := openPTY(t)
	args := append(append(append([]string{}, as...), w.bin, roleLauncher), w.ruleset)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", plantedEnv, "MCPOLICY_TEST_KEY=1"}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	var err error
	if sig == 0 {
		err = cmd.Run()
	} else {
		// Signal the launcher once the server says it is waiting.
		pr, pw := io.Pipe()
		cmd.Stdout = io.MultiWriter(&stdout, pw)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(pr)
			var seen strings.Builder
			for sc.Scan() {
				seen.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), `"ready"`) {
					if ready != nil {
						ready(seen.String())
					}
					cmd.Process.Signal(sig)
				}
			}
		}()
		err = cmd.Wait()
		pw.Close()
	}
	r := run14{checks: map[string]string{}, stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var c check
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("inside said %q: %v", sc.Text(), err)
		}
		r.checks[strings.SplitN(c.Check, ":", 2)[0]+":"+lastField(c.Check)] = c.Result
	}
	// What TIOCSTI pushed is input the terminal's reader (the user's
	// shell) would read next.
	slave.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	got, _ := io.ReadAll(io.LimitReader(slave, 4096))
	r.injected = strings.Contains(string(got), strings.TrimSpace(injected))
	return r
}

// lastField names a check by its op and what it targets, without key ids.
func lastField(c string) string {
	switch {
	case strings.HasPrefix(c, "unix:/proc/self/fd/"):
		return "leaked fd"
	case strings.HasPrefix(c, "unix:"):
		return strings.TrimPrefix(c, "unix:")
	case strings.HasPrefix(c, "keyread:"):
		return "key"
	}
	_, arg, _ := strings.Cut(c, ":")
	return arg
}

// users are who runs the launcher: this test's user, and (as root) an
// unprivileged one with a supplementary group, through setpriv.
func users(t *testing.T) map[string][]string {
	us := map[string][]string{"invoking user": nil}
	if os.Getuid() == 0 {
		us["uid 1000"] = []string{"setpriv", "--reuid", "1000", "--regid", "1000", "--groups", "4242"}
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("CI runs the launch tests as root (they switch to uid 1000 with setpriv)")
	}
	return us
}

// TestMinimalRootHidesWhatLandlockCannot (issue #14): where namespaces
// work, the server reaches no named unix socket outside its grants (ENOENT:
// /tmp and /run are not in its root), /proc/1 is not the invoker's, the
// invoker's session keyring is out of reach, and TIOCSTI on the terminal
// it was given fails (no controlling terminal). The control run — the
// wiring before #14 — reaches every one of them, so the checks can fail.
func TestMinimalRootHidesWhatLandlockCannot(t *testing.T) {
	w := setupIssue14(t)
	tmp, run := "unix:"+w.tmpSock, "unix:"+w.runSk
	for name, as := range users(t) {
		t.Run(name, func(t *testing.T) {
			r := w.launch(t, as)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			t.Logf("hardened: %v", r.checks)
			for _, sock := range []string{tmp, run, "unix:leaked fd"} {
				if r.checks[sock] != "ENOENT" {
					t.Errorf("%s: %s, want ENOENT (not in the minimal root; an inherited descriptor closed)", sock, r.checks[sock])
				}
			}
			if e := r.checks["environ:/proc/1/environ:planted-env-secret"]; e == "found" || e == "" {
				t.Errorf("/proc/1/environ: %q, want the planted variable not visible", e)
			}
			if k := r.checks["keyread:key"]; k == "ok" || k == "" {
				t.Errorf("reading the invoker's session key: %q, want a refusal", k)
			}
			// ENOKEY: a new, empty session keyring (the user namespace's own
			// user keyring); ENOSYS: the seccomp filter refuses keyctl
			// altogether. TestNewSessionKeyring checks the first alone.
			if k := r.checks["keysearch:"+keyDesc]; k != "ENOKEY" && k != "ENOSYS" {
				t.Errorf("searching the session keyring: %q, want ENOKEY or ENOSYS", k)
			}
			if k := r.checks["userkey:"+keyDesc+"-user"]; k != "ENOKEY" && k != "ENOSYS" {
				t.Errorf("searching the user keyring: %q, want ENOKEY or ENOSYS", k)
			}
			if c := r.checks["ctty:"]; c != "ENOTTY" {
				t.Errorf("TIOCGSID on the terminal: %q, want ENOTTY (not the server's controlling terminal)", c)
			}
			if s := r.checks["tiocsti:"]; s != "EPERM" && s != "EIO" {
				t.Errorf("TIOCSTI: %q, want EPERM (no controlling terminal) or EIO (legacy TIOCSTI off)", s)
			}
			if r.injected {
				t.Errorf("the terminal received the injected command")
			}
			// No /proc in the root at all (the ruleset never grants it):
			// neither stage 1's environment nor any other process's.
			if e := r.checks["environ:/proc/1/environ:planted-env-secret"]; e != "ENOENT" {
				t.Errorf("/proc/1/environ: %q, want ENOENT (no /proc in the minimal root)", e)
			}
			for _, line := range []string{"root: a read-only tmpfs holding only", "session: new (no controlling terminal)", "session keyring: a new, empty anonymous session keyring"} {
				if !strings.Contains(r.stderr, line) {
					t.Errorf("-v output lacks %q:\n%s", line, r.stderr)
				}
			}
			groups := "supplementary groups: dropped (setgroups)"
			if as != nil {
				groups = "supplementary groups: 1 kept, unmapped (an unprivileged user namespace denies setgroups): harmless with the minimal root"
			}
			if !strings.Contains(r.stderr, groups) {
				t.Errorf("-v output lacks %q:\n%s", groups, r.stderr)
			}
		})
		t.Run(name+", control (unhardened)", func(t *testing.T) {
			r := w.launch(t, as, "MCPOLICY_TEST_UNHARDENED=1")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			t.Logf("unhardened: %v", r.checks)
			for _, c := range []string{tmp, run, "unix:leaked fd", "keyread:key", "keysearch:" + keyDesc, "ctty:", "tiocsti:"} {
				if r.checks[c] != "ok" {
					t.Errorf("control: %s: %q, want ok (the check must be able to fail)", c, r.checks[c])
				}
			}
			if !r.injected {
				t.Errorf("control: TIOCSTI did not reach the terminal")
			}
		})
	}
}

// TestLandlockAloneDeniesUnixSockets: without namespaces the named sockets
// cannot be hidden, so the seccomp filter refuses every unix socket
// (EACCES) unless the policy accepts landlock-unix-sockets; accepted, the
// sockets are reachable
// (that is what was accepted), but the server still gets a new session and
// session keyring — whether the launcher leads its process group (setsid
// is refused: the server is forked into a new session) or not (setsid, then
// exec in place).
func TestLandlockAloneDeniesUnixSockets(t *testing.T) {
	filtered := setupIssue14(t, artefact.AcceptTCPOnly)
	r := filtered.launch(t, nil, "MCPOLICY_TEST_NO_NS=1")
	if r.code != 0 || r.checks["unix:"+filtered.runSk] != "EACCES" || r.checks["unix:"+filtered.tmpSock] != "EACCES" {
		t.Fatalf("without namespaces, not accepted: exit %d, %v\n%s\nwant every unix socket refused (EACCES) by the filter", r.code, r.checks, r.stderr)
	}
	t.Logf("Landlock alone, filtered: %v", r.checks)
	w := setupIssue14(t, artefact.AcceptTCPOnly, artefact.AcceptUnixSockets)
	for _, leader := range []bool{true, false} {
		for name, as := range users(t) {
			env := []string{"MCPOLICY_TEST_NO_NS=1"}
			session := "the launcher leads its process group, so the server is forked into a new one"
			if !leader {
				env = append(env, "MCPOLICY_TEST_CHILD=1")
				session = "session: new (no controlling terminal)"
			}
			t.Run(fmt.Sprintf("%s, leads its process group %v", name, leader), func(t *testing.T) {
				r := w.launch(t, as, env...)
				if r.code != 0 {
					t.Fatalf("exit %d\n%s", r.code, r.stderr)
				}
				t.Logf("Landlock alone: %v", r.checks)
				if r.checks["unix:"+w.runSk] != "ok" {
					t.Errorf("accepted landlock-unix-sockets, yet %s: %s", w.runSk, r.checks["unix:"+w.runSk])
				}
				if k := r.checks["keyread:key"]; k == "ok" || k == "" {
					t.Errorf("reading the invoker's session key: %q, want a refusal", k)
				}
				if k := r.checks["keysearch:"+keyDesc]; k != "ENOKEY" && k != "ENOSYS" {
					t.Errorf("searching the session keyring: %q, want ENOKEY or ENOSYS", k)
				}
				if c := r.checks["ctty:"]; c != "ENOTTY" {
					t.Errorf("TIOCGSID on the terminal: %q, want ENOTTY (not the server's controlling terminal)", c)
				}
				if s := r.checks["tiocsti:"]; s != "EPERM" && s != "EIO" {
					t.Errorf("TIOCSTI: %q, want EPERM or EIO", s)
				}
				if r.injected {
					t.Errorf("the terminal received the injected command")
				}
				for _, line := range []string{session, "no namespaces: the host's named unix sockets stay reachable"} {
					if !strings.Contains(r.stderr, line) {
						t.Errorf("-v output lacks %q:\n%s", line, r.stderr)
					}
				}
			})
		}
	}
}

// TestExitStatusAndSignals: the launcher returns the server's exit status,
// 128+N when a signal N ended it, and a signal sent to the launcher reaches
// the server — with namespaces (stage 2 execs the server), and without
// (where a launcher leading its process group forks the server).
func TestExitStatusAndSignals(t *testing.T) {
	w := setupIssue14(t, artefact.AcceptTCPOnly, artefact.AcceptUnixSockets)
	for _, env := range [][]string{nil, {"MCPOLICY_TEST_NO_NS=1"}} {
		name := "namespaces"
		if env != nil {
			name = "Landlock alone"
		}
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				check string
				sig   syscall.Signal
				want  int
			}{
				{"exit:7", 0, 7},
				{"kill:9", 0, 128 + 9},
				{"kill:15", 0, 128 + 15},
				{"wait", syscall.SIGTERM, 128 + 15},
				{"wait", syscall.SIGINT, 128 + 2},
				{"wait", syscall.SIGHUP, 128 + 1},
			} {
				w.checks(t, c.check)
				start := time.Now()
				r := w.launchSignalled(t, nil, c.sig, env...)
				if r.code != c.want {
					t.Errorf("%s, signal %v: exit %d, want %d\n%s", c.check, c.sig, r.code, c.want, r.stderr)
				}
				if d := time.Since(start); d > 20*time.Second {
					t.Errorf("%s, signal %v: took %v (the signal did not reach the server?)", c.check, c.sig, d)
				}
			}
		})
	}
}

// TestStage2RefusesASymlinkedGrant: `mcpolicy exec` checks no source
// before Start; stage 2 opens every grant below the project root (or home)
// without following a symlink, and mounts what it opened. A grant swapped
// for a link is refused with exit 8 (ExitTampered), nothing started.
func TestStage2RefusesASymlinkedGrant(t *testing.T) {
	w := setupIssue14(t)
	proj := filepath.Join(filepath.Dir(filepath.Dir(w.bin)), "proj")
	os.MkdirAll(proj, 0o755)
	if err := os.Symlink("/etc", filepath.Join(proj, "data")); err != nil {
		t.Fatal(err)
	}
	w.rs.ReadOnly = append(w.rs.ReadOnly, filepath.Join(proj, "data"))
	w.checks(t, "ppid")
	r := w.launch(t, nil, "PROJECT_ROOT="+proj)
	if r.code != launch.ExitTampered || len(r.checks) > 0 || !strings.Contains(r.stderr, "symlink below "+proj) {
		t.Errorf("exit %d, %v\n%s\nwant exit %d naming the symlink, nothing run", r.code, r.checks, r.stderr, launch.ExitTampered)
	}
}
