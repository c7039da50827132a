package seccomp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"testing"
)

// data is struct seccomp_data as the filter sees it.
type data struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

func (d data) word(off uint32) (uint32, error) {
	switch {
	case off == offNr:
		return d.nr, nil
	case off == offArch:
		return d.arch, nil
	case off >= offArgs && off < offArgs+48 && off%4 == 0:
		a := d.args[(off-offArgs)/8]
		if (off-offArgs)%8 == 0 {
			return uint32(a), nil // little endian: low half first
		}
		return uint32(a >> 32), nil
	}
	return 0, fmt.Errorf("load at offset %d", off)
}

// run interprets prog as the kernel's seccomp does, for the instructions
// compile emits; anything else is an error, as is running off the end.
func run(prog []insn, d data) (action, error) {
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		var err error
		switch in.code {
		case bpfLdWAbs:
			acc, err = d.word(in.k)
		case bpfAndK:
			acc &= in.k
		case bpfJa:
			pc += int(in.k)
		case bpfJeqK, bpfJgeK, bpfJsetK:
			var hold bool
			switch in.code {
			case bpfJeqK:
				hold = acc == in.k
			case bpfJgeK:
				hold = acc >= in.k
			case bpfJsetK:
				hold = acc&in.k != 0
			}
			if hold {
				pc += int(in.jt)
			} else {
				pc += int(in.jf)
			}
		case bpfRetK:
			return action(in.k), nil
		default:
			err = fmt.Errorf("instruction 0x%x at %d", in.code, pc)
		}
		if err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("ran off the end of the program")
}

func mustCompile(t testing.TB, a *archInfo, o Options) []insn {
	t.Helper()
	prog, err := compile(a, o)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

func nr(t testing.TB, a *archInfo, name string) uint32 {
	t.Helper()
	n, ok := a.lookup(name)
	if !ok {
		t.Fatalf("%s: no %s", a.goarch, name)
	}
	return n
}

var arches = []*archInfo{&archAMD64, &archARM64}

var optionSets = []Options{{}, {DenyUnixSockets: true}, {NoNamespaces: true}, {DenyUnixSockets: true, NoNamespaces: true}}

// TestDecisions runs the compiled filter on chosen syscalls, for both
// architectures and both options.
func TestDecisions(t *testing.T) {
	const hi = 1 << 32
	type tc struct {
		name string
		args [6]uint64
		want action // without DenyUnixSockets
		deny action // with; 0: same as want
		nons action // with NoNamespaces (first); 0: as the others say
	}
	cases := []tc{
		{name: "read", want: actAllow},
		{name: "openat", want: actAllow},
		{name: "execve", want: actAllow},
		{name: "keyctl", args: [6]uint64{0, 0xfffffffd, 1}, want: actENOSYS},
		{name: "add_key", want: actENOSYS},
		{name: "request_key", want: actENOSYS},
		{name: "ioctl", args: [6]uint64{2, tiocSTI}, want: actEPERM},
		{name: "ioctl", args: [6]uint64{2, hi | tiocSTI}, want: actEPERM}, // the kernel reads an unsigned int
		{name: "ioctl", args: [6]uint64{2, tiocLINUX}, want: actEPERM},
		{name: "ioctl", args: [6]uint64{3, tiocSETD}, want: actEPERM},
		{name: "ioctl", args: [6]uint64{3, hi | tiocSETD}, want: actEPERM},
		{name: "ioctl", args: [6]uint64{3, 0x5424 /* TIOCGETD */}, want: actAllow},
		{name: "ioctl", args: [6]uint64{2, 0x5401}, want: actAllow}, // TCGETS
		{name: "ioctl", args: [6]uint64{2, 0x5413}, want: actAllow}, // TIOCGWINSZ
		{name: "socket", args: [6]uint64{afUNIX, sockStream}, want: actAllow, deny: actEACCES},
		{name: "socket", args: [6]uint64{hi | afUNIX, sockStream}, want: actEAFNOSUPPORT, deny: actEACCES},
		{name: "socket", args: [6]uint64{afINET, sockStream}, want: actAllow},
		{name: "socket", args: [6]uint64{afINET6, 2}, want: actAllow},
		{name: "socket", args: [6]uint64{afNETLINK, 3}, want: actAllow},
		{name: "socket", args: [6]uint64{hi | afINET, sockStream}, want: actEAFNOSUPPORT},
		{name: "socket", args: [6]uint64{40 /* AF_VSOCK */, sockStream}, want: actEAFNOSUPPORT},
		{name: "socket", args: [6]uint64{38 /* AF_ALG */, 5}, want: actEAFNOSUPPORT},
		{name: "socket", args: [6]uint64{17 /* AF_PACKET */, 3}, want: actEAFNOSUPPORT},
		{name: "socketpair", args: [6]uint64{afUNIX, sockStream | 0x80000 /* SOCK_CLOEXEC */}, want: actAllow},
		{name: "socketpair", args: [6]uint64{afUNIX, sockSeqpacket}, want: actAllow},
		{name: "socketpair", args: [6]uint64{afUNIX, 2 /* SOCK_DGRAM */ | 0x800 /* SOCK_NONBLOCK */}, want: actAllow, deny: actEACCES},
		{name: "socketpair", args: [6]uint64{afUNIX, 3 /* SOCK_RAW, a DGRAM for AF_UNIX */}, want: actAllow, deny: actEACCES},
		{name: "socketpair", args: [6]uint64{afUNIX, hi | sockStream}, want: actAllow},
		{name: "socketpair", args: [6]uint64{30 /* AF_TIPC */, 5}, want: actEAFNOSUPPORT},
		{name: "clone", args: [6]uint64{0x3d0f00 /* pthread_create's flags */}, want: actAllow},
		{name: "clone", args: [6]uint64{0x01200011 /* fork: CHILD_SETTID|CHILD_CLEARTID|SIGCHLD */}, want: actAllow},
		{name: "clone", args: [6]uint64{0x10000000 /* CLONE_NEWUSER */}, want: actEPERM},
		{name: "clone", args: [6]uint64{hi | 0x20000 /* CLONE_NEWNS */}, want: actEPERM},
		{name: "clone3", want: actENOSYS},
		{name: "prlimit64", args: [6]uint64{0, 4, 0x7ffd0000}, want: actAllow},                       // setrlimit: the caller
		{name: "prlimit64", args: [6]uint64{1234, 0 /* RLIMIT_CPU */, 0x7ffd0000}, want: actEPERM},   // another process's limit
		{name: "prlimit64", args: [6]uint64{hi, 0, 0x7ffd0000}, want: actEPERM},                      // pid 0 to the kernel, not to an allow rule
		{name: "prlimit64", args: [6]uint64{1234, 4, 0, 0x7ffd0000}, want: actAllow, nons: actEPERM}, // reading another's: a host process's without namespaces
		{name: "prlimit64", args: [6]uint64{0, 4, 0, 0x7ffd0000}, want: actAllow},                    // getrlimit
		{name: "setpriority", args: [6]uint64{0, 0, 10}, want: actAllow},                             // nice(10)
		{name: "setpriority", args: [6]uint64{0, 1234, 19}, want: actEPERM},
		{name: "setpriority", args: [6]uint64{2 /* PRIO_USER */, 0, 19}, want: actEPERM}, // every process of the user
		{name: "setpriority", args: [6]uint64{1 /* PRIO_PGRP */, 0, 19}, want: actEPERM},
		{name: "getpriority", args: [6]uint64{0, 1234}, want: actAllow, nons: actEPERM},
		{name: "getpriority", args: [6]uint64{0, hi}, want: actAllow, nons: actEPERM},
		{name: "getpriority", args: [6]uint64{0, 0}, want: actAllow},
		{name: "getpriority", args: [6]uint64{2 /* PRIO_USER */, 0}, want: actAllow},
		{name: "getpriority", args: [6]uint64{2, 1000}, want: actAllow, nons: actEPERM},
		{name: "ioprio_set", args: [6]uint64{1, 0, 7 << 13}, want: actAllow},
		{name: "ioprio_set", args: [6]uint64{3 /* IOPRIO_WHO_USER */, 1000, 3 << 13}, want: actEPERM},
		{name: "ioprio_set", args: [6]uint64{1, 1234, 3 << 13}, want: actEPERM},
		{name: "sched_setaffinity", args: [6]uint64{0, 8, 0x7ffd0000}, want: actAllow},
		{name: "sched_setaffinity", args: [6]uint64{1234, 8, 0x7ffd0000}, want: actEPERM},
		{name: "sched_getaffinity", args: [6]uint64{1234, 8, 0x7ffd0000}, want: actAllow},
		{name: "sched_setscheduler", args: [6]uint64{1234, 5 /* SCHED_IDLE */, 0x7ffd0000}, want: actEPERM},
		{name: "sched_setparam", args: [6]uint64{1234, 0x7ffd0000}, want: actEPERM},
		{name: "sched_setattr", args: [6]uint64{1234, 0x7ffd0000}, want: actEPERM},
		{name: "sched_setattr", args: [6]uint64{0, 0x7ffd0000}, want: actAllow},
		{name: "personality", args: [6]uint64{0xffffffff}, want: actAllow},
		{name: "personality", args: [6]uint64{0x0040000 /* ADDR_NO_RANDOMIZE */}, want: actEPERM},
		{name: "personality", args: [6]uint64{hi}, want: actEPERM},
		{name: "mount", want: actEPERM},
		{name: "unshare", want: actEPERM},
		{name: "ptrace", want: actEPERM},
		{name: "io_uring_setup", want: actEPERM},
		{name: "shmget", want: actENOSYS},
		{name: "mq_open", want: actENOSYS},
		{name: "bpf", want: actEPERM},
		{name: "landlock_restrict_self", want: actAllow},
		{name: "listns", want: actENOSYS},
		// Without namespaces: metadata by path, listen, Fast Open, sock_diag.
		{name: "chmod", args: [6]uint64{0x7ffd0000, 0o644}, want: actAllow, nons: actEPERM},
		{name: "chmod", args: [6]uint64{0x7ffd0000, 0o4755}, want: actEPERM},
		{name: "fchmod", args: [6]uint64{3, 0o644}, want: actAllow, nons: actEPERM},
		{name: "fchmodat", args: [6]uint64{0xffffff9c, 0x7ffd0000, 0o600}, want: actAllow, nons: actEPERM},
		{name: "fchmodat2", args: [6]uint64{0xffffff9c, 0x7ffd0000, 0o600}, want: actAllow, nons: actEPERM},
		// Group or other write: refused everywhere, the upper half ignored as the kernel does.
		{name: "chmod", args: [6]uint64{0x7ffd0000, 0o777}, want: actEPERM},
		{name: "chmod", args: [6]uint64{0x7ffd0000, 0o602}, want: actEPERM},
		{name: "chmod", args: [6]uint64{0x7ffd0000, 0o1777}, want: actEPERM},
		{name: "chmod", args: [6]uint64{0x7ffd0000, hi | 0o755}, want: actAllow, nons: actEPERM},
		{name: "fchmod", args: [6]uint64{3, 0o664}, want: actEPERM},
		{name: "fchmod", args: [6]uint64{3, hi | 0o646}, want: actEPERM},
		{name: "fchmodat", args: [6]uint64{0xffffff9c, 0x7ffd0000, 0o620}, want: actEPERM},
		{name: "fchmodat", args: [6]uint64{0xffffff9c, 0x7ffd0000, 0o4755}, want: actEPERM},
		{name: "fchmodat2", args: [6]uint64{0xffffff9c, 0x7ffd0000, 0o777, 0x100 /* AT_SYMLINK_NOFOLLOW */}, want: actEPERM},
		{name: "fchmodat2", args: [6]uint64{0xffffff9c, 0x7ffd0000, 0o2775}, want: actEPERM},
		{name: "umask", args: [6]uint64{0o022}, want: actAllow},
		{name: "umask", args: [6]uint64{0o077}, want: actAllow},
		{name: "umask", args: [6]uint64{hi | 0o027}, want: actAllow},
		{name: "umask", args: [6]uint64{0}, want: actNoop},
		{name: "umask", args: [6]uint64{0o002}, want: actNoop},
		{name: "umask", args: [6]uint64{0o020}, want: actNoop},
		{name: "umask", args: [6]uint64{hi}, want: actNoop},
		{name: "chown", args: [6]uint64{0x7ffd0000, 1000, 1000}, want: actAllow, nons: actEPERM},
		{name: "lchown", args: [6]uint64{0x7ffd0000, 1000, 1000}, want: actAllow, nons: actEPERM},
		{name: "fchownat", args: [6]uint64{0xffffff9c, 0x7ffd0000, 1000, 1000}, want: actAllow, nons: actEPERM},
		{name: "fchown", args: [6]uint64{3, 1000, 1000}, want: actAllow, nons: actEPERM},
		{name: "utime", args: [6]uint64{0x7ffd0000}, want: actAllow, nons: actEPERM},
		{name: "utimes", args: [6]uint64{0x7ffd0000}, want: actAllow, nons: actEPERM},
		{name: "futimesat", args: [6]uint64{0xffffff9c, 0x7ffd0000}, want: actAllow, nons: actEPERM},
		{name: "utimensat", args: [6]uint64{0xffffff9c, 0x7ffd0000}, want: actAllow, nons: actEPERM},
		{name: "utimensat", args: [6]uint64{3, 0}, want: actAllow, nons: actEPERM},  // futimens
		{name: "utimensat", args: [6]uint64{3, hi}, want: actAllow, nons: actEPERM}, // a path, to the kernel
		{name: "setxattr", args: [6]uint64{0x7ffd0000}, want: actENOTSUP},
		{name: "lsetxattr", args: [6]uint64{0x7ffd0000}, want: actENOTSUP},
		{name: "removexattr", args: [6]uint64{0x7ffd0000}, want: actAllow, nons: actEPERM},
		{name: "lremovexattr", args: [6]uint64{0x7ffd0000}, want: actAllow, nons: actEPERM},
		{name: "setxattrat", args: [6]uint64{0xffffff9c, 0x7ffd0000}, want: actENOTSUP},
		{name: "removexattrat", args: [6]uint64{0xffffff9c, 0x7ffd0000}, want: actAllow, nons: actEPERM},
		{name: "fsetxattr", args: [6]uint64{3}, want: actENOTSUP},
		{name: "fremovexattr", args: [6]uint64{3}, want: actAllow, nons: actEPERM},
		{name: "getxattr", args: [6]uint64{0x7ffd0000}, want: actAllow},
		{name: "listen", args: [6]uint64{3, 128}, want: actAllow, nons: actEACCES},
		{name: "sendto", args: [6]uint64{3, 0x7ffd0000, 10, 0}, want: actAllow},
		{name: "sendto", args: [6]uint64{3, 0x7ffd0000, 10, msgFastOpen}, want: actAllow, nons: actEACCES},
		{name: "sendto", args: [6]uint64{3, 0x7ffd0000, 10, hi | msgFastOpen | 0x40 /* MSG_DONTWAIT */}, want: actAllow, nons: actEACCES},
		{name: "sendto", args: [6]uint64{3, 0x7ffd0000, 10, hi}, want: actAllow}, // the kernel reads an unsigned int: no flag
		{name: "sendmsg", args: [6]uint64{3, 0x7ffd0000, msgFastOpen}, want: actAllow, nons: actEACCES},
		{name: "sendmsg", args: [6]uint64{3, 0x7ffd0000, 0x4000 /* MSG_NOSIGNAL */}, want: actAllow},
		{name: "sendmmsg", args: [6]uint64{3, 0x7ffd0000, 2, msgFastOpen}, want: actAllow, nons: actEACCES},
		{name: "socket", args: [6]uint64{afNETLINK, 3, netlinkSockDiag}, want: actAllow, nons: actEACCES},
		{name: "socket", args: [6]uint64{afNETLINK, 2, hi | netlinkSockDiag}, want: actAllow, nons: actEACCES},
		{name: "socket", args: [6]uint64{afNETLINK, 3, 0 /* NETLINK_ROUTE */}, want: actAllow},
	}
	for _, a := range arches {
		for _, o := range optionSets {
			prog := mustCompile(t, a, o)
			for _, c := range cases {
				if _, ok := a.lookup(c.name); !ok {
					continue // utime, utimes, futimesat: amd64 only
				}
				want := c.want
				if o.DenyUnixSockets && c.deny != 0 {
					want = c.deny
				}
				if o.NoNamespaces && c.nons != 0 {
					want = c.nons
				}
				got, err := run(prog, data{nr: nr(t, a, c.name), arch: a.audit, args: c.args})
				if err != nil {
					t.Fatalf("%s %+v: %v", a.goarch, o, err)
				}
				if got != want {
					t.Errorf("%s %+v: %s(%#x): %v, want %v", a.goarch, o, c.name, c.args[:2], got, want)
				}
			}
			// Other architectures, the x32 ABI, numbers beyond the table.
			for _, c := range []struct {
				d    data
				want action
			}{
				{data{nr: 0, arch: 0x40000003}, actKillProcess},                    // i386 (int 0x80)
				{data{nr: 0, arch: 0x40000028}, actKillProcess},                    // arm (32-bit)
				{data{nr: nr(t, a, "read"), arch: a.audit ^ 1}, actKillProcess},    // anything else
				{data{nr: a.maxNr() + 1, arch: a.audit}, actENOSYS},                // newer than the table
				{data{nr: 0x3fffffff, arch: a.audit}, actENOSYS},                   //
				{data{nr: 0xffffffff, arch: a.audit}, actENOSYS},                   // -1
				{data{nr: x32Bit | nr(t, a, "read"), arch: a.audit}, x32Kill(a)},   // x32
				{data{nr: x32Bit | nr(t, a, "keyctl"), arch: a.audit}, x32Kill(a)}, //
				{data{nr: x32Bit | 0x3fffffff, arch: a.audit}, x32Kill(a)},         //
				{data{nr: unnamed(t, a), arch: a.audit}, actEPERM},                 // a gap in the table
				{data{nr: nr(t, a, "exit_group"), arch: a.audit}, actAllow},        //
				{data{nr: nr(t, a, "rt_sigreturn"), arch: a.audit}, actAllow},      //
				{data{nr: nr(t, a, "restart_syscall"), arch: a.audit}, actAllow},   //
				{data{nr: nr(t, a, "file_getattr"), arch: a.audit}, actENOSYS},     //
				{data{nr: nr(t, a, "open_tree_attr"), arch: a.audit}, actENOSYS},   //
			} {
				got, err := run(prog, c.d)
				if err != nil {
					t.Fatal(err)
				}
				if got != c.want {
					t.Errorf("%s %+v: nr %#x arch %#x: %v, want %v", a.goarch, o, c.d.nr, c.d.arch, got, c.want)
				}
			}
		}
	}
}

func x32Kill(a *archInfo) action {
	if a.x32 {
		return actKillProcess
	}
	return actENOSYS
}

// unnamed is a number below the table's highest that the table does not name.
func unnamed(t *testing.T, a *archInfo) uint32 {
	named := map[uint32]bool{}
	for _, s := range a.syscalls {
		named[s.nr] = true
	}
	for n := a.maxNr(); n > 0; n-- {
		if !named[n] {
			return n
		}
	}
	t.Fatalf("%s: the table has no gap", a.goarch)
	return 0
}

// TestEveryNumberDecided runs every syscall number of both tables, with no
// argument set, and checks the answer against the data: the program
// neither runs off its end nor leaves a number undecided.
func TestEveryNumberDecided(t *testing.T) {
	for _, a := range arches {
		for _, o := range optionSets {
			prog := mustCompile(t, a, o)
			if len(prog) > maxInsns {
				t.Fatalf("%d instructions", len(prog))
			}
			for i, in := range prog { // every jump lands inside the program
				if in.code&0x07 == 0x05 {
					far := int(in.jt)
					if in.code == bpfJa {
						far = int(in.k)
					}
					if i+1+max(far, int(in.jf)) >= len(prog) {
						t.Fatalf("%s: jump out of the program at %d", a.goarch, i)
					}
				}
			}
			want := map[string]action{}
			for _, g := range append(append([]group{}, allowed...), denied...) {
				for _, n := range g.names {
					want[n] = g.action
				}
			}
			for _, s := range a.syscalls {
				got, err := run(prog, data{nr: s.nr, arch: a.audit})
				if err != nil {
					t.Fatalf("%s: %s: %v", a.goarch, s.name, err)
				}
				if w, ok := want[s.name]; ok && got != w {
					t.Errorf("%s: %s: %v, want %v", a.goarch, s.name, got, w)
				}
			}
			t.Logf("%s %+v: %d instructions", a.goarch, o, len(prog))
		}
	}
}

// TestLongJumps compiles the data for a made-up table whose numbers
// alternate between allowed syscalls, denied ones and gaps, so the tree is deep and
// wide enough to need JA trampolines, and checks every number.
func TestLongJumps(t *testing.T) {
	want := map[string]action{}
	var allow, deny []string
	for _, g := range allowed {
		for _, n := range g.names {
			want[n] = g.action
			allow = append(allow, n)
		}
	}
	for _, g := range denied {
		for _, n := range g.names {
			want[n] = g.action
			deny = append(deny, n)
		}
	}
	fake := archInfo{goarch: "fake", audit: 0xc000003e}
	for i := 0; i < max(len(allow), len(deny)); i++ {
		for _, l := range [][]string{allow, deny} {
			if i < len(l) {
				fake.syscalls = append(fake.syscalls, sysnum{l[i], 2 * uint32(len(fake.syscalls))}) // gaps between: EPERM
			}
		}
	}
	for _, r := range argRules {
		fake.syscalls = append(fake.syscalls, sysnum{r.name, 2 * uint32(len(fake.syscalls))})
	}
	sort.Slice(fake.syscalls, func(i, j int) bool { return fake.syscalls[i].name < fake.syscalls[j].name })
	prog := mustCompile(t, &fake, Options{})
	if !slices.ContainsFunc(prog, func(in insn) bool { return in.code == bpfJa }) {
		t.Fatalf("%d instructions and no JA: the test does not reach long jumps", len(prog))
	}
	for _, s := range fake.syscalls {
		w, ok := want[s.name]
		if !ok {
			continue
		}
		if got, err := run(prog, data{nr: s.nr, arch: fake.audit}); err != nil || got != w {
			t.Errorf("%s (%d): %v %v, want %v", s.name, s.nr, got, err, w)
		}
	}
	for _, s := range fake.syscalls {
		if got, _ := run(prog, data{nr: s.nr + 1, arch: fake.audit}); got != actEPERM && s.nr != fake.maxNr() {
			t.Errorf("the gap after %s: %v", s.name, got)
		}
	}
	got, _ := run(prog, data{nr: nr(t, &fake, "ioctl"), arch: fake.audit, args: [6]uint64{1, tiocSTI}})
	if got != actEPERM {
		t.Errorf("ioctl(TIOCSTI): %v", got)
	}
	t.Logf("%d instructions", len(prog))
}

func TestProgramIsDeterministicAndCached(t *testing.T) {
	a, err := native()
	if err != nil {
		t.Skip(err)
	}
	for _, o := range optionSets {
		p1, err := Program(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(p1)%8 != 0 || len(p1) == 0 {
			t.Fatalf("%d bytes", len(p1))
		}
		if want := encode(mustCompile(t, a, o)); !bytes.Equal(p1, want) {
			t.Fatal("Program differs from a fresh compile")
		}
		p1[0] ^= 0xff // the caller's copy
		p2, _ := Program(o)
		if bytes.Equal(p1, p2) {
			t.Fatal("Program returned the cached slice itself")
		}
		// host byte order: the first instruction is the load of the architecture
		if code := binary.NativeEndian.Uint16(p2); code != bpfLdWAbs || binary.NativeEndian.Uint32(p2[4:]) != offArch {
			t.Fatalf("first instruction %x", p2[:8])
		}
	}
	p0, _ := Program(Options{})
	p1, _ := Program(Options{DenyUnixSockets: true})
	if bytes.Equal(p0, p1) {
		t.Fatal("DenyUnixSockets changed nothing")
	}
}

func BenchmarkProgram(b *testing.B) {
	if _, err := native(); err != nil {
		b.Skip(err)
	}
	for _, o := range optionSets {
		b.Run(fmt.Sprintf("DenyUnixSockets=%v", o.DenyUnixSockets), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Program(o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompile is the first call's cost (once per process and Options).
func BenchmarkCompile(b *testing.B) {
	a := &archAMD64
	if runtime.GOARCH == "arm64" {
		a = &archARM64
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compile(a, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
