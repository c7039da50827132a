//go:build linux

package seccomp

import (
	"slices"
	"sort"
	"strings"
	"testing"

	moby "github.com/moby/profiles/seccomp"
	"golang.org/x/sys/unix"
)

// TestDataIsComplete: every rule has a reason, names are sorted within a
// group and unique across the data, every name is a syscall on amd64 or
// arm64, and every syscall of both tables is decided.
func TestDataIsComplete(t *testing.T) {
	where := map[string]string{}
	decide := func(name, by string) {
		if prev, dup := where[name]; dup {
			t.Errorf("%s is decided twice: by %s and by %s", name, prev, by)
		}
		where[name] = by
	}
	for _, gs := range []struct {
		kind   string
		groups []group
	}{{"allowed", allowed}, {"denied", denied}} {
		for i, g := range gs.groups {
			by := gs.kind + "[" + string(rune('0'+i)) + "]"
			if strings.TrimSpace(g.reason) == "" {
				t.Errorf("%s %v has no reason", by, g.names)
			}
			if (gs.kind == "allowed") != (g.action == actAllow) {
				t.Errorf("%s %v: action %v", by, g.names, g.action)
			}
			if len(g.names) == 0 {
				t.Errorf("%s is empty", by)
			}
			if !sort.StringsAreSorted(g.names) {
				t.Errorf("%s is not sorted: %v", by, g.names)
			}
			for _, n := range g.names {
				decide(n, by)
			}
		}
	}
	prev := ""
	for _, r := range argRules {
		if r.name <= prev {
			t.Errorf("argRules: %s after %s", r.name, prev)
		}
		prev = r.name
		decide(r.name, "argRules")
		known := 0
		for _, a := range arches {
			if _, ok := a.lookup(r.name); ok {
				known++
			}
		}
		if known == 0 {
			t.Errorf("argRules: %s is no syscall on any architecture", r.name)
		}
		for _, c := range append(slices.Clone(r.checks), check{outcome: r.otherwise}) {
			if strings.TrimSpace(c.reason) == "" {
				t.Errorf("argRules %s: an outcome (%v) has no reason", r.name, c.action)
			}
			if (c.action != actAllow) != (c.what != "") {
				t.Errorf("argRules %s: %v with what %q: each denial, and only a denial, names what it takes", r.name, c.action, c.what)
			}
			if c.action != actAllow && c.what != r.name && !strings.HasPrefix(c.what, r.name+"(") {
				t.Errorf("argRules %s: denial named %q", r.name, c.what)
			}
		}
		if r.otherwise.when != always {
			t.Errorf("argRules %s: otherwise must always apply", r.name)
		}
	}
	for name := range where {
		_, amd := archAMD64.lookup(name)
		_, arm := archARM64.lookup(name)
		if !amd && !arm {
			t.Errorf("%s is no syscall on amd64 or arm64", name)
		}
	}
	for _, a := range arches {
		if !sort.SliceIsSorted(a.syscalls, func(i, j int) bool { return a.syscalls[i].name < a.syscalls[j].name }) {
			t.Errorf("%s table is not sorted", a.goarch)
		}
		for _, s := range a.syscalls {
			if _, ok := where[s.name]; !ok {
				t.Errorf("%s: syscall %s (%d) is not decided in data.go", a.goarch, s.name, s.nr)
			}
		}
	}
}

// TestConstants checks the values spelt out in data.go against x/sys/unix.
func TestConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"EPERM", errEPERM, uint64(unix.EPERM)}, {"EACCES", errEACCES, uint64(unix.EACCES)},
		{"ENOSYS", errENOSYS, uint64(unix.ENOSYS)}, {"EAFNOSUPPORT", errEAFNOSUPPORT, uint64(unix.EAFNOSUPPORT)},
		{"ENOTSUP", errENOTSUP, uint64(unix.ENOTSUP)}, {"S_IWGRP|S_IWOTH", modeGroupOtherWrite, unix.S_IWGRP | unix.S_IWOTH},
		{"AF_UNIX", afUNIX, unix.AF_UNIX}, {"AF_INET", afINET, unix.AF_INET}, {"AF_INET6", afINET6, unix.AF_INET6},
		{"AF_NETLINK", afNETLINK, unix.AF_NETLINK}, {"SOCK_STREAM", sockStream, unix.SOCK_STREAM},
		{"SOCK_SEQPACKET", sockSeqpacket, unix.SOCK_SEQPACKET},
		{"PRIO_PROCESS", prioProcess, unix.PRIO_PROCESS}, // IOPRIO_WHO_PROCESS (1) is not in x/sys: linux/ioprio.h
		{"TIOCSTI", tiocSTI, unix.TIOCSTI}, {"TIOCLINUX", tiocLINUX, unix.TIOCLINUX}, {"TIOCSETD", tiocSETD, unix.TIOCSETD},
		{"NETLINK_SOCK_DIAG", netlinkSockDiag, unix.NETLINK_SOCK_DIAG}, {"MSG_FASTOPEN", msgFastOpen, unix.MSG_FASTOPEN},
		{"CLONE_NEW*", cloneNewNamespaces, unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP},
		{"AUDIT_ARCH_X86_64", uint64(archAMD64.audit), unix.AUDIT_ARCH_X86_64}, {"AUDIT_ARCH_AARCH64", uint64(archARM64.audit), unix.AUDIT_ARCH_AARCH64},
		{"SECCOMP_RET_KILL_PROCESS", uint64(actKillProcess), unix.SECCOMP_RET_KILL_PROCESS}, {"SECCOMP_RET_ALLOW", uint64(actAllow), unix.SECCOMP_RET_ALLOW},
		{"SECCOMP_RET_ERRNO", uint64(retErrno), unix.SECCOMP_RET_ERRNO},
		{"BPF_LD|BPF_W|BPF_ABS", bpfLdWAbs, unix.BPF_LD | unix.BPF_W | unix.BPF_ABS}, {"BPF_ALU|BPF_AND|BPF_K", bpfAndK, unix.BPF_ALU | unix.BPF_AND | unix.BPF_K},
		{"BPF_JMP|BPF_JA", bpfJa, unix.BPF_JMP | unix.BPF_JA}, {"BPF_JMP|BPF_JEQ|BPF_K", bpfJeqK, unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K},
		{"BPF_JMP|BPF_JGE|BPF_K", bpfJgeK, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K}, {"BPF_JMP|BPF_JSET|BPF_K", bpfJsetK, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K},
		{"BPF_RET|BPF_K", bpfRetK, unix.BPF_RET | unix.BPF_K},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, x/sys/unix says %#x", c.name, c.got, c.want)
		}
	}
	// The native table against x/sys's constants.
	if a, err := native(); err == nil {
		for name, want := range map[string]uint32{"read": unix.SYS_READ, "ioctl": unix.SYS_IOCTL, "keyctl": unix.SYS_KEYCTL, "socket": unix.SYS_SOCKET,
			"socketpair": unix.SYS_SOCKETPAIR, "clone": unix.SYS_CLONE, "clone3": unix.SYS_CLONE3, "personality": unix.SYS_PERSONALITY, "openat": unix.SYS_OPENAT} {
			if got, _ := a.lookup(name); got != want {
				t.Errorf("%s: %d, x/sys/unix says %d", name, got, want)
			}
		}
	}
}

// dockerRule is one rule of Docker's default profile after its includes
// and excludes are applied.
type dockerRule struct {
	action string
	errno  uint
	args   []struct {
		index         uint
		value, value2 uint64
		op            string
	}
}

// dockerNoCaps applies Docker's default profile to a process with no
// capabilities on goarch, as moby's setupSeccomp does, and on every kernel
// at once: a rule that only some kernel versions get is left out when it
// allows (so "at least as strict" must hold on the oldest kernel too).
func dockerNoCaps(t *testing.T, goarch string) (map[string][]dockerRule, uint) {
	p := moby.DefaultProfile()
	if p.DefaultAction != "SCMP_ACT_ERRNO" || p.DefaultErrnoRet == nil {
		t.Fatalf("Docker's default action is %s", p.DefaultAction)
	}
	out := map[string][]dockerRule{}
	for _, s := range p.Syscalls {
		if in := s.Includes; in != nil {
			if len(in.Caps) > 0 || in.MinKernel != nil || (len(in.Arches) > 0 && !slices.Contains(in.Arches, goarch)) {
				continue
			}
		}
		if ex := s.Excludes; ex != nil {
			if slices.Contains(ex.Arches, goarch) || (ex.MinKernel != nil && s.Action == "SCMP_ACT_ALLOW") {
				continue
			}
			// Excludes.Caps: we hold none, so nothing is excluded by them.
		}
		r := dockerRule{action: string(s.Action)}
		if s.ErrnoRet != nil {
			r.errno = *s.ErrnoRet
		}
		for _, a := range s.Args {
			r.args = append(r.args, struct {
				index         uint
				value, value2 uint64
				op            string
			}{a.Index, a.Value, a.ValueTwo, string(a.Op)})
		}
		for _, n := range s.Names {
			out[n] = append(out[n], r)
		}
	}
	return out, *p.DefaultErrnoRet
}

// dockerAllows is libseccomp's verdict for one call: the first rule of the
// syscall whose comparisons all hold (64-bit, as on amd64 and arm64).
func dockerAllows(t *testing.T, rules []dockerRule, args [6]uint64) bool {
	for _, r := range rules {
		ok := true
		for _, a := range r.args {
			v := args[a.index]
			switch a.op {
			case "SCMP_CMP_EQ":
				ok = ok && v == a.value
			case "SCMP_CMP_NE":
				ok = ok && v != a.value
			case "SCMP_CMP_LT":
				ok = ok && v < a.value
			case "SCMP_CMP_LE":
				ok = ok && v <= a.value
			case "SCMP_CMP_GT":
				ok = ok && v > a.value
			case "SCMP_CMP_GE":
				ok = ok && v >= a.value
			case "SCMP_CMP_MASKED_EQ":
				ok = ok && v&a.value == a.value2
			default:
				t.Fatalf("Docker's profile uses %s: teach this test", a.op)
			}
		}
		if ok {
			return r.action == "SCMP_ACT_ALLOW"
		}
	}
	return false
}

// TestAtLeastAsStrictAsDocker evaluates this filter and Docker's default
// profile (for a process without capabilities, on any kernel) on every
// syscall of both tables, and on the syscalls either decides by argument
// with every pair of interesting values in their first two arguments: this
// filter must allow nothing Docker's denies. It logs where it is stricter.
func TestAtLeastAsStrictAsDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	var values []uint64
	for _, v := range []uint64{0, 1, 2, 3, 5, 8, 0x5401, tiocSTI, tiocLINUX, tiocSETD, msgFastOpen, 0x20000, 0x20008, 0x40000, 0x3d0f00, 0x01200011, cloneNewNamespaces, 0x7fffffff, 0xffffffff} {
		values = append(values, v, v|1<<32, v|0x80000 /* SOCK_CLOEXEC */)
	}
	for b := 0; b < 64; b++ {
		values = append(values, 1<<b)
	}
	for af := uint64(0); af <= 50; af++ { // every address family
		values = append(values, af)
	}
	for _, a := range arches {
		docker, _ := dockerNoCaps(t, a.goarch)
		for _, o := range optionSets {
			prog := mustCompile(t, a, o)
			var stricter []string
			for _, s := range a.syscalls {
				probes := [][6]uint64{{}}
				_, byArg := docker[s.name]
				byArg = byArg && len(docker[s.name][0].args) > 0
				for _, r := range argRules {
					byArg = byArg || r.name == s.name
				}
				if byArg {
					probes = probes[:0]
					for _, v0 := range values {
						for _, v1 := range values {
							probes = append(probes, [6]uint64{v0, v1})
						}
					}
				}
				denies := 0
				for _, args := range probes {
					got, err := run(prog, data{nr: s.nr, arch: a.audit, args: args})
					if err != nil {
						t.Fatal(err)
					}
					d := dockerAllows(t, docker[s.name], args)
					if got == actAllow && !d {
						t.Errorf("%s %+v: %s(%#x, %#x) is allowed here, denied by Docker", a.goarch, o, s.name, args[0], args[1])
					}
					if got != actAllow && d {
						denies++
					}
				}
				if denies > 0 {
					stricter = append(stricter, s.name)
				}
			}
			t.Logf("%s %+v: stricter than Docker on %d syscalls: %s", a.goarch, o, len(stricter), strings.Join(stricter, " "))
		}
	}
}

func TestRules(t *testing.T) {
	for _, a := range arches {
		for _, o := range optionSets {
			rs := rules(a, o)
			seen := map[string]bool{}
			for _, r := range rs {
				if r.Name == "" || r.Action == "" || strings.TrimSpace(r.Reason) == "" {
					t.Errorf("%s: incomplete rule %+v", a.goarch, r)
				}
				if r.Action == "ALLOW" || strings.HasPrefix(r.Action, "0x") {
					t.Errorf("%s: rule %s with action %s", a.goarch, r.Name, r.Action)
				}
				if seen[r.Name] {
					t.Errorf("%s: %s twice", a.goarch, r.Name)
				}
				seen[r.Name] = true
			}
			for _, want := range []string{"keyctl", "add_key", "request_key", "ioctl(TIOCSTI)", "ioctl(TIOCLINUX)", "mount", "ptrace", "clone3",
				"prlimit64(another process, new limits)", "setpriority(another process, a process group or a user)", "sched_setaffinity(another process)"} {
				if !seen[want] {
					t.Errorf("%s %+v: Rules lacks %s", a.goarch, o, want)
				}
			}
			if seen["socket(AF_UNIX)"] != o.DenyUnixSockets {
				t.Errorf("%s %+v: socket(AF_UNIX) listed: %v", a.goarch, o, seen["socket(AF_UNIX)"])
			}
		}
	}
	if rs := Rules(Options{DenyUnixSockets: true}); len(rs) < 50 {
		t.Errorf("Rules: %d rules", len(rs))
	}
}
