package seccomp

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// action is a seccomp return value (SECCOMP_RET_*).
type action uint32

const (
	actKillProcess action = 0x80000000 // SECCOMP_RET_KILL_PROCESS (Linux 4.14; older kernels kill the thread)
	actAllow       action = 0x7fff0000 // SECCOMP_RET_ALLOW
	retErrno       action = 0x00050000 // SECCOMP_RET_ERRNO | errno
)

// The errno actions the data uses (constants, so the data needs no code
// to initialise).
const (
	actEPERM        = retErrno | errEPERM
	actEACCES       = retErrno | errEACCES
	actENOSYS       = retErrno | errENOSYS
	actEAFNOSUPPORT = retErrno | errEAFNOSUPPORT
	actENOTSUP      = retErrno | errENOTSUP
	// actNoop returns 0 without running the call (SECCOMP_RET_ERRNO with
	// errno 0): for umask, which cannot fail.
	actNoop = retErrno
)

func (a action) String() string {
	switch a {
	case actAllow:
		return "ALLOW"
	case actKillProcess:
		return "KILL"
	case actEPERM:
		return "EPERM"
	case actEACCES:
		return "EACCES"
	case actENOSYS:
		return "ENOSYS"
	case actEAFNOSUPPORT:
		return "EAFNOSUPPORT"
	case actENOTSUP:
		return "ENOTSUP"
	case actNoop:
		return "0 (not run)"
	}
	return fmt.Sprintf("0x%08x", uint32(a))
}

// archInfo is one architecture the filter supports: its AUDIT_ARCH_ value
// and the syscall table generated from golang.org/x/sys (zsysnum.go).
type archInfo struct {
	goarch   string
	audit    uint32
	x32      bool // x86_64: syscall numbers with bit 30 set are the x32 ABI
	syscalls []sysnum
}

type sysnum struct {
	name string
	nr   uint32
}

var (
	archAMD64 = archInfo{goarch: "amd64", audit: 0xc000003e, x32: true, syscalls: sysAMD64} // AUDIT_ARCH_X86_64
	archARM64 = archInfo{goarch: "arm64", audit: 0xc00000b7, syscalls: sysARM64}            // AUDIT_ARCH_AARCH64
)

func (a *archInfo) lookup(name string) (uint32, bool) {
	i := sort.Search(len(a.syscalls), func(i int) bool { return a.syscalls[i].name >= name })
	if i < len(a.syscalls) && a.syscalls[i].name == name {
		return a.syscalls[i].nr, true
	}
	return 0, false
}

// maxNr is the highest syscall number the table knows: anything above it is
// newer than the table and answers ENOSYS.
func (a *archInfo) maxNr() uint32 {
	var m uint32
	for _, s := range a.syscalls {
		m = max(m, s.nr)
	}
	return m
}

const x32Bit = 0x40000000 // __X32_SYSCALL_BIT

// Classic BPF, as seccomp runs it (linux/filter.h, linux/bpf_common.h).
const (
	bpfLdWAbs = 0x20 // BPF_LD|BPF_W|BPF_ABS
	bpfAndK   = 0x54 // BPF_ALU|BPF_AND|BPF_K
	bpfJa     = 0x05 // BPF_JMP|BPF_JA
	bpfJeqK   = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
	bpfJgeK   = 0x35 // BPF_JMP|BPF_JGE|BPF_K
	bpfJsetK  = 0x45 // BPF_JMP|BPF_JSET|BPF_K
	bpfRetK   = 0x06 // BPF_RET|BPF_K

	maxInsns = 4096 // BPF_MAXINSNS
)

// Offsets in struct seccomp_data. Both supported architectures are little
// endian, so an argument's low half comes first.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

func argLo(i uint8) uint32 { return offArgs + 8*uint32(i) }
func argHi(i uint8) uint32 { return offArgs + 8*uint32(i) + 4 }

// insn is struct sock_filter.
type insn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

func ld(off uint32) insn { return insn{code: bpfLdWAbs, k: off} }
func ret(a action) insn  { return insn{code: bpfRetK, k: uint32(a)} }
func jump(code uint16, k uint32, jt, jf int) insn {
	if jt > 255 || jf > 255 {
		panic("seccomp: conditional jump too far") // callers check: a bug
	}
	return insn{code: code, jt: uint8(jt), jf: uint8(jf), k: k}
}

// compile builds the filter for one architecture:
//
//	load arch; not this architecture: KILL
//	load nr; a balanced tree of JGE over the syscall numbers, whose leaves
//	are RET (a run of numbers with one action) or a syscall's argument checks.
//
// Numbers the table does not name answer EPERM up to the table's highest,
// ENOSYS above it (newer syscalls, so libc falls back), except the x32 ABI
// on x86_64, which is another architecture and is killed.
func compile(a *archInfo, o Options) ([]insn, error) {
	acts, codes, err := decide(a, o)
	if err != nil {
		return nil, err
	}
	leaves := runs(a, acts, codes)
	prog := []insn{
		ld(offArch),
		jump(bpfJeqK, a.audit, 1, 0),
		ret(actKillProcess),
		ld(offNr),
	}
	prog = append(prog, tree(leaves, 0, len(leaves))...)
	if len(prog) > maxInsns {
		return nil, fmt.Errorf("seccomp: the filter has %d instructions, more than the kernel's %d", len(prog), maxInsns)
	}
	return prog, nil
}

// decide is what the data says of each syscall number up to the table's
// highest: its action (0 where the data says nothing), and its argument
// checks where it has some. A number decided twice is the data's bug.
func decide(a *archInfo, o Options) ([]action, [][]insn, error) {
	top := a.maxNr()
	acts := make([]action, top+1) // 0: not decided by the data
	codes := make([][]insn, top+1)
	set := func(name string, act action, code []insn) error {
		nr, ok := a.lookup(name)
		if !ok {
			return nil // not a syscall on this architecture
		}
		if acts[nr] != 0 {
			return fmt.Errorf("seccomp: %s is decided twice", name)
		}
		acts[nr] = act
		if len(code) > 1 {
			codes[nr] = code
		}
		return nil
	}
	for _, g := range allowed {
		for _, n := range g.names {
			if err := set(n, g.action, nil); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, g := range denied {
		for _, n := range g.names {
			if err := set(n, g.action, nil); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, r := range argRules {
		if _, ok := a.lookup(r.name); !ok {
			continue // open, chmod, mkdir... exist on amd64 only
		}
		code, err := r.compile(o)
		if err != nil {
			return nil, nil, err
		}
		if err := set(r.name, action(code[len(code)-1].k), code); err != nil {
			return nil, nil, err
		}
	}
	return acts, codes, nil
}

// leaf is a run of syscall numbers the tree tells apart from its
// neighbours.
type leaf struct {
	lo   uint32 // first number of the run; it ends where the next begins
	act  action
	code []insn // argument checks, or nil for RET act
}

// runs folds the numbers into leaves, in order: neighbours with the same
// action and no argument checks share one. Undecided numbers answer
// EPERM, those above the table ENOSYS; on x86_64 the x32 ABI is killed
// and negative numbers answer ENOSYS.
func runs(a *archInfo, acts []action, codes [][]insn) []leaf {
	top := uint32(len(acts) - 1) // the table's highest
	var leaves []leaf
	add := func(nr uint32, act action, code []insn) {
		if n := len(leaves); n > 0 && code == nil && leaves[n-1].code == nil && leaves[n-1].act == act {
			return // extends the run
		}
		leaves = append(leaves, leaf{lo: nr, act: act, code: code})
	}
	for nr := uint32(0); nr <= top; nr++ {
		switch {
		case codes[nr] != nil:
			add(nr, 0, codes[nr])
		case acts[nr] != 0:
			add(nr, acts[nr], nil)
		default:
			add(nr, actEPERM, nil)
		}
	}
	add(top+1, actENOSYS, nil)
	if a.x32 {
		add(x32Bit, actKillProcess, nil)
		add(0x80000000, actENOSYS, nil) // negative numbers (-1 is "skip" to a tracer): no such syscall
	}
	return leaves
}

// tree emits leaves[i:j] as JGE nodes over their first numbers.
func tree(leaves []leaf, i, j int) []insn {
	if j-i == 1 {
		if leaves[i].code != nil {
			return leaves[i].code
		}
		return []insn{ret(leaves[i].act)}
	}
	m := (i + j) / 2
	left, right := tree(leaves, i, m), tree(leaves, m, j)
	var out []insn
	if len(left) <= 255 {
		out = append(out, jump(bpfJgeK, leaves[m].lo, len(left), 0))
	} else { // too far for a conditional jump: go through a JA
		out = append(out, jump(bpfJgeK, leaves[m].lo, 0, 1), insn{code: bpfJa, k: uint32(len(left))})
	}
	out = append(out, left...)
	return append(out, right...)
}

// compile emits one argRule's checks for o: each check's conditions, then
// RET of its action, and at the end RET of otherwise. A rule that has no
// check for o is a single RET.
func (r *argRule) compile(o Options) ([]insn, error) {
	var out []insn
	for _, c := range r.checks {
		if !c.when.applies(o) {
			continue
		}
		// Build the check backwards: each condition jumps, when it does
		// not hold, past everything after it, the RET included.
		code := []insn{ret(c.action)}
		for i := len(c.conds) - 1; i >= 0; i-- {
			cc, err := c.conds[i].compile(len(code))
			if err != nil {
				return nil, fmt.Errorf("seccomp: %s: %w", r.name, err)
			}
			code = append(cc, code...)
		}
		out = append(out, code...)
	}
	if !r.otherwise.when.applies(o) {
		return nil, fmt.Errorf("seccomp: %s: otherwise must always apply", r.name)
	}
	return append(out, ret(r.otherwise.action)), nil
}

// compile emits the test of one condition. It falls through when the
// condition holds, and skips the next after instructions when it does not.
func (c cond) compile(after int) ([]insn, error) {
	if after+len(c.set)+1 > 255 {
		return nil, fmt.Errorf("check too long for a conditional jump")
	}
	var out []insn
	switch c.op {
	case opMaskNone:
		out = []insn{ld(argLo(c.arg)), jump(bpfJsetK, c.mask, after, 0)}
	case opLowIn, opIn64:
		if len(c.set) == 0 {
			return nil, fmt.Errorf("empty set")
		}
		n := len(c.set)
		if c.op == opIn64 {
			// upper half zero; else skip the load, the AND (none here) and the n tests
			out = append(out, ld(argHi(c.arg)), jump(bpfJeqK, 0, 0, 1+n+after))
		}
		out = append(out, ld(argLo(c.arg)))
		if c.op == opLowIn && c.mask != low32 {
			out = append(out, insn{code: bpfAndK, k: c.mask})
		}
		for i, v := range c.set {
			if i < n-1 {
				out = append(out, jump(bpfJeqK, v, n-1-i, 0))
			} else {
				out = append(out, jump(bpfJeqK, v, 0, after))
			}
		}
	default:
		return nil, fmt.Errorf("unknown operator %d", c.op)
	}
	return out, nil
}

// encode is the program as the kernel (and bwrap's --seccomp) reads it:
// struct sock_filter, 8 bytes each, in host byte order.
func encode(prog []insn) []byte {
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = binary.NativeEndian.AppendUint16(b, in.code)
		b = append(b, in.jt, in.jf)
		b = binary.NativeEndian.AppendUint32(b, in.k)
	}
	return b
}
