// Package seccomp is the seccomp filter of the host backends: bwrap loads
// it from the descriptor given to --seccomp, the Landlock launcher loads it
// (Load) on the thread that then execs the server. The server is an
// attacker with code execution inside its grants, so what the mount
// namespace and Landlock do not model — the kernel keyring, terminals,
// System V IPC, unix sockets without a mount namespace, and the kernel's
// own attack surface — is taken away here.
//
// # The filter
//
// It is data (data.go): every syscall that golang.org/x/sys names on amd64
// and arm64 is allowed, denied with an errno, or decided by its arguments,
// each with its reason; the tests fail on a syscall the data does not
// decide. compile (bpf.go) turns it into classic BPF:
//
//   - another architecture (i386's int 0x80 from an x86_64 process, 32-bit
//     arm), or the x32 ABI: the process is killed (SECCOMP_RET_KILL_PROCESS);
//   - a balanced tree over the syscall number, so a call costs ~9
//     comparisons (and the kernel's action cache skips the filter for
//     syscalls allowed whatever their arguments);
//   - numbers the table does not name answer EPERM, as Docker's default;
//     numbers above the table's highest (syscalls newer than the table)
//     answer ENOSYS, so libc falls back to the older call as it does on an
//     older kernel (EPERM there broke glibc's faccessat2 under old Docker).
//
// The reference is Docker's default profile (github.com/moby/profiles/seccomp
// v0.3.0) for a process with NO capabilities: its capability-conditional
// rules are left out, and so are its kernel-version rules (ptrace and
// process_vm_* are allowed by Docker only on kernels >= 4.8; this filter is
// the same bytes on every kernel, so they are denied). Docker's argument
// rules: clone without namespace flags is kept, tested on the low 32 bits
// the kernel reads; clone3 answers ENOSYS (its flags are behind a pointer);
// personality keeps Docker's five values; socket keeps only AF_UNIX,
// AF_INET, AF_INET6 and AF_NETLINK of Docker's ~30 families (the others
// answer EAFNOSUPPORT); socketcall, where a family hides behind a pointer,
// does not exist on amd64 or arm64. TestAtLeastAsStrictAsDocker runs both
// on every syscall and on pairs of argument values, and fails if this
// filter allows a call Docker's denies.
//
// Beyond Docker's profile, it takes away: the keyring (keyctl, add_key,
// request_key: ENOSYS, as on a kernel without CONFIG_KEYS, so libraries fall
// back rather than fail; Docker answers EPERM); ioctl TIOCSTI, TIOCLINUX
// and TIOCSETD (EPERM; line disciplines are kernel code with a history of
// escalations), compared on the request's low 32 bits because the kernel ignores
// the upper half (a 64-bit comparison is bypassed by TIOCSTI|1<<32, which
// the kernel tests show working without the filter); System V IPC and
// POSIX message queues (ENOSYS: the Landlock launcher has no IPC namespace);
// socketpair of any family but AF_UNIX; modes that give other users write:
// chmod, fchmod, fchmodat and fchmodat2 with S_IWGRP or S_IWOTH (EPERM), a
// umask without both (not run, returns 0: umask cannot fail), and setting
// extended attributes, where POSIX ACLs grant write too (ENOTSUP, as a
// filesystem without xattrs); with DenyUnixSockets, every
// AF_UNIX socket(2) (EACCES) and datagram socketpairs (a datagram socket of
// a pair can still sendto a named socket on the host); and, with
// NoNamespaces (the Landlock launcher without user namespaces), what
// Landlock does not hook there: metadata changes (chmod, chown, utimes,
// xattrs, by path or descriptor: EPERM), listen(2), MSG_FASTOPEN sends and sock_diag
// sockets (EACCES), and reading another process's limits or nice value
// (prlimit64, getpriority: EPERM).
//
// A filter sees numbers, never paths: DenyUnixSockets refuses pathname and
// abstract unix sockets alike, a group-writable mode is refused in the
// scratch as in a grant, and which files or sockets a process reaches
// stays the mount namespace's and Landlock's business. Nor does it stop
// kill(2) of the user's other processes where there is no PID namespace
// (Landlock ABI 6 scopes signals).
//
// # Why no library compiles it
//
// github.com/elastic/go-seccomp-bpf v1.6.0 compiles names and argument
// conditions to BPF in pure Go, but: a call from another architecture gets
// the policy's default action rather than a kill; its Equal compares all 64
// bits of an argument, so a deny rule on ioctl's request is bypassed by
// setting the upper half; it has one default action, where this filter
// needs EPERM below the table's highest number and ENOSYS above; and it
// links the tables of four architectures and golang.org/x/net/bpf (+155 KB
// in mcpolicy-launch for a two-rule policy, where this package adds
// +56 KB). Docker's profile is Go data, but building it at run time links
// the OCI runtime-spec types (+74 KB) and asks uname for kernel-version
// rules, which would make the program differ between machines. So
// moby/profiles is a test dependency only, and the compiler is this
// package's: seven BPF instructions, checked by an interpreter in the
// tests and by the kernel under bwrap and Load.
//
// # Updating
//
// zsysnum.go comes from golang.org/x/sys: after updating it, run
// go generate ./runtime/seccomp (MCPOLICY_UPDATE=1 go test -run TestSyscallTables
// ./seccomp), then decide each new syscall in data.go.
package seccomp

//go:generate env MCPOLICY_UPDATE=1 go test -run TestSyscallTables .
