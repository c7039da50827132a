package launch

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/mcpolicy/mcpolicy/probe"
	"github.com/mcpolicy/mcpolicy/seccomp"
	"golang.org/x/sys/unix"
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
	// inStage2: stage 2, already in a new session (stage 1 cloned it so):
	// exec in place.
	inStage2
	// unhardened: tests only, the wiring before issue #14 (exec in place,
	// the caller's session and session keyring).
	unhardened
)

// confineAndRun applies the spec to this thread and starts the server. It
// returns the server's exit status when it forked it, and otherwise only
// on failure.
func confineAndRun(sp *spec, verbose io.Writer, mode runMode) (int, error) {
	// Capabilities and credentials are per thread: do everything, the fork
	// or exec included, on this one.
	runtime.LockOSThread()
	rs := sp.Ruleset

	fork := false
	session := "new (no controlling terminal)"
	switch mode {
	case inPlace:
		ok, err := detachTerminal()
		if err != nil {
			return 0, err
		}
		if !ok {
			fork = true
			session = "the launcher leads its process group, so the server is forked into a new one (no controlling terminal)"
		}
	case unhardened:
		session = "the caller's (unhardened test wiring)"
	}
	dropped := sp.DropGroups
	if os.Getuid() == 0 && sp.NoNetNS { // a root launcher without namespaces: become the plan's user
		uid, gid, err := parseUser(rs.User)
		if err != nil {
			return 0, err
		}
		if uid != 0 {
			if err := syscall.Setgroups(nil); err != nil {
				return 0, fmt.Errorf("setgroups: %w", err)
			}
			if err := syscall.Setgid(gid); err != nil {
				return 0, fmt.Errorf("setgid: %w", err)
			}
			if err := syscall.Setuid(uid); err != nil {
				return 0, fmt.Errorf("setuid: %w", err)
			}
			dropped = true
		}
	}
	// A new session keyring, joined as the server's user (it owns it).
	keyring := "the caller's (unhardened test wiring)"
	if mode != unhardened {
		var err error
		if keyring, err = newSessionKeyring(); err != nil {
			return 0, err
		}
	}
	if err := dropCapabilities(); err != nil {
		return 0, err
	}

	var rules []landlock.Rule
	add := func(ro bool, ignoreMissing bool, paths ...string) error {
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				if ignoreMissing {
					continue
				}
				return fmt.Errorf("granted path %s: %w", p, err)
			}
			var r landlock.FSRule
			switch {
			case fi.IsDir() && ro:
				r = landlock.RODirs(p)
			case fi.IsDir():
				r = landlock.RWDirs(p)
			case ro:
				r = landlock.ROFiles(p)
			default:
				r = landlock.RWFiles(p)
			}
			rules = append(rules, r)
		}
		return nil
	}
	if err := add(true, true, rs.Baseline...); err != nil {
		return 0, err
	}
	if err := add(true, false, rs.ReadOnly...); err != nil {
		return 0, err
	}
	if err := add(false, false, rs.ReadWrite...); err != nil {
		return 0, err
	}
	if err := add(true, true, rs.DevicesRO...); err != nil {
		return 0, err
	}
	if err := add(false, true, rs.DevicesRW...); err != nil {
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
		// The probe runs here, in Go, on any thread: restrict them all.
		if err := cfg.Restrict(rules...); err != nil {
			return 0, fmt.Errorf("applying the Landlock ruleset: %w", err)
		}
		if rs.Workdir != "" {
			os.Chdir(rs.Workdir)
		}
		var results []probe.Result
		for _, a := range sp.Probe {
			results = append(results, probe.Run(a))
		}
		if err := probe.Encode(os.Stdout, results); err != nil {
			return 0, err
		}
		os.Exit(0)
	}
	// Restrict this thread only: it is the one that execs, and execve keeps
	// the calling thread's Landlock domain and no_new_privs for the whole
	// new program. (go-landlock's Restrict would also stop every other
	// runtime thread, which costs milliseconds and protects nothing here.)
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return 0, fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return 0, fmt.Errorf("landlock_restrict_self: %w", err)
	}
	syscall.Close(fd)
	// The syscall filter, last, on this thread (after PR_SET_NO_NEW_PRIVS):
	// the server inherits it across the fork or exec. Without namespaces
	// the host's named unix sockets cannot be hidden, so unix sockets are
	// refused — unless the policy accepted landlock-unix-sockets.
	filter := "not loaded (unhardened test wiring)"
	if mode != unhardened {
		deny := sp.NoNetNS && !rs.Accepts(AcceptUnixSockets)
		if err := seccomp.Load(seccomp.Options{DenyUnixSockets: deny}); err != nil {
			return 0, fmt.Errorf("loading the seccomp filter: %w", err)
		}
		filter = "loaded"
		if deny {
			filter += ", unix sockets refused"
		}
	}
	say(verbose, "mcpolicy exec: %s: Landlock ABI %d enforced; network: %s; read-only %d, read-write %d hierarchies",
		rs.Server, abi, networkSummary(sp), len(rs.Baseline)+len(rs.ReadOnly), len(rs.ReadWrite))
	say(verbose, "mcpolicy exec: %s: session: %s; session keyring: %s; seccomp filter: %s", rs.Server, session, keyring, filter)
	say(verbose, "mcpolicy exec: %s: supplementary groups: %s", rs.Server, groupsSummary(dropped, !sp.NoNetNS))

	if rs.Workdir != "" {
		if err := os.Chdir(rs.Workdir); err != nil {
			return 0, fmt.Errorf("workdir: %w", err)
		}
	}
	path, err := lookPath(rs.Command[0], sp.Env)
	if err != nil {
		return 0, err
	}
	if fork {
		return forkServer(path, rs.Command, sp.Env)
	}
	return 0, fmt.Errorf("exec %s: %w", path, syscall.Exec(path, rs.Command, sp.Env))
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

// dropCapabilities empties the bounding, ambient, effective, permitted and
// inheritable sets and locks root out of regaining them on exec.
func dropCapabilities() error {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EPERM {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	// Without CAP_SETPCAP the bounding set cannot shrink (EPERM above), but
	// then nothing can be regained either: the process holds no capability.
	secure := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(secure), 0, 0, 0); err != nil && err != unix.EPERM {
		return fmt.Errorf("setting securebits: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	return nil
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
