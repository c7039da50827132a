package seccomp

import (
	"fmt"
	"runtime"
	"sync"
)

// Options are the variations of the filter.
type Options struct {
	// DenyUnixSockets refuses socket(AF_UNIX, ...) with EACCES, and
	// socketpair(AF_UNIX, ...) of datagram type. For the Landlock launcher
	// when it has no mount namespace and so cannot hide the host's named
	// sockets (/run/docker.sock): Landlock has no right for connect(2) to a
	// path. A filter cannot see paths, so this denies the creation of every
	// unix socket, pathname AND abstract; stream and seqpacket socketpairs
	// stay allowed (they are born connected to each other).
	DenyUnixSockets bool
	// NoNamespaces is the Landlock launcher without user namespaces (no
	// mount, network or PID namespace): it refuses what Landlock does not
	// hook and a namespace would have confined. Changing a file's mode,
	// owner, times or extended attributes, by path or by descriptor
	// (EPERM), listen(2), which binds an unbound socket itself
	// (EACCES), a send with MSG_FASTOPEN, which connects as it sends
	// (EACCES), sock_diag sockets, which list the host's sockets
	// (EACCES), and reading another process's limits or nice value
	// (EPERM), which tells which host processes exist.
	NoNamespaces bool
}

// Rule is one thing the filter takes away, for `mcpolicy explain`.
type Rule struct {
	Name   string // a syscall ("keyctl"), a syscall with the arguments concerned ("ioctl(TIOCSTI)"), or a class in parentheses
	Action string // "EPERM", "ENOSYS", "EACCES", "EAFNOSUPPORT", "ENOTSUP" (the errno returned), "0 (not run)" or "KILL" (the process is killed)
	Reason string
}

// native is the architecture this binary runs on. runtime.GOARCH is a
// constant, so the other architecture's table is not linked in.
func native() (*archInfo, error) {
	switch runtime.GOARCH {
	case "amd64":
		return &archAMD64, nil
	case "arm64":
		return &archARM64, nil
	}
	return nil, fmt.Errorf("seccomp: no syscall table for %s (only amd64 and arm64)", runtime.GOARCH)
}

type compiled struct {
	once  sync.Once
	prog  []insn
	bytes []byte
	err   error
}

var cache sync.Map // Options -> *compiled

func get(o Options) (*compiled, error) {
	v, ok := cache.Load(o)
	if !ok {
		v, _ = cache.LoadOrStore(o, &compiled{})
	}
	c := v.(*compiled)
	c.once.Do(func() {
		a, err := native()
		if err != nil {
			c.err = err
			return
		}
		c.prog, c.err = compile(a, o)
		c.bytes = encode(c.prog)
	})
	return c, c.err
}

// Program is the filter for this architecture as bwrap's --seccomp FD and
// the kernel read it: an array of struct sock_filter (8 bytes each, host
// byte order). It is deterministic, computed once per Options; the slice
// is the caller's own copy.
func Program(o Options) ([]byte, error) {
	c, err := get(o)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), c.bytes...), nil
}

// Rules lists what the filter takes away on this architecture, in the
// order of the data: every syscall it denies, every argument rule that
// denies, and what happens to other architectures and unknown numbers.
func Rules(o Options) []Rule {
	a, err := native()
	if err != nil {
		return []Rule{{Name: "(this architecture)", Action: "unsupported", Reason: err.Error()}}
	}
	return rules(a, o)
}

func rules(a *archInfo, o Options) []Rule {
	var out []Rule
	for _, g := range denied {
		for _, n := range g.names {
			if _, ok := a.lookup(n); ok {
				out = append(out, Rule{Name: n, Action: g.action.String(), Reason: g.reason})
			}
		}
	}
	for _, r := range argRules {
		for _, c := range append(r.checks[:len(r.checks):len(r.checks)], check{outcome: r.otherwise}) {
			if c.action != actAllow && c.when.applies(o) {
				out = append(out, Rule{Name: c.what, Action: c.action.String(), Reason: c.reason})
			}
		}
	}
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[a.goarch]
	out = append(out, Rule{Name: "(any architecture but " + arch + ")", Action: actKillProcess.String(),
		Reason: "another ABI has other syscall numbers (i386's int 0x80 from an x86_64 process): nothing here would hold for it"})
	if a.x32 {
		out = append(out, Rule{Name: "(the x32 ABI)", Action: actKillProcess.String(),
			Reason: "x86_64 syscall numbers with bit 30 set are another ABI, treated as another architecture"})
	}
	out = append(out,
		Rule{Name: fmt.Sprintf("(syscall numbers above %d)", a.maxNr()), Action: actENOSYS.String(),
			Reason: "newer than this table (golang.org/x/sys): ENOSYS, so libc falls back to the older call, as on an older kernel (Docker's EPERM broke glibc's faccessat2 fallback)"},
		Rule{Name: "(any other syscall number)", Action: actEPERM.String(),
			Reason: "numbers the table does not name, like Docker's default action"})
	return out
}
