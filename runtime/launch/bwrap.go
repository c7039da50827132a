package launch

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/protect"
	"github.com/mcpolicy/mcpolicy/runtime/seccomp"
)

// BwrapSpec is the committed bwrap artefact, with what a caller of the
// launcher's own adds at run time.
type BwrapSpec struct {
	artefact.BwrapSpec
	// OwnSocket, when set, is the sandbox path of a socket this process
	// serves (mcpolicy run's egress proxy), and CheckOwn proves, on the very
	// descriptor bwrap binds, that it reaches this process's listener
	// (DialDescriptor): another server of the user's that can write the
	// socket's folder could have put its own in its place between listen
	// and bind, and read the server's requests and answer them.
	OwnSocket string             `json:"-"`
	CheckOwn  func(fd int) error `json:"-"`
	// Data are files made for this launch alone (mcpolicy run's session
	// CA, for the credentials the proxy injects), bound read-only from
	// memory: no host path, so no grant, holds them.
	Data []DataFile `json:"-"`
}

// DataFile is a read-only file in the sandbox whose content comes from
// the launcher's memory.
type DataFile struct {
	Target string
	Data   []byte
}

// Bwrap is a bwrap launch ready to exec: its argv and the descriptors it
// must inherit (all close-on-exec until Exec clears them).
type Bwrap struct {
	Path string
	Argv []string
	FDs  []int
	// UID and GID are the sandbox's (--uid, --gid), -1 when not given.
	// bwrap maps them to the uid and gid that start it: a launcher started
	// by root starts bwrap as them (Credential), so that the plan's
	// 1000:1000 is not the host's root.
	UID, GID int
}

// PrepareBwrapAt is PrepareBwrap with bwrap's path given.
func PrepareBwrapAt(spec *BwrapSpec, root, home string, environ []string, bwrapPath string) (*Bwrap, error) {
	if spec.Backend != artefact.BwrapProgram {
		return nil, fmt.Errorf("not a bwrap artefact (backend %q)", spec.Backend)
	}
	if !pathIsAbs(root) {
		return nil, fmt.Errorf("PROJECT_ROOT must be an absolute path, got %q", root)
	}
	p := &bwrapPrep{spec: spec, root: root, home: home, environ: environ,
		src: NewSources(root, home), b: &Bwrap{UID: -1, GID: -1}}
	if err := p.args(); err != nil {
		// Nothing opened is left open on a refusal.
		for _, fd := range p.b.FDs {
			unix.Close(fd)
		}
		return nil, err
	}
	p.b.Path = bwrapPath
	return p.b, nil
}

// bwrapPrep is one PrepareBwrapAt under way: the launch built so far.
type bwrapPrep struct {
	spec       *BwrapSpec
	root, home string
	environ    []string
	src        *Sources
	b          *Bwrap
	rwTargets  []string
}

// expand replaces a leading ${PROJECT_ROOT} or ${HOME} in an artefact's
// path; any other placeholder is refused.
func (p *bwrapPrep) expand(s string) (string, error) {
	for ph, v := range map[string]string{"${PROJECT_ROOT}": p.root, "${HOME}": p.home} {
		if s == ph || strings.HasPrefix(s, ph+"/") {
			if !pathIsAbs(v) {
				return "", fmt.Errorf("%s needs an absolute value to start this server", ph)
			}
			return v + strings.TrimPrefix(s, ph), nil
		}
	}
	if strings.Contains(s, "${") {
		return "", fmt.Errorf("unknown placeholder in %q", s)
	}
	return s, nil
}

// target expands a sandbox target: a "~/..." one (${HOME}/...) refuses a
// home of "/", where ~/proc or ~/dev would land on the runtime's own.
func (p *bwrapPrep) target(s string) (string, error) {
	if (s == "${HOME}" || strings.HasPrefix(s, "${HOME}/")) && cleanAbs(p.home) == "/" {
		return "", fmt.Errorf("HOME is /: the target %s would be a path of the sandbox's root", s)
	}
	return p.expand(s)
}

// bind passes an opened source to bwrap by its descriptor.
func (p *bwrapPrep) bind(op string, fd int, target string) {
	p.b.FDs = append(p.b.FDs, fd)
	p.b.Argv = append(p.b.Argv, op, strconv.Itoa(fd), target)
}

// args copies the artefact's arguments to the argv, in order, each bind
// source opened and each id resolved on the way; the command (from "--")
// follows unchanged.
func (p *bwrapPrep) args() error {
	args := p.spec.Args
	p.b.Argv = []string{artefact.BwrapProgram}
	i := 0
	data := false // p.spec.Data bound: before the root is made read-only
	for ; i < len(args); i++ {
		a := args[i]
		if (a == "--" || a == "--remount-ro") && !data {
			if err := p.data(); err != nil {
				return err
			}
			data = true
		}
		if a == "--" {
			break
		}
		n, ok := artefact.BwrapOperands(a)
		if !ok || i+n >= len(args) {
			return fmt.Errorf("bwrap artefact: unexpected argument %q", a)
		}
		v := args[i+1 : i+1+n]
		i += n
		var err error
		switch a {
		case "--proc":
			err = p.proc(a, v)
		case "--bind", "--ro-bind":
			err = p.bindArg(a, v)
		case "--ro-bind-try":
			err = p.bindTry(a, v)
		case HideOp:
			err = p.hide(v)
		case "--setenv":
			// A runtime pack's value below the home (GOMODCACHE=${HOME}/...).
			var val string
			if val, err = p.expand(v[1]); err == nil {
				p.b.Argv = append(p.b.Argv, a, v[0], val)
			}
		case "--uid", "--gid":
			err = p.id(a, v)
		case "--tmpfs", "--chdir":
			// A "~/..." target or workdir (${HOME}/... in the spec).
			var val string
			if val, err = p.target(v[0]); err == nil {
				p.b.Argv = append(p.b.Argv, a, val)
			}
		default:
			p.b.Argv = append(p.b.Argv, a)
			p.b.Argv = append(p.b.Argv, v...)
		}
		if err != nil {
			return err
		}
	}
	if !data {
		if err := p.data(); err != nil {
			return err
		}
	}
	for _, w := range args[i:] {
		p.b.Argv = append(p.b.Argv, p.homeWord(w))
	}
	return nil
}

// data binds each of the spec's data files, read-only, mode 0444.
func (p *bwrapPrep) data() error {
	for _, f := range p.spec.Data {
		fd, err := memfd("mcpolicy-data", f.Data)
		if err != nil {
			return err
		}
		p.b.FDs = append(p.b.FDs, fd)
		p.b.Argv = append(p.b.Argv, "--perms", "0444", "--ro-bind-data", strconv.Itoa(fd), f.Target)
	}
	return nil
}

// homeWord expands a command word the emitter wrote for a "~/..." path:
// ${HOME} or ${HOME}/..., whole or after "--flag=". Any other word,
// placeholders included, is passed as it is: the command is data.
func (p *bwrapPrep) homeWord(w string) string {
	flag, v := "", w
	if f, rest, ok := strings.Cut(w, "="); ok && strings.HasPrefix(f, "-") {
		flag, v = f+"=", rest
	}
	if (v == "${HOME}" || strings.HasPrefix(v, "${HOME}/")) && pathIsAbs(p.home) {
		return flag + p.home + strings.TrimPrefix(v, "${HOME}")
	}
	return w
}

// proc puts the seccomp filter (package seccomp: bwrap installs it just
// before it execs the command) and the passthrough environment before
// --proc.
func (p *bwrapPrep) proc(a string, v []string) error {
	prog, err := seccomp.Program(seccomp.Options{})
	if err != nil {
		return err
	}
	sfd, err := memfd("mcpolicy-seccomp", prog)
	if err != nil {
		return err
	}
	p.b.FDs = append(p.b.FDs, sfd)
	p.b.Argv = append(p.b.Argv, "--seccomp", strconv.Itoa(sfd))
	if envArgs := bwrapEnv(p.spec.Env, p.environ); len(envArgs) > 0 {
		fd, err := memfd("mcpolicy-env", []byte(strings.Join(envArgs, "\x00")+"\x00"))
		if err != nil {
			return err
		}
		p.b.FDs = append(p.b.FDs, fd)
		p.b.Argv = append(p.b.Argv, "--args", strconv.Itoa(fd))
	}
	p.b.Argv = append(p.b.Argv, a, v[0])
	return nil
}

// sourceTarget expands an operation's host source (v[0]) and its sandbox
// target (v[1]), as a bind and a hidden path both name them.
func (p *bwrapPrep) sourceTarget(v []string) (host, target string, err error) {
	if host, err = p.expand(v[0]); err != nil {
		return "", "", err
	}
	if target, err = p.target(v[1]); err != nil {
		return "", "", err
	}
	return host, target, nil
}

// bindArg turns a --bind or --ro-bind into one by descriptor, its source
// opened without following a symlink; a read-write project root gets a
// fixed top level, and the caller's own socket is checked to be its.
func (p *bwrapPrep) bindArg(a string, v []string) error {
	host, target, err := p.sourceTarget(v)
	if err != nil {
		return err
	}
	rw := a == "--bind"
	if rw && cleanAbs(host) == cleanAbs(p.root) {
		if err := fixedTop(p.src, host, target, p.spec.Unprotected, p.bind); err != nil {
			return err
		}
		p.rwTargets = append(p.rwTargets, target)
		return nil
	}
	fd, err := p.src.Open(host)
	if err != nil {
		// A read-only bind over a name inside a read-write grant
		// protects it; if the name is gone there is nothing to
		// protect (a fixed top level keeps it from coming back).
		if IsMissing(err) && !rw && below(target, p.rwTargets) {
			return nil
		}
		return err
	}
	if p.spec.OwnSocket != "" && target == p.spec.OwnSocket {
		err := fmt.Errorf("no check for the socket %s", host)
		if p.spec.CheckOwn != nil {
			err = p.spec.CheckOwn(fd)
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("the socket %s: %w", host, err)
		}
	}
	op := "--ro-bind-fd"
	if rw {
		op = "--bind-fd"
		p.rwTargets = append(p.rwTargets, target)
	}
	p.bind(op, fd, target)
	return nil
}

// bindTry copies a --ro-bind-try of a system path (the runtime baseline)
// as it is; one below the project root or the home (a runtime pack's
// path, ${HOME}/... in a committed spec) is expanded and opened the way a
// grant is, without following a symlink below its base, and skipped when
// missing: a pack's path is never created.
func (p *bwrapPrep) bindTry(a string, v []string) error {
	host, err := p.expand(v[0])
	if err != nil {
		return err
	}
	target, err := p.expand(v[1])
	if err != nil {
		return err
	}
	if base, _ := p.src.split(host); base == "/" {
		p.b.Argv = append(p.b.Argv, a, host, target)
		return nil
	}
	fd, err := p.src.Open(host)
	if err != nil {
		if IsMissingSource(err) {
			return nil
		}
		return err
	}
	p.bind("--ro-bind-fd", fd, target)
	return nil
}

// id resolves --uid or --gid (the invoker's, where the artefact says so)
// to a number, kept for Credential.
func (p *bwrapPrep) id(a string, v []string) error {
	id, err := invokerID(p.spec.Server, v[0])
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(id)
	if err != nil || n < 0 {
		return fmt.Errorf("bwrap artefact: %s %q is not a numeric id", a, id)
	}
	if a == "--uid" {
		p.b.UID = n
	} else {
		p.b.GID = n
	}
	p.b.Argv = append(p.b.Argv, a, id)
	return nil
}

// fixedTop binds a read-write project root with a fixed top level.
func fixedTop(src *Sources, host, target string, unprotected []string, bind func(string, int, string)) error {
	rootFD, err := src.Open(host)
	if err != nil {
		return err
	}
	kids, err := src.topLevel(host, unprotected)
	if err != nil {
		unix.Close(rootFD)
		return err
	}
	bind("--ro-bind-fd", rootFD, target)
	for _, k := range kids {
		op := "--bind-fd"
		if protect.Except(k.name, unprotected) != "" {
			op = "--ro-bind-fd"
		}
		bind(op, k.fd, path.Join(target, k.name))
	}
	return nil
}

// bwrapEnv is the --setenv arguments for the passthrough names that are set.
func bwrapEnv(names, environ []string) []string {
	var out []string
	for _, n := range names {
		for _, kv := range environ {
			if v, ok := strings.CutPrefix(kv, n+"="); ok {
				out = append(out, "--setenv", n, v)
				break
			}
		}
	}
	return out
}

// DecodeBwrap reads a verified bwrap artefact.
func DecodeBwrap(data []byte) (*BwrapSpec, error) {
	var s BwrapSpec
	if err := decodeArtefact(data, &s); err != nil {
		return nil, err
	}
	if s.Backend != artefact.BwrapProgram || len(s.Args) == 0 {
		return nil, fmt.Errorf("not a bwrap artefact")
	}
	return &s, nil
}

func pathIsAbs(p string) bool { return strings.HasPrefix(p, "/") }

func cleanAbs(p string) string { return path.Clean(p) }

// below reports whether target lies strictly below one of dirs.
func below(target string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(target, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// Command returns b as a child process rather than an exec: its
// descriptors become 3, 4, ... in the child (ExtraFiles), the argv is
// renumbered to match, and the environment is empty. For supervisors that
// stay beside the sandbox (mcpolicy run, prove, tests). The child must not
// share the caller's session keyring, and Go cannot change it between fork
// and exec: the caller itself joins a new, empty one here.
//
// first are passed before b's descriptors, at 3, 4, ... (a probe the
// command names as /proc/self/fd/3, say).
func (b *Bwrap) Command(first ...*os.File) (*exec.Cmd, error) {
	if err := FreshSessionKeyring(); err != nil {
		return nil, err
	}
	serverUmask() // the caller's own, as its keyring: a child inherits it, Go cannot set it between fork and exec
	renum := map[string]string{}
	files := append([]*os.File{}, first...)
	for _, fd := range b.FDs {
		renum[strconv.Itoa(fd)] = strconv.Itoa(3 + len(files))
		files = append(files, os.NewFile(uintptr(fd), "mcpolicy-bwrap-fd"))
	}
	argv := append([]string{}, b.Argv...)
	for i := 1; i+1 < len(argv); i++ {
		if argv[i] == "--" {
			break
		}
		switch argv[i] {
		case "--bind-fd", "--ro-bind-fd", "--args", "--seccomp", "--ro-bind-data":
			argv[i+1] = renum[argv[i+1]]
			i++
		}
	}
	cmd := exec.Command(b.Path, argv[1:]...)
	cmd.Env = []string{}
	cmd.ExtraFiles = files
	if c := b.Credential(); c != nil {
		if err := b.reachable(c); err != nil {
			return nil, err
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c}
	}
	return cmd, nil
}

// reachable checks, before bwrap runs as c, that c reaches every bound
// source by its path, as bwrap resolves a --bind-fd source (realpath of
// /proc/self/fd/N): one below a mode-0700 folder of root's made bwrap fail
// with "Can't find source path /proc/self/fd/12".
func (b *Bwrap) reachable(c *syscall.Credential) error {
	var paths []string
	for i := 1; i+1 < len(b.Argv); i++ {
		if b.Argv[i] == "--" {
			break
		}
		if b.Argv[i] == "--bind-fd" || b.Argv[i] == "--ro-bind-fd" {
			if p, err := os.Readlink("/proc/self/fd/" + b.Argv[i+1]); err == nil {
				paths = append(paths, p)
			}
			i += 2
		}
	}
	return reachableAs(c, paths)
}

// Credential is who bwrap must run as on the host, nil for the caller:
// the plan's user when root starts it (and the plan's user is not root).
// bwrap maps the sandbox's uid to the one that starts it, so started by
// root the plan's 1000:1000 was the host's root without capabilities: it
// wrote /proc/sys/kernel/core_pattern, and the kernel ran a program of
// the server's as root (red team). Started as the plan's user, the server
// is that user on the host, as docker's --user makes it; the sources are
// already open, by descriptor.
func (b *Bwrap) Credential() *syscall.Credential {
	if os.Geteuid() != 0 || b.UID <= 0 {
		return nil
	}
	gid := b.GID
	if gid < 0 {
		gid = b.UID
	}
	return &syscall.Credential{Uid: uint32(b.UID), Gid: uint32(gid), Groups: []uint32{}}
}
