package escape_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The issue #14 scenarios: what a server reaches through the process it
// runs in rather than through the files of its grants — a unix socket on
// the host outside every grant, the client's environment, the terminal the
// client was started from, the session keyring, a descriptor the client
// leaked, an image's VOLUME, a setuid bit on a file it wrote. What a shell
// cannot do the payload does with the helper (./escape-helper, built static
// by the suite and copied into the project), as the server's own code would.
var issue14Scenarios = []scenario{
	{
		// A unix listener the test plants in the host's /tmp, and a
		// stand-in for /run/docker.sock at /run: neither is in any grant.
		name: "unix-socket", spec: projectSpec{helper: true}, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			socks := plantSockets(t)
			before := sb.snapshot(t)
			sb.launchEntry(t, socks.steps()...).requireDenied(t, sb.backend)
			socks.requireAccepted(t, sb.backend, false)
			sb.requireUnchanged(t, before)
			sb.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, sb *sandbox) {
			socks := plantSockets(t)
			steps := socks.steps()
			// The same sandbox, but the host's folders holding the
			// sockets are bound in (read-only: connect needs no more).
			extra := []string{"--ro-bind", filepath.Dir(socks.tmp.path), filepath.Dir(socks.tmp.path)}
			if socks.run != nil {
				extra = append(extra, "--ro-bind", filepath.Dir(socks.run.path), filepath.Dir(socks.run.path))
			}
			sb.launchWeakBwrapWith(t, extra, launchOpts{}, steps...).requireSucceeded(t, sb.backend, names(steps)...)
			socks.requireAccepted(t, "weakened "+sb.backend, true)
		},
	},
	{
		// The client's environment holds a variable the policy does not
		// pass through: no process the server can read may show it.
		name: "environ", spec: projectSpec{helper: true}, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			name, value := plantedVar(t)
			env := maps.Clone(sb.entry.Env)
			if env == nil {
				env = map[string]string{}
			}
			env[name] = value
			before := sb.snapshot(t)
			o := sb.launchWith(t, "entry", sb.entry.Command, sb.entry.Args, launchOpts{env: env}, findVar(name, value))
			o.requireDenied(t, sb.backend)
			o.requireNotShown(t, sb.backend, name+"="+value)
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The wrapper before the launcher: bwrap started with the
			// client's whole environment. Its own process is pid 1 in the
			// sandbox, and its environ is the server's to read.
			name, value := plantedVar(t)
			steps := findVar(name, value)
			o := sb.launchWeakBwrapWith(t, nil, launchOpts{env: map[string]string{name: value}}, steps...)
			o.requireSucceeded(t, sb.backend, names(steps)...)
			if r := o.results[steps[0].name]; !strings.Contains(r.msg, "/proc/1/environ") {
				t.Errorf("weakened bwrap: the variable was found, but not at /proc/1/environ (bwrap's own process): %s", r.msg)
			} else {
				t.Logf("weakened bwrap: %s", r.msg)
			}
		},
	},
	{
		// The client runs in the user's terminal: the entry is spawned
		// leading a session whose controlling terminal is a pty, which is
		// also its stdin. TIOCSTI would push a command into the user's
		// shell (the test, reading the master).
		name: "tiocsti", spec: projectSpec{helper: true}, backends: allBackends, weakBackend: bare,
		real: func(t *testing.T, sb *sandbox) {
			legacy := legacyTIOCSTI()
			p := openPty(t)
			before := sb.snapshot(t)
			o := sb.launchWith(t, "entry", sb.entry.Command, sb.entry.Args, launchOpts{env: sb.entry.Env, stdin: p.slave, ctty: true}, tiocstiSteps(sb.backend))
			o.requireDenied(t, sb.backend)
			if legacy == 0 {
				t.Logf("%s: legacy_tiocsti=0: the kernel forbids TIOCSTI without CAP_SYS_ADMIN (it would answer EIO); an EPERM above is the seccomp filter's", sb.backend)
			}
			if got := p.typed(t); got != "" {
				t.Errorf("%s: the user's terminal received %q: the server typed into it", sb.backend, got)
			} else {
				t.Logf("%s: nothing reached the user's terminal (legacy_tiocsti=%d)", sb.backend, legacy)
			}
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			legacy := legacyTIOCSTI()
			p := openPty(t)
			steps := []step{may("ioctl(0, TIOCSTI, 'x')", helperSh("tiocsti", "0"))}
			o := sb.launchBare(t, launchOpts{stdin: p.slave, ctty: true}, steps...)
			got := p.typed(t)
			if legacy == 0 && os.Geteuid() != 0 {
				// Without CAP_SYS_ADMIN the kernel itself answers EIO.
				t.Logf("bare: legacy_tiocsti=0: the kernel forbids TIOCSTI to every unprivileged process (%s); the control cannot succeed here, and the backends' EPERM is their filter's", o.results[steps[0].name].describe())
				return
			}
			o.requireSucceeded(t, "bare", names(steps)...)
			if !strings.Contains(got, "x") {
				t.Errorf("bare: TIOCSTI worked, but the terminal shows %q: the suite cannot see a character typed into it", got)
			} else {
				t.Logf("bare: the user's terminal received %q (legacy_tiocsti=%d, euid %d)", got, legacy, os.Geteuid())
			}
		},
	},
	{
		// The client's session keyring holds a user key (a token a CLI
		// cached there): the server must not find or read it.
		name: "keyring", spec: projectSpec{helper: true}, backends: allBackends, weakBackend: bare,
		real: func(t *testing.T, sb *sandbox) {
			k := plantKey(t)
			before := sb.snapshot(t)
			steps := k.steps()
			o := sb.launchWith(t, "entry", sb.entry.Command, sb.entry.Args, launchOpts{env: sb.entry.Env, thread: k.plant}, steps)
			o.requireDenied(t, sb.backend)
			o.requireNotShown(t, sb.backend, k.payload)
			if r := o.results[steps[2].name]; r.ok {
				// The owner's uid may view a key by default, possessed or
				// not, and the sandbox's uid is the client's on the host.
				t.Logf("%s: KNOWN GAP: /proc/keys shows the description (not the payload) of a key the client's uid may view: %s", sb.backend, strings.TrimPrefix(r.msg, "ok "))
			}
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			k := plantKey(t)
			steps := k.steps()
			sb.launchBare(t, launchOpts{thread: k.plant}, steps...).requireSucceeded(t, "bare", names(steps)...)
		},
	},
	{
		// A careless client leaks descriptors into what it spawns: the
		// home's ~/.aws/credentials at 7 and the home folder itself at 8,
		// both opened without O_CLOEXEC.
		name: "leaked-fd", spec: projectSpec{helper: true}, backends: allBackends, weakBackend: bare,
		real: func(t *testing.T, sb *sandbox) {
			files := leakFiles(t, sb)
			before := sb.snapshot(t)
			o := sb.launchWith(t, "entry", sb.entry.Command, sb.entry.Args, launchOpts{env: sb.entry.Env, extraFiles: files}, leakSteps(true))
			o.requireDenied(t, sb.backend)
			o.requireNotShown(t, sb.backend, credentialsSum(t, sb))
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			files := leakFiles(t, sb)
			steps := leakSteps(false)
			o := sb.launchBare(t, launchOpts{extraFiles: files}, steps...)
			o.requireSucceeded(t, "bare", names(steps[:3])...)
			t.Logf("bare: %s: %s (a file is no directory: where 7 is open, openat through it says so)", steps[3].name, o.results[steps[3].name].describe())
			sum := credentialsSum(t, sb)
			for _, s := range steps[:2] {
				if !strings.Contains(o.results[s.name].msg, sum) {
					t.Errorf("bare: %s: did not read ~/.aws/credentials (want %s): %s", s.name, sum, o.results[s.name].msg)
				}
			}
		},
	},
	{
		// The image declares VOLUME /data, owned by the container's user:
		// the engine would put a writable volume on the host's disk there.
		name: "image-volume", spec: projectSpec{helper: true, volumeImage: true}, backends: []string{"docker", "podman"}, weakBackends: []string{"docker", "podman"},
		real: func(t *testing.T, sb *sandbox) {
			vols := volumes(t, sb.backend)
			before := sb.snapshot(t)
			steps := volumeSteps(true)
			o := sb.launchEntry(t, steps...)
			o.requireDenied(t, sb.backend)
			// --rm takes an anonymous volume away with the container, so
			// the list alone cannot show one: what is mounted at /data
			// must not be writable storage either.
			if m := o.results[steps[1].name]; !m.ok || !strings.Contains(m.msg, "options ro") {
				t.Errorf("%s: /data is not a read-only mount: %s %s", sb.backend, m.describe(), m.msg)
			} else {
				t.Logf("%s: %s", sb.backend, strings.TrimPrefix(m.msg, "ok "))
			}
			if after := volumes(t, sb.backend); !slices.Equal(vols, after) {
				t.Errorf("%s: the volumes changed: %v -> %v", sb.backend, vols, after)
			} else {
				t.Logf("%s: %s volume ls: unchanged (%d volumes)", sb.backend, sb.backend, len(vols))
			}
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The entry's engine args without the launcher (so without the
			// masks), kept after the run (no --rm) so that its anonymous
			// volume can be seen; removed with it afterwards.
			engine, args := sb.weakEngineArgs(t)
			args = slices.DeleteFunc(args, func(a string) bool { return a == "--rm" })
			name := fmt.Sprintf("mcpolicy-escape-volume-%d-%d", os.Getpid(), time.Now().UnixNano())
			args = slices.Insert(args, 1, "--name", name)
			t.Cleanup(func() {
				if out, err := exec.Command(engine, "rm", "-f", "-v", name).CombinedOutput(); err != nil {
					t.Logf("%s rm -v %s: %v\n%s", engine, name, err, out)
				}
			})
			vols := volumes(t, sb.backend)
			steps := volumeSteps(false)
			t.Logf("weakened %s: %s %s", sb.backend, engine, shellQuote(args))
			o := sb.launch(t, "weakened engine args (no launcher, kept)", engine, args, sb.entry.Env, steps)
			o.requireSucceeded(t, sb.backend, steps[0].name)
			t.Logf("weakened %s: %s", sb.backend, strings.TrimPrefix(o.results[steps[1].name].msg, "ok "))
			added := diffList(vols, volumes(t, sb.backend))
			if len(added) == 0 {
				t.Errorf("weakened %s: no volume was created: the suite cannot see one", sb.backend)
			}
			for _, v := range added {
				mp, err := exec.Command(engine, "volume", "inspect", "--format", "{{.Mountpoint}}", v).Output()
				if err != nil {
					t.Errorf("weakened %s: volume inspect %s: %v", sb.backend, v, err)
					continue
				}
				x := filepath.Join(strings.TrimSpace(string(mp)), "x")
				if _, err := os.Stat(x); err != nil {
					t.Errorf("weakened %s: the volume %s does not hold the server's write: %v", sb.backend, v, err)
					continue
				}
				t.Logf("weakened %s: the engine created volume %s on the host's disk; the server's write is %s", sb.backend, v, x)
			}
		},
	},
	{
		// A file the server wrote in a grant is the invoking user's on the
		// host (root's when the client runs as root): a setuid bit on it
		// would run the server's code as them.
		name: "setuid", spec: projectSpec{helper: true}, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			o := sb.launchEntry(t, setuidSteps(sb, !isEngine(sb.backend))...)
			o.requireDenied(t, sb.backend)
			for _, c := range setIDCopies {
				if _, err := os.Lstat(filepath.Join(sb.root, sb.ranDir, c.name)); err != nil {
					t.Errorf("%s: the copy %s did not reach the host (%v): the chmod's answer proves nothing", sb.backend, c.name, err)
				}
			}
			for _, f := range setIDFiles(t, sb.root) {
				switch {
				case f.uid == 0:
					t.Errorf("%s: a setuid/setgid file owned by root is on the host: %s", sb.backend, f)
				case isEngine(sb.backend):
					t.Logf("%s: KNOWN GAP: %s (the engine's default seccomp profile allows chmod; the file is the container user's, and the launcher's containers run with no-new-privileges)", sb.backend, f)
				default:
					t.Errorf("%s: a setuid/setgid file is on the host: %s", sb.backend, f)
				}
			}
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// bwrap without the launcher: no seccomp filter.
			steps := setuidSteps(sb, false)
			sb.launchWeakBwrap(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
			found := setIDFiles(t, sb.root)
			if len(found) != len(setIDCopies) {
				t.Errorf("weakened bwrap: %d setuid/setgid file(s) on the host, want %d: the suite cannot see them", len(found), len(setIDCopies))
			}
			for _, f := range found {
				t.Logf("weakened bwrap: on the host: %s", f)
				os.Remove(f.path)
			}
		},
	},
}

// helperSh is the payload's command running the helper.
func helperSh(args ...string) string { return "./" + helperName + " " + shellQuote(args) }

func randHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// requireNotShown fails when value appears in what the payload printed.
func (o outcome) requireNotShown(t *testing.T, backend, value string) {
	t.Helper()
	if strings.Contains(o.stdout, value) || strings.Contains(o.stderr, value) {
		t.Errorf("%s via %s: the planted value %q appears in the server's output", backend, o.how, value)
	}
}

// Unix sockets.

type plantedSocket struct {
	path     string
	accepted atomic.Int32
}

type plantedSockets struct {
	tmp, run *plantedSocket // run is nil where /run is not writable (outside CI)
}

// plantSockets listens on a unix socket in the host's /tmp and on one at
// /run (else $XDG_RUNTIME_DIR, which is below /run too), each closed and
// removed when the test ends.
func plantSockets(t *testing.T) *plantedSockets {
	t.Helper()
	name := fmt.Sprintf("mcpolicy-escape-%s.sock", randHex(t, 6))
	ps := &plantedSockets{}
	var err error
	if ps.tmp, err = listenUnix(t, filepath.Join("/tmp", name)); err != nil {
		t.Fatal(err)
	}
	dirs := []string{"/run"}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && strings.HasPrefix(d, "/run/") {
		dirs = append(dirs, d)
	}
	var errs []error
	for _, d := range dirs {
		if ps.run, err = listenUnix(t, filepath.Join(d, name)); err == nil {
			break
		}
		errs = append(errs, err)
	}
	if ps.run == nil {
		if ci {
			t.Fatalf("CI=true, so not skipping: no stand-in socket below /run: %v", errors.Join(errs...))
		}
		t.Logf("no stand-in socket below /run (%v): only the /tmp one is tried", errors.Join(errs...))
	}
	return ps
}

func listenUnix(t *testing.T, path string) (*plantedSocket, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// Whoever reaches it may connect: a refusal must be the confinement's.
	os.Chmod(path, 0o777)
	ps := &plantedSocket{path: path}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ps.accepted.Add(1)
			c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); os.Remove(path) })
	return ps, nil
}

func (ps *plantedSockets) list() []*plantedSocket {
	out := []*plantedSocket{ps.tmp}
	if ps.run != nil {
		out = append(out, ps.run)
	}
	return out
}

// steps connect to each socket. Under every backend the socket must be
// absent (ENOENT), or refused.
func (ps *plantedSockets) steps() []step {
	var out []step
	for _, s := range ps.list() {
		out = append(out, denyWith("connect to the host's unix socket "+s.path, helperSh("connect", s.path), "ENOENT", "ECONNREFUSED", "EACCES"))
	}
	return out
}

// requireAccepted checks what the listeners saw.
func (ps *plantedSockets) requireAccepted(t *testing.T, who string, want bool) {
	t.Helper()
	// The kernel completes a unix connect while the connection waits in
	// the backlog: the accept loop may not have counted it yet (CI saw a
	// weakened control's connect succeed and the count still 0). Wait for
	// it, or a moment for one that should not come.
	if !want {
		time.Sleep(200 * time.Millisecond)
	}
	for _, s := range ps.list() {
		for deadline := time.Now().Add(5 * time.Second); want && s.accepted.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		n := s.accepted.Load()
		switch {
		case want && n == 0:
			t.Errorf("%s: the listener at %s accepted nothing: the suite cannot see a connection", who, s.path)
		case !want && n > 0:
			t.Errorf("%s: the listener at %s accepted %d connection(s) from the server", who, s.path, n)
		case want:
			t.Logf("%s: the listener at %s accepted %d connection(s)", who, s.path, n)
		}
	}
}

// The environment.

const plantedVarName = "MCPOLICY_ESCAPE_SECRET"

func plantedVar(t *testing.T) (string, string) {
	return plantedVarName, "planted-env-" + randHex(t, 8)
}

func findVar(name, value string) []step {
	return []step{denyWith("find the client's "+name+" in its own environment or any /proc/PID/environ", helperSh("environ", name, value), "ENOENT")}
}

// The terminal.

// legacyTIOCSTI is /proc/sys/dev/tty/legacy_tiocsti: 0 when the kernel
// refuses TIOCSTI to every process without CAP_SYS_ADMIN; 1 where the
// file is missing (kernels before 6.2 always allow it).
func legacyTIOCSTI() int {
	b, err := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti")
	if err != nil {
		return 1
	}
	if strings.TrimSpace(string(b)) == "0" {
		return 0
	}
	return 1
}

type pty struct {
	master int
	slave  *os.File
}

// openPty opens a new pty pair: the test holds the master (the user's
// terminal), the slave goes to the spawned command.
func openPty(t *testing.T) *pty {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if ci {
			t.Fatalf("CI=true, so not skipping: /dev/ptmx: %v", err)
		}
		t.Skipf("no pty: /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { unix.Close(m) })
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(m, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty's slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return &pty{master: m, slave: s}
}

// typed is what reached the terminal's input: the echo a pushed character
// leaves on the master (ECHO is on), read for a short while.
func (p *pty) typed(t *testing.T) string {
	t.Helper()
	return p.read(t, 0, 300*time.Millisecond)
}

// tiocstiSteps push 'x' into the terminal it was given as stdin, and into
// /dev/tty. Under bwrap and Landlock the answer must be the seccomp
// filter's EPERM (which is also a new session's); the engines give the
// container a pipe as stdin (ENOTTY) and no controlling terminal.
func tiocstiSteps(backend string) []step {
	want := []string{"EPERM"}
	if isEngine(backend) {
		want = []string{"EPERM", "EIO", "ENOTTY"}
	}
	return []step{
		denyWith("ioctl(0, TIOCSTI, 'x') on the terminal it was given as stdin", helperSh("tiocsti", "0"), want...),
		denyWith("ioctl(TIOCSTI, 'x') on /dev/tty", helperSh("tiocsti", "3")+" 3</dev/tty", "ENXIO", "ENOENT", "EACCES", "EPERM", "EIO", "ENOTTY"),
	}
}

// The session keyring.

// plantedKey is two user keys in the client's session keyring: desc with
// the permissions keyctl and add_key give by default (the possessor may do
// anything, the owner's uid may view it), private for the possessor only.
type plantedKey struct {
	desc, private, payload string
}

// plantKey checks that the kernel has keyrings (a missing one is a skip,
// or a failure under CI) and names a key; plant adds it.
func plantKey(t *testing.T) *plantedKey {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		_, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
		if errno != 0 {
			errc <- errno
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		if ci {
			t.Fatalf("CI=true, so not skipping: keyctl(JOIN_SESSION_KEYRING): %v", err)
		}
		t.Skipf("no session keyring here: keyctl(JOIN_SESSION_KEYRING): %v", err)
	}
	id := randHex(t, 6)
	return &plantedKey{desc: "mcpolicy-escape-" + id, private: "mcpolicy-escape-private-" + id, payload: "planted-keyring-secret-" + randHex(t, 8)}
}

// plant runs on the thread that spawns the entry: it joins a new session
// keyring (so nothing outside this test sees the key) and adds the user
// key to it, as a tool of the client's session would have.
func (k *plantedKey) plant() error {
	if _, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 {
		return fmt.Errorf("keyctl(JOIN_SESSION_KEYRING): %w", errno)
	}
	if _, err := unix.AddKey("user", k.desc, []byte(k.payload), unix.KEY_SPEC_SESSION_KEYRING); err != nil {
		return fmt.Errorf("add_key user %s @s: %w", k.desc, err)
	}
	id, err := unix.AddKey("user", k.private, []byte(k.payload), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		return fmt.Errorf("add_key user %s @s: %w", k.private, err)
	}
	if err := unix.KeyctlSetperm(id, keyPosAll); err != nil {
		return fmt.Errorf("keyctl setperm %s: %w", k.private, err)
	}
	return nil
}

// keyPosAll is KEY_POS_ALL: every right for the possessor, none for the
// owner's uid, its group or others.
const keyPosAll = 0x3f000000

func (k *plantedKey) steps() []step {
	return []step{
		denyWith("keyctl search @s user "+k.desc+", then read it", helperSh("keyring", k.desc), "ENOKEY", "ENOSYS", "EPERM", "EACCES"),
		// /proc/keys lists what the reader may view, and only the
		// possessor may view this one: a listing is possession of the
		// client's session keyring, whatever keyctl answers.
		denyWith("find the possessor-only key in /proc/keys", helperSh("prockeys", k.private), "ENOKEY", "ENOENT", "EACCES"),
		may("find the default-permission key in /proc/keys", helperSh("prockeys", k.desc)),
	}
}

// Leaked descriptors.

// leakFiles are the descriptors a careless client leaks, as ExtraFiles:
// ~/.aws/credentials at 7 and the home folder at 8, opened without
// O_CLOEXEC.
func leakFiles(t *testing.T, sb *sandbox) []*os.File {
	t.Helper()
	cred, err := unix.Open(filepath.Join(sb.home, ".aws", "credentials"), unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	home, err := unix.Open(sb.home, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		unix.Close(cred)
		t.Fatal(err)
	}
	f7, f8 := os.NewFile(uintptr(cred), "credentials"), os.NewFile(uintptr(home), "home")
	t.Cleanup(func() { f7.Close(); f8.Close() })
	return []*os.File{nil, nil, nil, nil, f7, f8} // 3..6 closed, 7, 8
}

func leakSteps(confined bool) []step {
	denied := func(name, sh string, errnos ...string) step {
		if confined {
			return denyWith(name, sh, errnos...)
		}
		return may(name, sh)
	}
	return []step{
		denied("read(7): ~/.aws/credentials, leaked by the client", helperSh("readfd", "7"), "EBADF"),
		denied("open /proc/self/fd/7", helperSh("procfd", "7"), "ENOENT"),
		denied("openat(8, .aws/credentials) through the leaked home folder", helperSh("openat", "8", ".aws/credentials"), "EBADF"),
		// ENOTDIR where 7 is open: only EBADF says it is not.
		denied("openat(7, ../.ssh/id_ed25519) through the leaked file", helperSh("openat", "7", "../.ssh/id_ed25519"), "EBADF"),
	}
}

// credentialsSum is how the helper names what it read of the planted
// credentials.
func credentialsSum(t *testing.T, sb *sandbox) string {
	b, err := os.ReadFile(filepath.Join(sb.home, ".aws", "credentials"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Image volumes.

func volumeSteps(confined bool) []step {
	write := may("write /data/x (the image's VOLUME)", "echo x > /data/x")
	if confined {
		write = denyWith(write.name, write.sh, "EROFS")
	}
	return []step{write, may("what is mounted at /data", helperSh("mount", "/data"))}
}

// volumes lists the engine's anonymous volumes (64 hex digits: what an
// image's VOLUME makes on the host's disk). Named ones are left out: other
// test packages running at the same time (kube play's emptyDirs under
// podman 4) create and remove theirs.
func volumes(t *testing.T, engine string) []string {
	t.Helper()
	// Other packages' tests (verify's kubernetes differential plays Pods
	// with named volumes) create and remove volumes meanwhile, and podman
	// fails a listing that races a removal (exit 125, "no such volume"):
	// a listing is tried again.
	var out []byte
	var err error
	for try := 0; try < 5; try++ {
		var stderr strings.Builder
		cmd := exec.Command(engine, "volume", "ls", "-q")
		cmd.Stderr = &stderr
		if out, err = cmd.Output(); err == nil {
			break
		}
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("%s volume ls: %v", engine, err)
	}
	var v []string
	for _, name := range strings.Fields(string(out)) {
		if anonymousVolume.MatchString(name) {
			v = append(v, name)
		}
	}
	slices.Sort(v)
	return v
}

var anonymousVolume = regexp.MustCompile(`^[0-9a-f]{64}$`)

func diffList(before, after []string) []string {
	var added []string
	for _, a := range after {
		if !slices.Contains(before, a) {
			added = append(added, a)
		}
	}
	return added
}

// Setuid files.

// setIDCopies are the helper's copies the setuid scenario writes in the
// read-write grant (relative to it), with the mode each gets.
var setIDCopies = []struct{ name, mode, what string }{
	{"suid-helper", "4755", "setuid"},
	{"sgid-helper", "2755", "setgid"},
}

// setuidSteps copy the helper into the read-write grant twice and set the
// setuid bit on one, the setgid bit on the other; denied, the chmods must
// answer the filter's EPERM.
func setuidSteps(sb *sandbox, denied bool) []step {
	var steps []step
	for _, c := range setIDCopies {
		dst := sb.ranDir + "/" + c.name
		chmod := may("chmod "+c.mode+" "+dst+" ("+c.what+")", "chmod "+c.mode+" "+dst)
		if denied {
			chmod = denyWith(chmod.name, chmod.sh, "EPERM")
		}
		steps = append(steps, may("copy the helper to "+dst, "cp "+helperName+" "+dst), chmod)
	}
	return steps
}

type setIDFile struct {
	path     string
	mode     fs.FileMode
	uid, gid uint32
}

func (f setIDFile) String() string {
	return fmt.Sprintf("%s: %v, owner %d:%d", f.path, f.mode, f.uid, f.gid)
}

// setIDFiles lists the files below root with the setuid or setgid bit.
func setIDFiles(t *testing.T, root string) []setIDFile {
	t.Helper()
	var out []setIDFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 && !info.IsDir() {
			st := info.Sys().(*syscall.Stat_t)
			out = append(out, setIDFile{path: p, mode: info.Mode(), uid: st.Uid, gid: st.Gid})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
