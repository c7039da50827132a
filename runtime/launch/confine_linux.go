package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
	"github.com/mcpolicy/mcpolicy/runtime/seccomp"
)

const (
	capSysAdmin = unix.CAP_SYS_ADMIN
	capSetgid   = unix.CAP_SETGID
	capSetpcap  = unix.CAP_SETPCAP
)

// Securebits from linux/securebits.h (x/sys/unix does not export them).
const (
	secbitNoroot              = 1 << 0
	secbitNorootLocked        = 1 << 1
	secbitNoSetuidFixup       = 1 << 2
	secbitNoSetuidFixupLocked = 1 << 3
)

// configs are go-landlock's presets by ABI: the highest one the kernel has
// is used, so every right the kernel can restrict is restricted.
var configs = map[int]landlock.Config{3: landlock.V3, 4: landlock.V4, 5: landlock.V5, 6: landlock.V6, 7: landlock.V7}

// runMode is how confineAndRun starts the server once confined.
type runMode int

const (
	// inPlace: no namespaces. A new session, then exec in place; when
	// setsid is refused (the launcher leads its process group), fork the
	// server into a new session and wait.
	inPlace runMode = iota
	// inStage2: stage 2, already in a new session (stage 1 cloned it so)
	// and the init of a new PID namespace: confine a thread of its own,
	// fork the server from it and return its pid (confinedThread).
	inStage2
	// unhardened: tests only, the wiring before issue #14 (exec in place,
	// the caller's session and session keyring).
	unhardened
)

// confineAndRun applies the spec to this thread and starts the server. It
// returns the server's exit status when it forked it and waited for it
// (inPlace), its pid in stage 2 (inStage2), and otherwise only on failure.
// The steps keep their order: the credentials change while the launcher
// still holds the privileges that takes, the Landlock domain and
// no_new_privs come next, and the seccomp filter last (it needs
// no_new_privs).
func confineAndRun(sp *spec, verbose io.Writer, mode runMode) (int, error) {
	// Capabilities and credentials are per thread: do everything, the fork
	// or exec included, on this one.
	runtime.LockOSThread()
	rs := sp.Ruleset

	fork, session, err := startSession(mode)
	if err != nil {
		return 0, err
	}
	dropped := sp.DropGroups
	if os.Getuid() == 0 && sp.NoNetNS { // a root launcher without namespaces: become the plan's user
		switched, err := switchToUser(rs.User)
		if err != nil {
			return 0, err
		}
		if switched {
			dropped = true
		}
	}
	// A new session keyring, joined as the server's user (it owns it).
	keyring := "the caller's (unhardened test wiring)"
	if mode != unhardened {
		if keyring, err = newSessionKeyring(); err != nil {
			return 0, err
		}
	}
	caps, err := dropCapabilities()
	if err != nil {
		return 0, err
	}

	// /proc is granted only where stage 2 mounted the server's own: never
	// the host's (without namespaces CheckRuleset refused the plan; the
	// unhardened test wiring has none).
	rules, err := landlockRules(rs, mode == inStage2 && rs.Proc)
	if err != nil {
		return 0, err
	}
	abi := min(sp.ABI, 7)
	cfg, ok := configs[abi]
	if !ok {
		return 0, fmt.Errorf("no Landlock configuration for ABI %d", sp.ABI)
	}
	// No net rule is added: with ABI >= 4 every TCP bind and connect is
	// denied. Scoping (ABI >= 6) comes with the preset.
	if sp.Probe != nil {
		return 0, runProbes(cfg, rules, sp) // exits when the probes ran
	}
	if err := restrictThread(cfg, rules); err != nil {
		return 0, err
	}
	serverUmask()
	filter, err := loadFilter(sp, mode)
	if err != nil {
		return 0, err
	}
	say(verbose, "mcpolicy exec: %s: Landlock ABI %d enforced; network: %s; read-only %d, read-write %d hierarchies",
		rs.Server, abi, networkSummary(sp), len(rs.Baseline)+len(rs.ReadOnly), len(rs.ReadWrite))
	say(verbose, "mcpolicy exec: %s: session: %s; session keyring: %s; seccomp filter: %s", rs.Server, session, keyring, filter)
	say(verbose, "mcpolicy exec: %s: supplementary groups: %s", rs.Server, groupsSummary(dropped, !sp.NoNetNS))
	say(verbose, "mcpolicy exec: %s: capabilities: %s", rs.Server, caps)

	if rs.Workdir != "" {
		if err := os.Chdir(rs.Workdir); err != nil {
			return 0, fmt.Errorf("workdir: %w", err)
		}
	}
	path, err := lookPath(rs.Command[0], sp.Env)
	if err != nil {
		return 0, err
	}
	if mode == inStage2 {
		return startServer(path, rs.Command, sp.Env, false)
	}
	if fork {
		return forkServer(path, rs.Command, sp.Env)
	}
	return 0, fmt.Errorf("exec %s: %w", path, syscall.Exec(path, rs.Command, sp.Env))
}

// startSession puts the launcher in the session the server gets and says
// which (for --verbose). fork is set when the server must be forked into
// a new session of its own: setsid is refused to a process group leader.
func startSession(mode runMode) (fork bool, session string, err error) {
	session = "new (no controlling terminal)"
	switch mode {
	case inStage2:
		session = "new (no controlling terminal), in a new PID namespace whose init (the launcher: undumpable, outside the server's Landlock domain) ends every process in it when the server or the launcher ends"
	case inPlace:
		ok, err := detachTerminal()
		if err != nil {
			return false, "", err
		}
		if !ok {
			fork = true
			session = "the launcher leads its process group, so the server is forked into a new one (no controlling terminal)"
		}
	case unhardened:
		session = "the caller's (unhardened test wiring)"
	}
	return fork, session, nil
}

// switchToUser makes a root launcher without namespaces the plan's user,
// and reports whether it did (the supplementary groups are then gone).
// A plan whose user is root stays root.
func switchToUser(user string) (bool, error) {
	uid, gid, err := parseUser(user)
	if err != nil {
		return false, err
	}
	if uid == 0 {
		return false, nil
	}
	// While still root: empty the bounding set and lock the securebits,
	// which need CAP_SETPCAP — setuid would take it away. NO_SETUID_FIXUP
	// keeps setuid from touching the other sets, which dropCapabilities
	// empties afterwards.
	if _, err := limitCapabilities(); err != nil {
		return false, err
	}
	if err := GiveStdio(uid, os.Stdin, os.Stdout, os.Stderr); err != nil {
		return false, err
	}
	if err := syscall.Setgroups(nil); err != nil {
		return false, fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return false, fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return false, fmt.Errorf("setuid: %w", err)
	}
	return true, nil
}

// landlockRules are the ruleset's hierarchies as Landlock rules: the
// baseline and devices only where they exist on this machine, every grant
// or an error; and read on /proc when proc says the root holds the
// server's own.
func landlockRules(rs *artefact.Ruleset, proc bool) ([]landlock.Rule, error) {
	var rules []landlock.Rule
	for _, g := range []struct {
		ro, ignoreMissing bool
		paths             []string
	}{
		{true, true, rs.Baseline},
		{true, false, rs.ReadOnly},
		{false, false, rs.ReadWrite},
		{true, true, rs.DevicesRO},
		{false, true, rs.DevicesRW},
	} {
		for _, p := range g.paths {
			fi, err := os.Stat(p)
			if err != nil {
				if g.ignoreMissing {
					continue
				}
				return nil, fmt.Errorf("granted path %s: %w", p, err)
			}
			rules = append(rules, fsRule(p, fi.IsDir(), g.ro))
		}
	}
	if proc {
		// The procfs buildRoot mounted: read files and list folders, no
		// more (a magic link such as /proc/self/exe leads to its target,
		// which the target's own rule decides).
		rules = append(rules, landlock.PathAccess(ll.AccessFSReadFile|ll.AccessFSReadDir, "/proc"))
	}
	return rules, nil
}

// fsRule is the Landlock rule of one path: a directory's rights cover its
// hierarchy, a file's only itself.
func fsRule(p string, dir, ro bool) landlock.FSRule {
	switch {
	case dir && ro:
		return landlock.RODirs(p)
	case dir:
		return landlock.RWDirs(p)
	case ro:
		return landlock.ROFiles(p)
	}
	return landlock.RWFiles(p)
}

// runProbes runs prove's attempts in place of the server, confined as it
// would be, prints their results and exits 0; it returns only an error.
// The probe runs here, in Go, on any thread: every thread is restricted.
func runProbes(cfg landlock.Config, rules []landlock.Rule, sp *spec) error {
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("applying the Landlock ruleset: %w", err)
	}
	if sp.Ruleset.Workdir != "" {
		os.Chdir(sp.Ruleset.Workdir)
	}
	var results []probe.Result
	for _, a := range sp.Probe {
		results = append(results, probe.Run(a))
	}
	if err := probe.Encode(os.Stdout, results); err != nil {
		return err
	}
	os.Exit(0)
	return nil
}

// restrictThread enters the Landlock domain, with no_new_privs, on this
// thread only: it is the one that execs, and execve keeps the calling
// thread's Landlock domain and no_new_privs for the whole new program.
// (go-landlock's Restrict would also stop every other runtime thread,
// which costs milliseconds and protects nothing here.)
func restrictThread(cfg landlock.Config, rules []landlock.Rule) error {
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	syscall.Close(fd)
	return nil
}

// loadFilter loads the syscall filter, last, on this thread (after
// PR_SET_NO_NEW_PRIVS): the server inherits it across the fork or exec.
// Without namespaces the host's named unix sockets cannot be hidden, so
// unix sockets are refused — unless the policy accepted
// landlock-unix-sockets. It says what it loaded, for --verbose.
func loadFilter(sp *spec, mode runMode) (string, error) {
	if mode == unhardened {
		return "not loaded (unhardened test wiring)", nil
	}
	deny := sp.NoNetNS && !sp.Ruleset.Accepts(artefact.AcceptUnixSockets)
	if err := seccomp.Load(seccomp.Options{DenyUnixSockets: deny, NoNamespaces: sp.NoNetNS}); err != nil {
		return "", fmt.Errorf("loading the seccomp filter: %w", err)
	}
	if deny {
		return "loaded, unix sockets refused", nil
	}
	return "loaded", nil
}

func networkSummary(sp *spec) string {
	if sp.NoNetNS {
		if sp.ABI >= 4 {
			return "TCP denied by Landlock (no network namespace)"
		}
		return "NOT restricted"
	}
	return "empty network namespace"
}

// capLast is the kernel's highest capability number, read once: the loops
// over every capability asked for it at each step, and inside the minimal
// root, which has no /proc, each read failed over to the number this
// build knows (Stage2 reads it before the root is built).
var capLast = sync.OnceValue(func() int {
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 && n < 64 {
			return n
		}
	}
	return unix.CAP_LAST_CAP
})

// hasCap reports whether capability c is in this thread's effective set.
func hasCap(c int) (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, fmt.Errorf("reading capabilities: %w", err)
	}
	return data[c/32].Effective&(1<<(c%32)) != 0, nil
}

// limitCapabilities clears the ambient set and, where this thread holds
// CAP_SETPCAP, empties the bounding set and locks root out with the
// securebits (noroot, no setuid fixup, both locked). It reports whether it
// could: without CAP_SETPCAP neither is allowed. Holding it, any failure
// is an error.
func limitCapabilities() (bool, error) {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return false, fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	setpcap, err := hasCap(capSetpcap)
	if err != nil || !setpcap {
		return false, err
	}
	for c := 0; c <= capLast(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return false, fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	secure := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(secure), 0, 0, 0); err != nil {
		return false, fmt.Errorf("setting securebits: %w", err)
	}
	return true, nil
}

// dropCapabilities empties the bounding, ambient, effective, permitted and
// inheritable sets and locks root out of regaining them on exec, then
// reads every set back: it fails unless they are empty. It says what it
// did for -v.
//
// The one thing the kernel does not allow: without CAP_SETPCAP (an
// unprivileged launcher with no user namespace, where it holds no
// capability at all) neither the bounding set nor the securebits can
// change. The bounding set then stays the invoker's, with every other set
// empty; that is inert — it only caps what an exec could gain, and
// no_new_privs (set before the server starts) lets no exec gain anything,
// setuid-root and file capabilities included. A process whose uid is 0
// with the bounding set kept is refused.
func dropCapabilities() (string, error) {
	limited, err := limitCapabilities()
	if err != nil {
		return "", err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return "", fmt.Errorf("dropping capabilities: %w", err)
	}
	// Read everything back: fail closed on whatever is left.
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return "", fmt.Errorf("reading capabilities: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return "", fmt.Errorf("capabilities left after dropping them all: %+v", data)
		}
	}
	bounding := 0
	for c := 0; c <= capLast(); c++ {
		if in, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); err != nil || in != 0 {
			return "", fmt.Errorf("ambient capability %d left after clearing the set (%v)", c, err)
		}
		in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
		if err != nil {
			return "", fmt.Errorf("reading the bounding set: %w", err)
		}
		bounding += in
	}
	switch {
	case bounding == 0:
		return "every set emptied (bounding, permitted, effective, inheritable, ambient); securebits lock root out", nil
	case limited:
		return "", fmt.Errorf("%d capabilities left in the bounding set after dropping them all", bounding)
	case os.Getuid() == 0 || os.Geteuid() == 0:
		return "", errors.New("running as root without CAP_SETPCAP: the bounding set cannot be emptied nor root locked out; refusing to start the server")
	}
	return fmt.Sprintf("none held; the bounding set cannot be emptied without CAP_SETPCAP, which the launcher lacks (unprivileged, no user namespace): its %d capabilities stay the invoker's, inert — no_new_privs lets no exec gain one", bounding), nil
}

// scratchDir makes the server's scratch where no tmpfs can be mounted
// (no namespaces; landlock-scratch-dir accepted): a folder of the server's
// user — the plan's uid and gid when a root launcher becomes it, else the
// invoker's — mode 0700, in a fresh folder of the launcher's under TMPDIR
// (mode 0711: the server reaches its scratch, but cannot rename or replace
// it). Every step after the first goes through a descriptor opened without
// following a symlink, and the path must still lead to what was made.
func scratchDir(user string) (string, error) {
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		var err error
		if uid, gid, err = parseUser(user); err != nil {
			return "", err
		}
	}
	parent, err := os.MkdirTemp("", "mcpolicy-scratch-")
	if err != nil {
		return "", fmt.Errorf("making the scratch folder: %w", err)
	}
	dir := filepath.Join(parent, "scratch")
	fail := func(step string, err error) (string, error) {
		os.RemoveAll(parent)
		return "", fmt.Errorf("making the scratch folder %s: %s: %w", dir, step, err)
	}
	const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	pfd, err := unix.Open(parent, dirFlags, 0)
	if err != nil {
		return fail("open", err)
	}
	defer unix.Close(pfd)
	var pst unix.Stat_t
	if err := unix.Fstat(pfd, &pst); err != nil {
		return fail("fstat", err)
	}
	if int(pst.Uid) != os.Geteuid() {
		return fail("check", fmt.Errorf("%s belongs to uid %d, not to the launcher", parent, pst.Uid))
	}
	if err := unix.Fchmod(pfd, 0o711); err != nil {
		return fail("chmod", err)
	}
	if err := unix.Mkdirat(pfd, "scratch", 0o700); err != nil {
		return fail("mkdir", err)
	}
	fd, err := unix.Openat(pfd, "scratch", dirFlags, 0)
	if err != nil {
		return fail("open", err)
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return fail(fmt.Sprintf("chown %d:%d", uid, gid), err)
	}
	if err := unix.Fchmod(fd, 0o700); err != nil { // whatever the umask took
		return fail("chmod", err)
	}
	var made, named unix.Stat_t
	if err := unix.Fstat(fd, &made); err != nil {
		return fail("fstat", err)
	}
	if err := unix.Lstat(dir, &named); err != nil || named.Dev != made.Dev || named.Ino != made.Ino {
		return fail("check", fmt.Errorf("the path no longer leads to the folder made (%v)", err))
	}
	return dir, nil
}

// scratchEnv makes dir the server's HOME and TMPDIR.
func scratchEnv(env []string, dir string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "TMPDIR=") {
			out = append(out, kv)
		}
	}
	return append(out, "HOME="+dir, "TMPDIR="+dir)
}

func mountScratch(target string, size int64) error {
	opts := fmt.Sprintf("size=%d,mode=1777", size)
	if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mounting the scratch tmpfs at %s (it must exist on the host: Landlock runs with host paths): %w", target, err)
	}
	return nil
}

func parseUser(s string) (int, int, error) {
	u, g, _ := strings.Cut(s, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("invalid user %q", s)
	}
	return uid, gid, nil
}

// confinedThread starts the thread the server will be forked from, while
// stage 2 still holds CAP_SETPCAP: it empties its own bounding set (the
// one the server inherits), then waits for start. start confines it,
// forks the server from it and returns the server's pid; the thread then
// ends, and its confinement with it: capabilities, credentials,
// no_new_privs, the Landlock domain and the seccomp filter are per
// thread, and only the server keeps them. Stage 2, resident as the init
// of the server's PID namespace, is so outside the server's Landlock
// domain: the server can neither ptrace a thread of it nor (Landlock ABI
// 6) signal it. Forked from stage 2's main thread instead, the server
// shared that thread's domain, and could have ptraced it (were the
// filter's ptrace rule gone) into running code on stage 2's other
// threads, which kept the capabilities that built the root (a red team
// remounted a read-only grant read-write so). Call start once.
func confinedThread() (start func(sp *spec, verbose io.Writer) (int, error), err error) {
	type started struct {
		pid int
		err error
	}
	ready := make(chan error, 1)
	work := make(chan func() (int, error))
	done := make(chan started, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, and what it
		// took on with it.
		runtime.LockOSThread()
		// One prctl per capability on this thread alone; on every thread
		// (dropAllThreads) each was a stop of the world.
		if _, err := limitCapabilities(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		f := <-work
		pid, err := f()
		done <- started{pid, err}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return func(sp *spec, verbose io.Writer) (int, error) {
		work <- func() (int, error) { return confineAndRun(sp, verbose, inStage2) }
		r := <-done
		return r.pid, r.err
	}, nil
}

// dropAllThreads empties the capability sets of every thread (stage 2's,
// once the root is built: what built it is of no more use to a resident
// init), locks root out (securebits) and sets no_new_privs on each. (Not
// the session keyring: joining a new one returns each thread a different
// serial, which AllThreadsSyscall takes for a corrupted runtime; stage 2
// is undumpable instead.) The bounding set is emptied on the thread the
// server is forked from (confinedThread), which the server inherits: on
// the other threads, with nothing permitted, no_new_privs and root locked
// out, no exec can gain a capability it bounds, and a new user namespace
// would start with a full one whatever it was; emptying it there took a
// stop of the world per capability, most of stage 2's time. A failure on
// one thread after the first ends the process
// (syscall.AllThreadsSyscall): fail closed.
//
// A cgo build cannot do this (AllThreadsSyscall is not supported there,
// and psx, which can, reads /proc, which the minimal root lacks): it
// returns errAllThreadsUnsupported, and stage 2's threads keep what built
// the root. They are outside the server's Landlock domain all the same,
// which denies the server ptrace into them and (ABI 6) signals to them,
// as the seccomp filter denies ptrace: two layers, where a static build
// (`make install`, the README's) has three.
func dropAllThreads() error {
	all := func(what string, trap, a1, a2, a3 uintptr) error {
		if _, _, e := syscall.AllThreadsSyscall6(trap, a1, a2, a3, 0, 0, 0); e != 0 {
			if e == syscall.ENOTSUP {
				return errAllThreadsUnsupported
			}
			return fmt.Errorf("%s: %w", what, e)
		}
		return nil
	}
	if err := all("clearing ambient capabilities", syscall.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); err != nil {
		return err
	}
	if setpcap, err := hasCap(capSetpcap); err == nil && setpcap {
		secure := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked
		if err := all("setting securebits", syscall.SYS_PRCTL, unix.PR_SET_SECUREBITS, uintptr(secure), 0); err != nil {
			return err
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := all("dropping capabilities", syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); err != nil {
		return err
	}
	return all("prctl(PR_SET_NO_NEW_PRIVS)", syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0)
}

// errAllThreadsUnsupported: this build (cgo) cannot change every thread's
// credentials at once; see dropAllThreads.
var errAllThreadsUnsupported = errors.New("a cgo build cannot drop the capabilities of every thread")
