//go:build linux

package seccomp

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	moby "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// TestEngineProfile: engine.json is Docker's default profile as moby's
// package builds it, with engineRules (MCPOLICY_UPDATE=1 rewrites it), and it takes away
// what the engines' own defaults left to a server (the keyring, io_uring,
// AF_VSOCK) and what bwrap's filter denies besides.
func TestEngineProfile(t *testing.T) {
	want, err := json.MarshalIndent(engineRules(moby.DefaultProfile()), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if os.Getenv("MCPOLICY_UPDATE") == "1" {
		if err := os.WriteFile("engine.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := EngineProfile(); !bytes.Equal(got, want) {
		t.Fatalf("engine.json is not moby's DefaultProfile with engineRules (MCPOLICY_UPDATE=1 go test -run TestEngineProfile ./seccomp rewrites it)")
	}
	var p moby.Seccomp
	if err := json.Unmarshal(EngineProfile(), &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("default action %s: a syscall the profile does not name must be refused", p.DefaultAction)
	}
	for _, s := range p.Syscalls {
		if s.Action != "SCMP_ACT_ALLOW" {
			continue
		}
		for _, n := range s.Names {
			switch n {
			case "keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "open_by_handle_at":
				if len(s.Includes.Caps) == 0 {
					t.Errorf("the profile allows %s", n)
				}
			case "socket":
				for _, a := range s.Args {
					if a.Index == 0 && (a.Op == "SCMP_CMP_EQ" && a.Value == unix.AF_VSOCK || a.Op == "SCMP_CMP_LT" && a.Value > unix.AF_VSOCK) && len(s.Includes.Caps) == 0 {
						t.Errorf("the profile allows socket(AF_VSOCK): %+v", a)
					}
				}
				if len(s.Args) == 0 && len(s.Includes.Caps) == 0 {
					t.Errorf("the profile allows every socket family")
				}
			}
		}
	}
	if !slices.ContainsFunc(p.Syscalls, func(s *moby.Syscall) bool { return slices.Contains(s.Names, "read") && s.Action == "SCMP_ACT_ALLOW" }) {
		t.Error("the profile does not allow read: not a profile")
	}
}

// modeCalls are the calls engineRules takes out of Docker's allowlist, with
// the index of their mode argument.
var modeCalls = map[string]uint{"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2}

// engineRules adds to Docker's profile what the host filter refuses of
// modes (data.go: mode, umask, the setxattr group): a chmod with setuid,
// setgid, group or other write (EPERM, the profile's default), a umask
// that lets group or other write (not run: ERRNO with errno 0 returns 0),
// and setting extended attributes (ENOTSUP). libseccomp compiles each rule
// for every architecture of the archMap, i386 and x32 included.
func engineRules(p *moby.Seccomp) *moby.Seccomp {
	take := []string{"umask", "setxattr", "lsetxattr", "fsetxattr", "setxattrat"}
	for n := range modeCalls {
		take = append(take, n)
	}
	for _, s := range p.Syscalls {
		if s.Action == specs.ActAllow && s.Includes == nil && s.Excludes == nil && len(s.Args) == 0 {
			s.Names = slices.DeleteFunc(s.Names, func(n string) bool { return slices.Contains(take, n) })
		}
	}
	rule := func(names []string, act specs.LinuxSeccompAction, errno *uint, comment string, args ...specs.LinuxSeccompArg) *moby.Syscall {
		return &moby.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: names, Action: act, ErrnoRet: errno, Args: args}, Comment: comment}
	}
	masked := func(index uint, mask, value uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Index: index, Value: mask, ValueTwo: value, Op: specs.OpMaskedEqual}
	}
	const setIDWrite = modeSetID | modeGroupOtherWrite
	zero, notsup := uint(0), uint(errENOTSUP)
	p.Syscalls = append(p.Syscalls,
		rule([]string{"chmod", "fchmod"}, specs.ActAllow, nil, "mcpolicy: a mode without setuid, setgid, group or other write (the rest answers EPERM)", masked(modeCalls["chmod"], setIDWrite, 0)),
		rule([]string{"fchmodat", "fchmodat2"}, specs.ActAllow, nil, "mcpolicy: a mode without setuid, setgid, group or other write (the rest answers EPERM)", masked(modeCalls["fchmodat"], setIDWrite, 0)),
		rule([]string{"umask"}, specs.ActAllow, nil, "mcpolicy: a umask that keeps group and other write off", masked(0, modeGroupOtherWrite, modeGroupOtherWrite)))
	for _, v := range []uint64{0, 0o002, 0o020} {
		p.Syscalls = append(p.Syscalls, rule([]string{"umask"}, specs.ActErrno, &zero, "mcpolicy: a umask that lets group or other write is not run and returns 0 (umask cannot fail)", masked(0, modeGroupOtherWrite, v)))
	}
	p.Syscalls = append(p.Syscalls, rule([]string{"fsetxattr", "lsetxattr", "setxattr", "setxattrat"}, specs.ActErrno, &notsup, "mcpolicy: POSIX ACLs grant write as modes do; ENOTSUP, as a filesystem without xattrs"))
	return p
}
