package seccomp

import "sort"

// The filter is this data, compiled by bpf.go. Every syscall the syscall
// tables (zsysnum.go) name, on amd64 and on arm64, is decided here exactly
// once, with the reason beside it: allowed (allowed), denied with an errno
// (denied), or decided by its arguments (argRules). TestDataIsComplete
// enforces that, so a syscall added to the tables by an update of
// golang.org/x/sys is a test failure until someone decides it here.
//
// The reference is Docker's default profile (github.com/moby/profiles/seccomp
// v0.3.0, DefaultProfile) as it applies to a process with no capabilities on
// amd64 and arm64: TestAtLeastAsStrictAsDocker evaluates both, syscall by
// syscall and argument by argument, and fails if this filter allows anything
// Docker's denies. Where this filter is stricter, the reason says so.
//
// Errnos follow one rule: a whole facility that is taken away answers as a
// kernel built without it does (ENOSYS, or EAFNOSUPPORT for an address
// family), so libraries that probe for it fall back as they would on such a
// kernel; one use of a facility that is otherwise there answers EPERM (or
// EACCES where the man page names that errno for "not permitted").

// Errnos, with their Linux values (the same on amd64 and arm64; the test
// checks them against golang.org/x/sys/unix). They are spelt out so the
// data compiles on every GOOS.
const (
	errEPERM        = 1
	errEACCES       = 13
	errENOSYS       = 38
	errEAFNOSUPPORT = 97
	errENOTSUP      = 95 // EOPNOTSUPP
)

// Argument values used by argRules (Linux UAPI; checked against x/sys/unix).
const (
	afUNIX    = 1
	afINET    = 2
	afINET6   = 10
	afNETLINK = 16

	netlinkSockDiag = 4 // NETLINK_SOCK_DIAG: lists the sockets of the network namespace

	msgFastOpen = 0x20000000 // MSG_FASTOPEN: sendto/sendmsg connect as they send

	sockStream    = 1
	sockSeqpacket = 5
	sockTypeMask  = 0xf // SOCK_TYPE_MASK: the rest of socket(2)'s type is SOCK_CLOEXEC|SOCK_NONBLOCK

	// S_ISUID|S_ISGID: the mode bits that make a file run as its owner
	// (or group) on the host.
	modeSetID = 0o4000 | 0o2000
	// S_IWGRP|S_IWOTH: the mode bits that let other local users write.
	modeGroupOtherWrite = 0o020 | 0o002

	prioProcess      = 0 // PRIO_PROCESS
	ioprioWhoProcess = 1 // IOPRIO_WHO_PROCESS

	tiocSTI   = 0x5412
	tiocLINUX = 0x541C
	tiocSETD  = 0x5423

	// CLONE_NEWNS|CLONE_NEWUTS|CLONE_NEWIPC|CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNET|CLONE_NEWCGROUP,
	// the mask Docker's profile uses for a process without CAP_SYS_ADMIN.
	cloneNewNamespaces = 0x00020000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x02000000
)

// A group is syscalls that share an action and a reason. Names are sorted
// within a group and unique across all groups and argRules; a name that
// does not exist on an architecture is ignored there (open, fork,
// arch_prctl... exist on amd64 only).
type group struct {
	names  []string
	action action
	reason string
}

// allowed is the allowlist: Docker's default profile for a process without
// capabilities, grouped by purpose, less what denied takes away.
var allowed = []group{
	{action: actAllow, reason: "I/O on descriptors the process already holds; what a descriptor may reach was decided when it was opened",
		names: []string{"cachestat", "close", "close_range", "copy_file_range", "dup", "dup2", "dup3", "fadvise64", "fallocate", "fcntl", "fdatasync", "flock", "fsync", "ftruncate", "lseek", "pread64", "preadv", "preadv2", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readv", "sendfile", "splice", "sync", "sync_file_range", "syncfs", "tee", "vmsplice", "write", "writev"}},
	{action: actAllow, reason: "paths: opening, creating, renaming, linking and inspecting files. What a path reaches is confined by the mount namespace (bwrap) or the Landlock ruleset, which a filter cannot see",
		names: []string{"access", "chdir", "faccessat", "faccessat2", "fchdir", "fstat", "fstatfs", "getcwd", "getdents", "getdents64", "link", "linkat", "lstat", "name_to_handle_at", "newfstatat", "readlink", "readlinkat", "rename", "renameat", "renameat2", "rmdir", "stat", "statfs", "statx", "symlink", "symlinkat", "truncate", "unlink", "unlinkat"}},
	{action: actAllow, reason: "extended attributes, under the same confinement as the paths and descriptors they name",
		names: []string{"fgetxattr", "flistxattr", "getxattr", "getxattrat", "lgetxattr", "listxattr", "listxattrat", "llistxattr"}},
	{action: actAllow, reason: "the process's own memory: allocation, protection, locking (bounded by RLIMIT_MEMLOCK), shared memory through memfd",
		names: []string{"brk", "madvise", "map_shadow_stack", "membarrier", "memfd_create", "memfd_secret", "mincore", "mlock", "mlock2", "mlockall", "mmap", "mprotect", "mremap", "mseal", "msync", "munlock", "munlockall", "munmap", "pkey_alloc", "pkey_free", "pkey_mprotect", "remap_file_pages"}},
	{action: actAllow, reason: "processes and threads: running programs, waiting for children, thread-local storage and the runtimes' thread bookkeeping (clone itself is in argRules)",
		names: []string{"arch_prctl", "execve", "execveat", "exit", "exit_group", "fork", "get_robust_list", "get_thread_area", "getcpu", "getpgid", "getpgrp", "getpid", "getppid", "getsid", "gettid", "modify_ldt", "pidfd_open", "process_mrelease", "restart_syscall", "rseq", "set_robust_list", "set_thread_area", "set_tid_address", "setpgid", "setsid", "uretprobe", "vfork", "wait4", "waitid"}},
	{action: actAllow, reason: "signals; which processes can be signalled is the PID namespace's (bwrap) or Landlock's signal scope (ABI 6), not this filter's",
		names: []string{"alarm", "kill", "pause", "pidfd_send_signal", "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo", "sigaltstack", "signalfd", "signalfd4", "tgkill", "tkill"}},
	{action: actAllow, reason: "clocks and timers; setting the clock needs CAP_SYS_TIME (clock_settime, settimeofday are denied), adjtimex and clock_adjtime only read without it",
		names: []string{"adjtimex", "clock_adjtime", "clock_getres", "clock_gettime", "clock_nanosleep", "getitimer", "gettimeofday", "nanosleep", "setitimer", "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime", "timer_settime", "timerfd_create", "timerfd_gettime", "timerfd_settime", "times"}},
	{action: actAllow, reason: "waiting and event loops (epoll, poll, futexes, eventfd, inotify, pipes): node's libuv, Python's asyncio and Go's netpoller",
		names: []string{"epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "fanotify_mark", "futex", "futex_requeue", "futex_wait", "futex_waitv", "futex_wake", "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "pipe", "pipe2", "poll", "ppoll", "pselect6", "select"}},
	{action: actAllow, reason: "operations on sockets the process holds; creating one is socket and socketpair (argRules), reaching anything is the network namespace's or Landlock's",
		names: []string{"accept", "accept4", "bind", "connect", "getpeername", "getsockname", "getsockopt", "recvfrom", "recvmmsg", "recvmsg", "setsockopt", "shutdown"}},
	{action: actAllow, reason: "credentials: without capabilities a process can only read its ids or drop and swap among those it already has",
		names: []string{"capget", "capset", "getegid", "geteuid", "getgid", "getgroups", "getresgid", "getresuid", "getuid", "setfsgid", "setfsuid", "setgid", "setgroups", "setregid", "setresgid", "setresuid", "setreuid", "setuid"}},
	{action: actAllow, reason: "the process's own limits, and system facts (uname, sysinfo, randomness); raising a limit needs a capability the process lacks. Limits, priorities and scheduling of a process named by pid are in argRules",
		names: []string{"getrandom", "getrlimit", "getrusage", "sched_get_priority_max", "sched_get_priority_min", "sched_yield", "setrlimit", "sysinfo", "uname"}},
	{action: actAllow, reason: "reading another process's I/O priority, CPU affinity or scheduling policy: facts, not a way to change them (runtimes read their threads' affinity and policy by tid: .NET, glibc's pthread_getaffinity_np and pthread_getschedparam, so pid 0 alone would break them). Without a PID namespace they tell which of the host user's processes exist and how they are scheduled: docs/backends.md lists that",
		names: []string{"ioprio_get", "sched_getaffinity", "sched_getattr", "sched_getparam", "sched_getscheduler", "sched_rr_get_interval"}},
	{action: actAllow, reason: "Linux native AIO on descriptors the process holds (not io_uring: its operations bypass this filter, see denied)",
		names: []string{"io_cancel", "io_destroy", "io_getevents", "io_pgetevents", "io_setup", "io_submit"}},
	{action: actAllow, reason: "the process narrowing itself further (Landlock, seccomp, prctl: the privileged prctl operations need capabilities), and reading its own mount namespace's table as /proc/self/mountinfo does",
		names: []string{"landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "listmount", "prctl", "seccomp", "statmount"}},
}

// denied is every other syscall the tables name, with its errno and why.
var denied = []group{
	{action: actENOSYS, reason: "the kernel keyring is not confined by mount, PID or network namespaces nor by Landlock: keyctl would reach the invoking user's session and user keyrings (tokens, Kerberos tickets, fscrypt keys). ENOSYS, as on a kernel without CONFIG_KEYS, so libkeyutils and krb5's KEYRING cache fall back instead of failing (Docker: EPERM)",
		names: []string{"add_key", "keyctl", "request_key"}},
	{action: actENOSYS, reason: "System V IPC and POSIX message queues are named in the IPC namespace, not by paths: the Landlock launcher has no IPC namespace, so they would reach the host user's shared memory segments (X11 MIT-SHM holds window contents), semaphores and queues, which no policy grants. Stricter than Docker (whose containers have their own IPC namespace); ENOSYS as on a kernel without CONFIG_SYSVIPC and CONFIG_POSIX_MQUEUE",
		names: []string{"mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink", "msgctl", "msgget", "msgrcv", "msgsnd", "semctl", "semget", "semop", "semtimedop", "shmat", "shmctl", "shmdt", "shmget"}},
	{action: actEPERM, reason: "reading, writing or comparing another process's memory and descriptors. Docker allows ptrace and process_vm_* only on kernels >= 4.8 (before, a tracer could bypass seccomp) and the rest with CAP_SYS_PTRACE; this filter is the same bytes on every kernel, so they are denied, and no runtime the launcher serves needs them",
		names: []string{"kcmp", "pidfd_getfd", "process_madvise", "process_vm_readv", "process_vm_writev", "ptrace"}},
	{action: actEPERM, reason: "the mount table and namespaces: the sandbox's view of the filesystem is fixed by the launcher and must stay so (Docker: CAP_SYS_ADMIN, CAP_SYS_CHROOT)",
		names: []string{"chroot", "fsconfig", "fsmount", "fsopen", "fspick", "mount", "mount_setattr", "move_mount", "open_tree", "pivot_root", "setns", "umount2", "unshare"}},
	{action: actEPERM, reason: "io_uring: a large kernel attack surface, and the operations it runs (openat, socket, connect...) are never seen by seccomp, so it would bypass every argument rule here (Docker denies it)",
		names: []string{"io_uring_enter", "io_uring_register", "io_uring_setup"}},
	{action: actEPERM, reason: "eBPF, perf events, the kernel log, fanotify and LSM attributes: observing or instrumenting the host kernel (Docker: CAP_BPF, CAP_PERFMON, CAP_SYSLOG, CAP_SYS_ADMIN)",
		names: []string{"bpf", "fanotify_init", "lookup_dcookie", "lsm_get_self_attr", "lsm_list_modules", "lsm_set_self_attr", "perf_event_open", "syslog"}},
	{action: actEPERM, reason: "userfaultfd stalls a kernel copy on a chosen page, a classic step of kernel exploits (Docker denies it)",
		names: []string{"userfaultfd"}},
	{action: actEPERM, reason: "open_by_handle_at opens any file of a filesystem by handle, past every path rule (the 2014 'shocker' container escape; Docker: CAP_DAC_READ_SEARCH)",
		names: []string{"open_by_handle_at"}},
	{action: actEPERM, reason: "administering the machine: modules, kexec, reboot, swap, the clock, host and domain names, quotas, accounting, I/O ports, the terminal hang-up (Docker: each needs its capability)",
		names: []string{"acct", "clock_settime", "delete_module", "finit_module", "init_module", "ioperm", "iopl", "kexec_file_load", "kexec_load", "quotactl", "quotactl_fd", "reboot", "setdomainname", "sethostname", "settimeofday", "swapoff", "swapon", "vhangup"}},
	{action: actEPERM, reason: "NUMA memory policy; migrate_pages and move_pages act on other processes (Docker: CAP_SYS_NICE)",
		names: []string{"get_mempolicy", "mbind", "migrate_pages", "move_pages", "set_mempolicy", "set_mempolicy_home_node"}},
	{action: actENOSYS, reason: "obsolete or never implemented by current kernels (_sysctl, the old module and NFS interfaces, the reserved slots); ENOSYS is the kernel's own answer",
		names: []string{"_sysctl", "afs_syscall", "create_module", "get_kernel_syms", "getpmsg", "nfsservctl", "putpmsg", "query_module", "security", "sysfs", "tuxcall", "uselib", "ustat", "vserver"}},
	{action: actENOTSUP, reason: "setting extended attributes: system.posix_acl_access and system.posix_acl_default grant write to other users as a mode does (setfacl -m o::rwx), and a filter cannot read the attribute's name. ENOTSUP, as on a filesystem without xattrs, so cp -a, rsync -X and tar --xattrs carry on without them; user.* attributes (the desktop's tags, the download origin) and security.capability are refused with them",
		names: []string{"fsetxattr", "lsetxattr", "setxattr", "setxattrat"}},
	{action: actENOSYS, reason: "newer than Docker's profile and not reviewed yet (file attributes by path, the uprobe trampoline, namespace listing, mount trees with attributes, rseq slices); ENOSYS so a library that tries one falls back to the older call, as on an older kernel",
		names: []string{"file_getattr", "file_setattr", "listns", "open_tree_attr", "rseq_slice_yield", "uprobe"}},
}

// An argRule decides one syscall by its arguments: the first check whose
// conditions all hold gives the action; otherwise, otherwise does. A check
// can apply only with, or only without, DenyUnixSockets, or only with
// NoNamespaces; otherwise always applies.
type argRule struct {
	name      string
	checks    []check
	otherwise outcome
}

type check struct {
	conds []cond
	outcome
}

type outcome struct {
	action action
	what   string // how Rules names it, e.g. "ioctl(TIOCSTI)"
	reason string
	when   when
}

type when uint8

const (
	always when = iota
	withDenyUnix
	withoutDenyUnix
	withoutNamespaces // Options.NoNamespaces
)

func (w when) applies(o Options) bool {
	switch w {
	case withDenyUnix:
		return o.DenyUnixSockets
	case withoutDenyUnix:
		return !o.DenyUnixSockets
	case withoutNamespaces:
		return o.NoNamespaces
	}
	return true
}

// A cond tests one argument. Arguments the kernel reads as int or unsigned
// int (ioctl's request, socket's family and type) are compared on their low
// 32 bits only where a match DENIES: the kernel ignores the upper half, so a
// deny rule comparing all 64 bits would be bypassed by setting them
// (ioctl(fd, TIOCSTI|1<<32) is TIOCSTI to the kernel). Where a match ALLOWS,
// the upper half must be zero, as in Docker's profile: stricter, and never
// bypassable.
type cond struct {
	arg  uint8
	op   op
	mask uint32   // opLowIn: applied to the low half first; opMaskNone: the bits that must be clear
	set  []uint32 // opLowIn, opIn64
}

type op uint8

const (
	opLowIn    op = iota // uint32(args[arg]) & mask is in set
	opIn64               // args[arg] >> 32 == 0 and uint32(args[arg]) is in set
	opMaskNone           // uint32(args[arg]) & mask == 0
)

const low32 = 0xffffffff

// setID refuses S_ISUID and S_ISGID in the mode argument (index arg) of a
// call that sets or creates a file's mode: a file the server writes in a
// grant is the invoking user's on the host (root's, when a client runs as
// root), and a setuid bit would make it run as them for anyone.
func setID(name string, arg uint8) argRule {
	return argRule{name: name,
		checks: []check{{conds: []cond{{arg: arg, op: opMaskNone, mask: modeSetID}}, outcome: outcome{action: actAllow,
			reason: "setting or creating a file's mode without the setuid and setgid bits; what a path reaches is the mount namespace's or Landlock's"}}},
		otherwise: outcome{action: actEPERM, what: name + "(mode with S_ISUID or S_ISGID)",
			reason: "a setuid or setgid file written in a grant would run as its host owner (the invoking user, root when a client runs as root) for whoever starts it: systemd's RestrictSUIDSGID, not in Docker's profile"}}
}

// metaReason is why, without namespaces, a call that changes a file's
// metadata is refused: Landlock hooks opening, creating, removing and
// truncating a file, never chmod, chown, utimes or xattrs. By path they
// reach every file of the invoking user on the host; by descriptor, every
// file the ruleset lets the process open, read-only grants included.
const metaReason = "Landlock hooks opening, creating, removing and truncating files, not changing their mode, owner, times or extended attributes: without a mount namespace (the Landlock launcher without user namespaces) these calls reach, by path, every file of the invoking user on the host (a red team made ~/.ssh/id_ed25519 world-readable and ~/.bashrc and the policy world-writable), and by descriptor every file the process may open, its read-only grants included (a red team made a read-only grant's folder world-writable and set an ACL on its files). With a mount namespace a read-only grant answers EROFS"

// withoutNamespaces is the check that refuses name without namespaces
// (metaReason).
func metadataWithoutNamespaces(name string) check {
	return check{outcome: outcome{action: actEPERM, what: name + "(without namespaces)", when: withoutNamespaces, reason: metaReason}}
}

// metadata is an argRule for a call that changes a file's metadata:
// refused without namespaces, allowed otherwise.
func metadata(name string) argRule {
	return argRule{name: name, checks: []check{metadataWithoutNamespaces(name)},
		otherwise: outcome{action: actAllow, reason: "changing a file's metadata, under the same confinement as its path: the mount namespace's (bwrap, the Landlock launcher with namespaces)"}}
}

// writeReason is why a mode with group or other write is refused.
const writeReason = "a folder or file made group- or world-writable in a read-write grant stays so on the host, where every local user can then plant files in it (a server's chmod 777 of a grant's folder did that under bwrap, docker and podman). A filter sees the mode, not the path, so this holds in the scratch too (chmod 1777 of a scratch folder is refused), and a file that is already group-writable cannot be given its own mode again (an editor's save that restores 0664 gets EPERM). umask keeps creation from doing the same"

// mode is a call that sets a mode (argument index arg): refused without
// namespaces, refused with S_ISUID or S_ISGID (setID) or with group or
// other write.
func mode(name string, arg uint8) argRule {
	r := setID(name, arg)
	r.checks = []check{metadataWithoutNamespaces(name),
		{conds: []cond{{arg: arg, op: opMaskNone, mask: modeSetID | modeGroupOtherWrite}}, outcome: outcome{action: actAllow,
			reason: "setting a mode without the setuid and setgid bits and without group or other write; what a path reaches is the mount namespace's"}},
		{conds: []cond{{arg: arg, op: opMaskNone, mask: modeSetID}}, outcome: outcome{action: actEPERM, what: name + "(mode with S_IWGRP or S_IWOTH)", reason: writeReason}}}
	return r
}

// fastOpen refuses a send that connects (MSG_FASTOPEN in flags, argument
// index arg) without namespaces: Landlock hooks connect(2), not the
// connect a TCP Fast Open send makes.
func fastOpen(name string, arg uint8) argRule {
	return argRule{name: name,
		checks: []check{
			{conds: []cond{{arg: arg, op: opMaskNone, mask: msgFastOpen}}, outcome: outcome{action: actAllow, when: withoutNamespaces,
				reason: "a send on a socket that is connected (or a datagram's, which Landlock does not filter and landlock-tcp-only says so)"}},
			{outcome: outcome{action: actEACCES, what: name + "(MSG_FASTOPEN, without namespaces)", when: withoutNamespaces,
				reason: "without a network namespace TCP is denied by Landlock's connect right, which a TCP Fast Open send bypasses: it connects as it sends, and reached a host listener from a server whose network is none (red team). EACCES, as Landlock answers connect"}}},
		otherwise: outcome{action: actAllow, reason: "sending on sockets the process holds; what they reach is the network namespace's"}}
}

// argRules are sorted by name (byName), each name once.
var argRules = byName([]argRule{
	mode("chmod", 1), mode("fchmod", 1), mode("fchmodat", 2), mode("fchmodat2", 2),
	metadata("chown"), metadata("fchown"), metadata("lchown"), metadata("fchownat"),
	metadata("utime"), metadata("utimes"), metadata("futimesat"), metadata("utimensat"),
	metadata("removexattr"), metadata("lremovexattr"), metadata("fremovexattr"), metadata("removexattrat"),
	{name: "umask",
		checks: []check{{conds: []cond{{arg: 0, op: opLowIn, mask: modeGroupOtherWrite, set: []uint32{modeGroupOtherWrite}}}, outcome: outcome{action: actAllow,
			reason: "a umask that keeps group and other write off what the process creates (the launcher starts the server with one)"}}},
		otherwise: outcome{action: actNoop, what: "umask(without S_IWGRP or S_IWOTH)",
			reason: "under umask 0, mkdir -m 777 and open(O_CREAT, 0666) make world-writable folders and files in a grant without chmod (see chmod). The call is not run and returns 0, not EPERM: umask cannot fail, so callers do not check, and node's process.umask() calls umask(0) then restores what it returned, where -1 would become a 0777 mask; the 0 it returns is not the mask in force"}},
	fastOpen("sendto", 3), fastOpen("sendmsg", 2), fastOpen("sendmmsg", 3),
	{name: "listen",
		checks: []check{{outcome: outcome{action: actEACCES, what: "listen(without namespaces)", when: withoutNamespaces,
			reason: "listen(2) on a socket that is not bound binds it itself, to a port of every interface, without the bind(2) that Landlock hooks: without a network namespace the host's network reached a server whose network is none (red team). No MCP server on stdio listens"}}},
		otherwise: outcome{action: actAllow, reason: "listening on sockets the process holds; what can connect is the network namespace's"}},
	setID("creat", 1), setID("open", 2), setID("openat", 3),
	setID("mkdir", 1), setID("mkdirat", 2), setID("mknod", 1), setID("mknodat", 2),
	{name: "openat2", otherwise: outcome{action: actENOSYS, what: "openat2",
		reason: "its mode is in a struct behind a pointer that a filter cannot read, so a setuid mode could not be refused; ENOSYS makes libraries fall back to openat (Go, glibc and musl open with openat anyway)"}},
	{name: "clone",
		checks: []check{{conds: []cond{{arg: 0, op: opMaskNone, mask: cloneNewNamespaces}}, outcome: outcome{action: actAllow,
			reason: "threads and processes: fork, pthread_create, posix_spawn, the Go runtime's threads"}}},
		otherwise: outcome{action: actEPERM, what: "clone(CLONE_NEWNS|CLONE_NEWUTS|CLONE_NEWIPC|CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNET|CLONE_NEWCGROUP)",
			reason: "new namespaces, user namespaces above all, are a large kernel attack surface and would let the server remount its view (Docker: CAP_SYS_ADMIN); unshare and setns are denied for the same reason"}},
	{name: "clone3", otherwise: outcome{action: actENOSYS, what: "clone3",
		reason: "its flags are in a struct behind a pointer that a filter cannot read, so namespace creation could not be refused; ENOSYS makes glibc and others fall back to clone, as Docker does without CAP_SYS_ADMIN"}},
	selfOnly("prlimit64", 0, "prlimit64(another process, new limits)", check{outcome: outcome{action: actEPERM, what: "prlimit64(another process, without namespaces)", when: withoutNamespaces, reason: readReason}},
		check{conds: []cond{{arg: 2, op: opIn64, set: []uint32{0}}}, outcome: outcome{action: actAllow,
			reason: "reading another process's limits (new limits NULL): a fact, not a change; with a PID namespace only the sandbox's own processes"}}),
	{name: "getpriority",
		checks: []check{
			{conds: []cond{{arg: 1, op: opIn64, set: []uint32{0}}}, outcome: outcome{action: actAllow,
				reason: "the caller's own nice value, its process group's or its user's (who 0): what nice(1) and os.getpriority ask"}},
			{outcome: outcome{action: actEPERM, what: "getpriority(another process, group or user, without namespaces)", when: withoutNamespaces, reason: readReason}}},
		otherwise: outcome{action: actAllow, reason: "reading a process's nice value: with a PID namespace only the sandbox's own processes"}},
	{name: "setpriority",
		checks: []check{{conds: []cond{{arg: 0, op: opIn64, set: []uint32{prioProcess}}, {arg: 1, op: opIn64, set: []uint32{0}}}, outcome: outcome{action: actAllow,
			reason: "the calling process's own nice value (nice(2), setpriority(PRIO_PROCESS, 0)); raising it needs CAP_SYS_NICE"}}},
		otherwise: outcome{action: actEPERM, what: "setpriority(another process, a process group or a user)", reason: pidReason}},
	{name: "ioprio_set",
		checks: []check{{conds: []cond{{arg: 0, op: opIn64, set: []uint32{ioprioWhoProcess}}, {arg: 1, op: opIn64, set: []uint32{0}}}, outcome: outcome{action: actAllow,
			reason: "the calling thread's own I/O priority (ionice on itself)"}}},
		otherwise: outcome{action: actEPERM, what: "ioprio_set(another process, a process group or a user)", reason: pidReason}},
	selfOnly("sched_setaffinity", 0, "sched_setaffinity(another process)"),
	selfOnly("sched_setattr", 0, "sched_setattr(another process)"),
	selfOnly("sched_setparam", 0, "sched_setparam(another process)"),
	selfOnly("sched_setscheduler", 0, "sched_setscheduler(another process)"),
	{name: "ioctl",
		checks: []check{
			{conds: []cond{{arg: 1, op: opLowIn, mask: low32, set: []uint32{tiocSTI}}}, outcome: outcome{action: actEPERM, what: "ioctl(TIOCSTI)",
				reason: "pushes characters into a terminal's input: on a terminal the server inherited (the user's, when a client runs in one) they run as the user's next command"}},
			{conds: []cond{{arg: 1, op: opLowIn, mask: low32, set: []uint32{tiocLINUX}}}, outcome: outcome{action: actEPERM, what: "ioctl(TIOCLINUX)",
				reason: "the virtual console's multiplexer: pastes the selection into the console's input (TIOCSTI's effect) and reads the screen"}},
			{conds: []cond{{arg: 1, op: opLowIn, mask: low32, set: []uint32{tiocSETD}}}, outcome: outcome{action: actEPERM, what: "ioctl(TIOCSETD)",
				reason: "sets a terminal's line discipline: on a pty the server opens (/dev/ptmx) that loads and drives n_gsm, n_hdlc and the rest, kernel code with a history of privilege escalations (CVE-2023-6546, CVE-2017-2636) that no MCP server needs"}}},
		otherwise: outcome{action: actAllow, reason: "device and descriptor controls (terminal size, FIONREAD, FIONBIO...) on descriptors the process holds"}},
	{name: "personality",
		checks: []check{{conds: []cond{{arg: 0, op: opIn64, set: []uint32{0, 0x8, 0x20000, 0x20008, 0xffffffff}}}, outcome: outcome{action: actAllow,
			reason: "PER_LINUX and PER_LINUX32, either with UNAME26, and the query 0xffffffff: what runtimes and setarch ask for"}}},
		otherwise: outcome{action: actEPERM, what: "personality(other than PER_LINUX, PER_LINUX32, UNAME26, or the query 0xffffffff)",
			reason: "other personas change how the kernel runs the process: ADDR_NO_RANDOMIZE turns off ASLR, READ_IMPLIES_EXEC makes data executable (Docker allows exactly these values)"}},
	{name: "socket",
		checks: []check{
			{conds: []cond{{arg: 0, op: opLowIn, mask: low32, set: []uint32{afUNIX}}}, outcome: outcome{action: actEACCES, what: "socket(AF_UNIX)", when: withDenyUnix,
				reason: "DenyUnixSockets: without a mount namespace the host's named sockets (/run/docker.sock, the session bus, ssh-agent) stay reachable by path, and Landlock has no right for connect(2). A filter cannot see paths, so this refuses every unix socket, pathname AND abstract; socketpair stays"}},
			{conds: []cond{{arg: 0, op: opIn64, set: []uint32{afUNIX}}}, outcome: outcome{action: actAllow, when: withoutDenyUnix,
				reason: "unix sockets: which named ones exist is the mount namespace's (bwrap: none of the host's), abstract ones are scoped by Landlock ABI 6"}},
			{conds: []cond{{arg: 0, op: opLowIn, mask: low32, set: []uint32{afNETLINK}}, {arg: 2, op: opLowIn, mask: low32, set: []uint32{netlinkSockDiag}}},
				outcome: outcome{action: actEACCES, what: "socket(AF_NETLINK, NETLINK_SOCK_DIAG, without namespaces)", when: withoutNamespaces,
					reason: "sock_diag lists every socket of the network namespace, with addresses and owners, and every unix socket's path: without one, the host's (a red team listed the docker and containerd sockets and every TCP connection), where /proc/net is denied by Landlock"}},
			{conds: []cond{{arg: 0, op: opIn64, set: []uint32{afINET, afNETLINK, afINET6}}}, outcome: outcome{action: actAllow,
				reason: "AF_INET and AF_INET6 (TCP, UDP: what they reach is the network namespace's or Landlock's), AF_NETLINK (routing queries: getaddrinfo, getifaddrs, node's os.networkInterfaces)"}}},
		otherwise: outcome{action: actEAFNOSUPPORT, what: "socket(any family but AF_UNIX, AF_INET, AF_INET6, AF_NETLINK)",
			reason: "the other address families (AF_PACKET, AF_VSOCK, AF_ALG, AF_BLUETOOTH, AF_TIPC, AF_RDS, AF_XDP...) are kernel attack surface no MCP server needs, and AF_VSOCK reaches VMs across network namespaces. Stricter than Docker, which allows ~30 families; EAFNOSUPPORT, as on a kernel without them"}},
	{name: "socketpair",
		checks: []check{
			{conds: []cond{{arg: 0, op: opIn64, set: []uint32{afUNIX}}}, outcome: outcome{action: actAllow, when: withoutDenyUnix,
				reason: "unix socket pairs: child processes' stdio (libuv), Python's multiprocessing, event loops' wake-up channels"}},
			{conds: []cond{{arg: 0, op: opIn64, set: []uint32{afUNIX}}, {arg: 1, op: opLowIn, mask: sockTypeMask, set: []uint32{sockStream, sockSeqpacket}}},
				outcome: outcome{action: actAllow, when: withDenyUnix,
					reason: "stream and seqpacket pairs stay with DenyUnixSockets: they are born connected to each other and cannot connect anywhere else"}},
			{conds: []cond{{arg: 0, op: opLowIn, mask: low32, set: []uint32{afUNIX}}}, outcome: outcome{action: actEACCES, what: "socketpair(AF_UNIX, SOCK_DGRAM or SOCK_RAW)", when: withDenyUnix,
				reason: "DenyUnixSockets: a datagram socket of a pair can still sendto(2) or connect(2) anew to a named datagram socket on the host (/dev/log, journald's socket)"}}},
		otherwise: outcome{action: actEAFNOSUPPORT, what: "socketpair(any family but AF_UNIX)",
			reason: "AF_TIPC makes pairs too: that would create sockets of a family socket(2) refuses (Docker allows any)"}},
})

// pidReason is why a call that changes another process's limits, priority
// or scheduling is refused: the kernel lets a process do that to any other
// process of its user, and Landlock hooks none of these calls. With a PID
// namespace (bwrap, Landlock with user namespaces) that is the launcher's
// init; without one (Landlock alone), every process of the invoking user.
const pidReason = "a process may lower the limits and priority of any process of its own user (prlimit RLIMIT_CPU ends it), and Landlock's scopes do not cover these calls: without a PID namespace (the Landlock launcher without user namespaces) that is every process of the invoking user on the host, the client and the editor included; with one, the launcher's init. Only the process itself (pid 0) is allowed. Stricter than Docker, whose containers have their own PID namespace"

// readReason is why, without a PID namespace, reading another process's
// limits or priority is refused.
const readReason = "without a PID namespace (the Landlock launcher without user namespaces) every process of the host answers: the call tells which exist and reads their limits and nice values (the client's, the editor's), where /proc is denied by Landlock. Only the caller itself (pid 0) is allowed"

// selfOnly allows a call whose pid argument (index arg) is 0, the caller
// itself, after any checks given, and refuses it for another process.
func selfOnly(name string, arg uint8, what string, more ...check) argRule {
	return argRule{name: name,
		checks: append([]check{{conds: []cond{{arg: arg, op: opIn64, set: []uint32{0}}}, outcome: outcome{action: actAllow,
			reason: "the calling process or thread itself (pid 0): what runtimes and libc do"}}}, more...),
		otherwise: outcome{action: actEPERM, what: what, reason: pidReason}}
}

func byName(rs []argRule) []argRule {
	sort.Slice(rs, func(i, j int) bool { return rs[i].name < rs[j].name })
	return rs
}
