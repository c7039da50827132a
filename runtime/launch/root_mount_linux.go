package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The minimal root (issue #14). Landlock has no right for connect(2) to a
// named unix socket, so in the host's mount namespace a server reaches
// /run/docker.sock, D-Bus, ssh-agent, gpg-agent, X11... whatever its rules
// say. Where namespaces work, stage 2 therefore builds the server's whole
// filesystem, as bwrap does, before it applies the ruleset: a tmpfs holding
// only the runtime baseline (read-only), the grants at their host paths
// (read-only or read-write, as the ruleset says), the scratch tmpfs, a
// minimal /dev and, only when the ruleset says proc, a procfs of the
// server's own PID namespace (never the host's); then it pivots into it,
// detaches the host's root and makes the tmpfs read-only.
// Anything else — /run, /tmp, $XDG_RUNTIME_DIR, the home folder — is simply
// not there. Landlock still applies on top, with the same host paths.

// errNoMounts: this user namespace may not mount (an AppArmor profile for
// unprivileged user namespaces takes its capabilities away): for the
// launcher, a machine without usable namespaces.
var errNoMounts = errors.New("no mount is permitted in this user namespace")

// stagingDir is where the new root's tmpfs is mounted (in stage 2's own
// mount namespace) while it is filled. Every source is opened, and cloned
// as a detached mount, before it hides anything.
const stagingDir = "/tmp"

// devices are the nodes every root gets in /dev, bound from the host's
// (an unprivileged user namespace cannot mknod), as bwrap's --dev does.
// Landlock still allows only the ruleset's devices.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// rootLinks are the top-level names merged-/usr systems make symlinks into
// /usr (the ELF interpreter is /lib64/ld-linux-x86-64.so.2): where the host
// has them as symlinks, the new root gets the same ones.
var rootLinks = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// rootMount is one thing to put into the new root at its host path.
type rootMount struct {
	at   string // absolute path in the new root (= on the host)
	tree int    // a detached mount (open_tree or fsmount), close-on-exec; -1 for a symlink
	dir  bool   // the mount point is a folder
	link string // tree < 0: make a symlink at `at` pointing here
	what string // for messages
}

// rootSummary counts the hierarchies bound into the root, for --verbose.
type rootSummary struct{ ro, rw int }

// buildRoot makes the minimal root and pivots into it. The Sources' bases
// decide where a symlink in a grant's path is refused as tampering.
func buildRoot(sp *spec, verbose io.Writer) error {
	rs := sp.Ruleset
	if err := privateMounts(); err != nil {
		return err
	}
	r := &newRoot{}
	defer r.close()

	// 1. Every source, opened and cloned while the host's tree is in view.
	src := NewSources(sp.Bases...)
	if err := r.openBaseline(src, rs.Baseline); err != nil {
		return err
	}
	if err := r.openGrants(src, rs.ReadOnly, rs.ReadWrite, rs.FixedTop); err != nil {
		return err
	}
	// After every grant: a protected entry lands on top of a grant at its path.
	if err := r.openFixedTop(src, rs.FixedTop, rs.Unprotected, explicitGrants(rs)); err != nil {
		return err
	}
	if err := r.openProtected(src, rs.Protected); err != nil {
		return err
	}
	if err := r.newScratch(rs.Scratch, rs.ScratchSize); err != nil {
		return err
	}
	for _, s := range rs.MoreScratch {
		if err := r.newScratch(s.Target, s.Size); err != nil {
			return err
		}
	}
	if err := r.openDevices(rs.DevicesRO, rs.DevicesRW); err != nil {
		return err
	}
	// Made while the host's /proc is in view: the kernel mounts a procfs
	// in a user namespace only where one is already fully visible.
	if err := r.newProc(rs.Proc); err != nil {
		return err
	}
	r.readRootLinks()
	masks, err := openHidden(src, rs.Hidden) // root_hide_linux.go
	if err != nil {
		return err
	}
	defer masks.close()

	// 2. The new root: a tmpfs, filled shallowest first, so a grant below
	// another (a read-write out/ in a read-only project) lands on top.
	if err := r.fill(); err != nil {
		return err
	}
	if err := masks.attach(); err != nil {
		return err
	}

	// 3. Pivot: the old root is stacked on the new one and detached.
	if err := pivotIntoStaging(); err != nil {
		return err
	}
	say(verbose, "mcpolicy exec: %s: root: a read-only tmpfs holding only %d read-only and %d read-write hierarchies at their host paths%s%s and /dev (%s); the host's other files, sockets included, are not there",
		rs.Server, r.sum.ro, r.sum.rw, map[bool]string{true: ", the scratch", false: ""}[rs.Scratch != ""],
		map[bool]string{true: ", /proc (its own PID namespace's, read-only, " + procSummary + ")", false: ""}[rs.Proc], strings.Join(devNames(r.devs), " "))
	return nil
}

// privateMounts: nothing mounted here propagates to the host, and nothing
// the host mounts later (a new socket's file system, a USB stick) appears
// here.
func privateMounts() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("making the mount namespace private: %w (%w)", err, errNoMounts)
		}
		return fmt.Errorf("making the mount namespace private: %w", err)
	}
	return nil
}

// newRoot is what buildRoot puts into the new root, gathered before the
// staging tmpfs hides anything.
type newRoot struct {
	mounts []rootMount
	sum    rootSummary
	devs   map[string]bool // the /dev nodes asked for (a missing one is skipped)
	links  [][2]string     // name, target: the host's rootLinks
}

// close closes every detached mount still held.
func (r *newRoot) close() {
	for _, m := range r.mounts {
		if m.tree >= 0 {
			unix.Close(m.tree)
		}
	}
}

// openBaseline clones the runtime baseline's paths (read-only); one below
// the project root or the home (a runtime pack's) is opened as a grant is,
// without following a symlink below its base, and skipped when missing.
func (r *newRoot) openBaseline(src *Sources, paths []string) error {
	for _, p := range paths {
		var m *rootMount
		var err error
		if base, _ := src.split(p); base == "/" {
			m, err = baselineMount(p)
		} else if m, err = grantMount(src, p, true); err != nil && IsMissingSource(err) {
			m, err = nil, nil
		}
		if err != nil {
			return err
		}
		if m != nil {
			r.mounts = append(r.mounts, *m)
			if m.tree >= 0 {
				r.sum.ro++
			}
		}
	}
	return nil
}

// openGrants clones the read-only grants, then the read-write ones, each
// opened below its base without following a symlink; but fixedTop, which
// openFixedTop binds.
func (r *newRoot) openGrants(src *Sources, readOnly, readWrite []string, fixedTop string) error {
	for _, list := range []struct {
		paths []string
		ro    bool
	}{{readOnly, true}, {readWrite, false}} {
		for _, p := range list.paths {
			if fixedTop != "" && filepath.Clean(p) == filepath.Clean(fixedTop) {
				continue
			}
			m, err := grantMount(src, p, list.ro)
			if err != nil {
				return err
			}
			r.mounts = append(r.mounts, *m)
			if list.ro {
				r.sum.ro++
			} else {
				r.sum.rw++
			}
		}
	}
	return nil
}

// newScratch makes the scratch tmpfs, if the ruleset has one.
func (r *newRoot) newScratch(at string, size int64) error {
	if at == "" {
		return nil
	}
	tree, err := newMount("tmpfs", map[string]string{"size": strconv.FormatInt(size, 10), "mode": "1777"},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("the scratch tmpfs: %w", err)
	}
	r.mounts = append(r.mounts, rootMount{at: at, tree: tree, dir: true, what: "scratch"})
	return nil
}

// procOptions are the server's procfs's, the narrowest with which Go's
// os.Executable, Node and CPython start. subset=pid leaves only the
// per-process folders (and self, thread-self): no host-wide file at all —
// /proc/keys and /proc/key-users (which bwrap masks), /proc/sys,
// /proc/kallsyms, /proc/slabinfo and the other 0400 files a server whose
// plan says root would read as the host's root, /proc/cpuinfo, /proc/stat.
// hidepid=ptraceable lists only the processes the server may ptrace, its
// own and its children: stage 2, the namespace's init (undumpable, outside
// the server's Landlock domain), is not there. What runtimes read is per
// process and stays: readlink /proc/self/exe (Go's os.Executable),
// /proc/self/maps (glibc's pthread_getattr_np, under V8), /proc/self/fd,
// /proc/self/status, /proc/self/cgroup and mountinfo (Go's GOMAXPROCS,
// libuv). The cost: Node's os.cpus() (which reads /proc/stat) is empty;
// os.totalmem() falls back on sysinfo(2), and CPython's os.cpu_count and
// Go's runtime.NumCPU never read /proc.
var procOptions = map[string]string{"subset": "pid", "hidepid": "ptraceable"}

const procSummary = "subset=pid, hidepid=ptraceable: the server's own processes, no host-wide file"

// newProc makes the server's /proc when the ruleset asks for it: a fresh
// procfs of this PID namespace (stage 2 is its init: no host PID is in
// it), read-only, nosuid, nodev, noexec.
func (r *newRoot) newProc(want bool) error {
	if !want {
		return nil
	}
	tree, err := newMount("proc", procOptions, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("the server's /proc: %w (the kernel mounts a procfs in a user namespace only where the host's /proc is fully visible: is this launcher in a container that masks parts of it?)", err)
	}
	if err != nil {
		return fmt.Errorf("the server's /proc: %w", err)
	}
	// Fail closed should the kernel ever ignore subset=pid.
	for _, hostWide := range []string{"keys", "key-users", "sys"} {
		var st unix.Stat_t
		if err := unix.Fstatat(tree, hostWide, &st, unix.AT_SYMLINK_NOFOLLOW); !errors.Is(err, unix.ENOENT) {
			unix.Close(tree)
			return fmt.Errorf("the server's /proc: /proc/%s is there despite subset=pid (%v): refusing to mount it", hostWide, err)
		}
	}
	r.mounts = append(r.mounts, rootMount{at: "/proc", tree: tree, dir: true, what: "/proc"})
	return nil
}

// openDevices clones every root's devices and the ruleset's, each once.
func (r *newRoot) openDevices(ro, rw []string) error {
	r.devs = map[string]bool{}
	for _, d := range append(append(append([]string{}, devices...), ro...), rw...) {
		if r.devs[d] {
			continue
		}
		r.devs[d] = true
		m, err := deviceMount(d)
		if err != nil {
			return err
		}
		if m != nil {
			r.mounts = append(r.mounts, *m)
		}
	}
	return nil
}

// readRootLinks notes which of rootLinks the host has as symlinks.
func (r *newRoot) readRootLinks() {
	for _, n := range rootLinks {
		if t, err := os.Readlink("/" + n); err == nil {
			r.links = append(r.links, [2]string{n, t})
		}
	}
}

// fill mounts the new root's tmpfs at stagingDir and attaches every mount
// there, shallowest first, then the symlinks: the host's rootLinks and
// /dev's fd, stdin, stdout and stderr.
func (r *newRoot) fill() error {
	if err := unix.Mount("tmpfs", stagingDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mounting the new root's tmpfs at %s: %w", stagingDir, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(stagingDir, &st); err != nil {
		return err
	}
	rootDev := st.Dev
	ms := r.mounts
	sort.SliceStable(ms, func(i, j int) bool { return depth(ms[i].at) < depth(ms[j].at) })
	for _, m := range ms {
		if err := attach(rootDev, m); err != nil {
			return err
		}
	}
	for _, l := range r.links {
		if err := symlinkIn(rootDev, "/"+l[0], l[1]); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := symlinkIn(rootDev, "/dev/"+name, target); err != nil {
			return err
		}
	}
	return nil
}

// pivotIntoStaging makes the filled stagingDir the root: the old root is
// stacked on the new one and detached, and the new root made read-only.
func pivotIntoStaging() error {
	top, err := unix.Open(stagingDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	err = unix.Fchdir(top)
	unix.Close(top)
	if err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host's root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making the new root read-only: %w", err)
	}
	return nil
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(filepath.Clean(p), "/")
}

func devNames(seen map[string]bool) []string {
	var out []string
	for d := range seen {
		if _, err := os.Stat(d); err == nil {
			out = append(out, strings.TrimPrefix(d, "/dev/"))
		}
	}
	sort.Strings(out)
	return out
}

// cloneTree makes a detached, recursive copy of the mount at fd with attrs
// set on every mount in it before it is attached anywhere.
func cloneTree(fd int, attrs uint64) (int, error) {
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.O_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: attrs}); err != nil {
		unix.Close(tree)
		return -1, fmt.Errorf("mount_setattr: %w", err)
	}
	return tree, nil
}

// newMount creates a detached mount of a fresh file system.
func newMount(fstype string, opts map[string]string, attrs int) (int, error) {
	fs, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen %s: %w", fstype, err)
	}
	defer unix.Close(fs)
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := unix.FsconfigSetString(fs, k, opts[k]); err != nil {
			return -1, fmt.Errorf("%s %s=%s: %w", fstype, k, opts[k], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("creating %s: %w", fstype, err)
	}
	tree, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return -1, fmt.Errorf("fsmount %s: %w", fstype, err)
	}
	return tree, nil
}

// baselineMount clones a runtime baseline path read-only; a symlink (such
// as /etc/localtime) is recreated as the same symlink; a missing one is
// skipped (nil), as the ruleset says. The baseline is the system's, outside
// every grant: intermediate symlinks are followed.
func baselineMount(p string) (*rootMount, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		t, err := os.Readlink(p)
		if err != nil {
			return nil, err
		}
		return &rootMount{at: p, tree: -1, link: t, what: "baseline " + p}, nil
	}
	tree, err := cloneTree(fd, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", p, err)
	}
	return &rootMount{at: p, tree: tree, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, what: "baseline " + p}, nil
}

// grantMount opens a grant below its base without following a symlink
// (a TamperError otherwise) and clones exactly what it opened.
func grantMount(src *Sources, p string, ro bool) (*rootMount, error) {
	fd, err := src.Open(p)
	if err != nil {
		if IsMissing(err) {
			return nil, fmt.Errorf("granted path %s: %w", p, err)
		}
		if errors.Is(err, unix.EACCES) {
			// A root launcher runs stage 2 as the plan's user (hostIDs).
			return nil, fmt.Errorf("%w\n\thint: the server runs as uid %d on the host, which cannot reach it: grant a folder that user can read (not below a mode-0700 folder of another user's), or start the client as that user", err, os.Getuid())
		}
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	attrs := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	what := "read-write grant " + p
	if ro {
		attrs |= unix.MOUNT_ATTR_RDONLY
		what = "read-only grant " + p
	}
	tree, err := cloneTree(fd, attrs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &rootMount{at: filepath.Clean(p), tree: tree, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, what: what}, nil
}

// deviceMount binds a host character device; a missing one is skipped.
func deviceMount(p string) (*rootMount, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return nil, fmt.Errorf("device %s is not a character device on this host", p)
	}
	tree, err := cloneTree(fd, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", p, err)
	}
	return &rootMount{at: p, tree: tree, what: "device " + p}, nil
}

// resolveBeneath is how every path in the new root is resolved: below its
// top, never through a symlink (a grant is host disk a running server may
// have rewritten).
var resolveBeneath = &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
	Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}

// attach puts m into the new root at its path.
func attach(rootDev uint64, m rootMount) error {
	if m.tree < 0 {
		return symlinkIn(rootDev, m.at, m.link)
	}
	target, err := mountPoint(rootDev, m.at, m.dir)
	if err != nil {
		return fmt.Errorf("%s: %w", m.what, err)
	}
	defer unix.Close(target)
	if err := unix.MoveMount(m.tree, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("%s: mounting at %s: %w", m.what, m.at, err)
	}
	return nil
}

// mountPoint opens (O_PATH) the mount point for p in the new root, as it
// is now (mounts already attached included), creating the missing folders
// (and, for a file, an empty file) — but only on the new root's own tmpfs:
// nothing is ever created inside a grant, on the host's disk.
func mountPoint(rootDev uint64, p string, dir bool) (int, error) {
	cur, err := unix.Open(stagingDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	rel := strings.TrimPrefix(filepath.Clean(p), "/")
	if rel == "" {
		return cur, nil
	}
	parts := strings.Split(rel, "/")
	for i, name := range parts {
		fd, err := unix.Openat2(cur, name, resolveBeneath)
		if errors.Is(err, unix.ENOENT) {
			var st unix.Stat_t
			if err := unix.Fstat(cur, &st); err != nil {
				unix.Close(cur)
				return -1, err
			}
			if st.Dev != rootDev {
				unix.Close(cur)
				return -1, fmt.Errorf("%s does not exist, and it would lie inside another grant: refusing to create it there (on the host)", "/"+strings.Join(parts[:i+1], "/"))
			}
			if i == len(parts)-1 && !dir {
				f, cerr := unix.Openat(cur, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
				if cerr == nil {
					unix.Close(f)
				}
				err = cerr
			} else {
				err = unix.Mkdirat(cur, name, 0o755)
			}
			if err == nil || errors.Is(err, unix.EEXIST) {
				fd, err = unix.Openat2(cur, name, resolveBeneath)
			}
		}
		unix.Close(cur)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return -1, tampered("%s is, or passes through, a symlink inside a grant: refusing to mount over it", p)
		}
		if err != nil {
			return -1, fmt.Errorf("mount point %s: %w", "/"+strings.Join(parts[:i+1], "/"), err)
		}
		cur = fd
	}
	return cur, nil
}

// symlinkIn makes the symlink p -> target in the new root, on its own
// tmpfs only; a name that is already there (a grant) is left alone.
func symlinkIn(rootDev uint64, p, target string) error {
	parent, err := mountPoint(rootDev, filepath.Dir(p), true)
	if err != nil {
		return fmt.Errorf("symlink %s: %w", p, err)
	}
	defer unix.Close(parent)
	var st unix.Stat_t
	if err := unix.Fstat(parent, &st); err != nil {
		return err
	}
	if st.Dev != rootDev {
		return nil // inside a grant: whatever is there is the host's
	}
	if err := unix.Symlinkat(target, parent, filepath.Base(p)); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("symlink %s: %w", p, err)
	}
	return nil
}
