// Package supervise is `mcpolicy run`: for a plan with an egress allowlist
// it starts the egress proxy, then the server confined by its backend with
// the proxy as its only way out, passes stdio through unchanged, and stops
// everything when either side ends. The proxy lives in this process, so it
// cannot outlive the server; a container sidecar holds a lifeline to it and
// exits with it.
package supervise

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/emit/seatbelt"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	inside "github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/exitcode"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/mcpolicy/mcpolicy/runtime/egress/forwarder"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// Options say how to run one server.
type Options struct {
	Backend string           // one of Backends
	Machine compiler.Machine // project root and home; Self and EgressSocket are filled here
	// Self is a statically linked mcpolicy: bound read-only into the
	// sandbox, it forwards the sandbox's loopback to the proxy.
	Self string
	Log  io.Writer // decisions, JSON lines; nil: none
	// LogLimit is the size the log stops growing at: egress.Proxy.LogLimit.
	LogLimit int64
	Resolve  func(ctx context.Context, host string) ([]netip.Addr, error) // nil: the system resolver
	// Exempt: addresses the operator says where they are (a hosts
	// table), not refused as this machine's: egress.Proxy.Exempt. The
	// tests put their stand-in internet on lo.
	Exempt func(netip.Addr) bool
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Environ holds the values of the plan's passthrough variables.
	Environ []string
	// StartTimeout bounds the wait for a container sidecar; 0: 30 s.
	StartTimeout time.Duration
	// Launch is the launch's record (nil: none): the server's stderr is
	// teed into it on its way to Stderr, and its end logged.
	Launch *launchlog.Launch
	// Tools is the plan's tool surface (nil: no tools section): the
	// relay (runtime/toolrelay) runs between Stdin and Stdout and the
	// sandbox's stdio, its decisions logged in Launch.
	Tools *toolpolicy.Policy
	// UpstreamRoots verify the destinations credentials are sent to:
	// egress.Proxy.UpstreamRoots (nil: the host's roots; tests set theirs).
	UpstreamRoots *x509.CertPool
	// Dial makes the proxy's connections to destinations:
	// egress.Proxy.Dial (nil: a net.Dialer). For tests and embedding.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Run starts the server and returns its exit status once everything it
// started has stopped.
func Run(ctx context.Context, p *compiler.Plan, o Options) (int, error) {
	if o.StartTimeout == 0 {
		o.StartTimeout = 30 * time.Second
	}
	b, err := registry.Lookup(o.Backend)
	if err != nil {
		return 1, err
	}
	rt := b.Runtime()
	// The plan's credentials: each value read at spawn (Environ, or the
	// grant's command), the server given a placeholder under the grant's
	// name and the proxy's session CA to trust, the value put into
	// requests to the grant's destinations alone.
	if err := checkCredentials(p, p.Credentials, rt.Sandbox, b.Name()); err != nil {
		return 1, err
	}
	start, ok := runners[rt.Sandbox]
	if !ok && rt.Sandbox == artefact.Cluster { // a cluster runs it, not this machine
		return 1, fmt.Errorf("server %q: the %s backend runs in a cluster: apply .mcpolicy/%s/%s.yaml with kubectl (docs/kubernetes.md)", p.Server, b.Name(), b.Builds(), p.Server)
	}
	if !ok { // landlock: its launcher starts it, with no proxy to run beside
		if p.Network.Mode == "allowlist" {
			return 1, fmt.Errorf("server %q: the %s backend cannot enforce an egress allowlist (mcpolicy explain %s --backend %s): use bwrap or docker", p.Server, b.Name(), p.Server, b.Name())
		}
		return 1, fmt.Errorf("server %q: for the %s backend use mcpolicy exec", p.Server, b.Name())
	}
	s := &session{plan: p, opt: o, rt: rt, machine: o.Machine, checkPeers: true}
	defer s.cleanup()
	if p.Network.Mode == "allowlist" {
		if err := s.startProxy(); err != nil {
			return 1, err
		}
		if len(p.Credentials) > 0 {
			if err := s.prepareCredentials(p.Credentials); err != nil {
				return 1, err
			}
		}
	}
	if o.Launch == nil {
		return start(s, ctx)
	}
	o.Launch.Set(o.Machine.ProjectRoot, p.Server, b.Name(), p.Hash)
	tee, err := launchlog.NewTee(o.Stderr, &o.Launch.Stderr)
	if err != nil {
		return 1, err
	}
	s.serverStderr = tee.W
	code, err := start(s, ctx)
	tee.Finish()
	if err == nil {
		o.Launch.Ended(code, "")
	}
	return code, err
}

type session struct {
	plan     *compiler.Plan
	opt      Options
	rt       artefact.Runtime // the backend's: what it runs in
	machine  compiler.Machine
	dir      string
	proxy    *egress.Proxy
	cleanups []func()
	// serverStderr, when set, is the server's stderr in place of
	// opt.Stderr: the launch log's tee.
	serverStderr *os.File
	// relay is the tool relay on the sandbox's stdio (nil: none).
	relay *launch.ToolRelay
	// creds are the credentials the proxy injects (nil: none).
	creds *credentials

	// checkPeers admits to the socket only the sandbox's processes (off
	// only in a test's control case); sandbox says which those are.
	checkPeers bool
	sandbox    sandbox
	// selfChecks are the tokens of checkOwn's connections in flight, each
	// with the channel admit closes when this process's proxy reads it.
	selfChecks sync.Map
}

// sandbox is the process the proxy's socket serves: its root (bwrap's
// pid, or the sidecar's first process) and the uid its processes run as,
// as this process sees them. Connections wait until it is known.
type sandbox struct {
	once  sync.Once
	ready chan struct{}
	root  int // 0: none (the socket serves nobody)
	uid   int
}

func (b *sandbox) init() { b.ready = make(chan struct{}) }

// set names the sandbox, once; set(0, 0) closes the socket to everyone.
// Without a proxy (no allowlist) there is nothing to name.
func (b *sandbox) set(root, uid int) {
	if b.ready == nil {
		return
	}
	b.once.Do(func() {
		b.root, b.uid = root, uid
		close(b.ready)
	})
}

// admit is the proxy's check of every connection to its socket: only the
// sandbox's own processes, as the kernel identifies them, get through.
func (s *session) admit(c net.Conn) error {
	if !s.checkPeers {
		return nil
	}
	if egress.FromSelf(c) { // checkOwn: the socket bwrap binds is this proxy's
		c.SetReadDeadline(time.Now().Add(selfCheckWait))
		line, _ := bufio.NewReader(io.LimitReader(c, 128)).ReadString('\n')
		if seen, ok := s.selfChecks.LoadAndDelete(strings.TrimSpace(line)); ok {
			close(seen.(chan struct{}))
		}
		return egress.ErrSelf
	}
	select {
	case <-s.sandbox.ready:
	case <-time.After(s.opt.StartTimeout):
		return errors.New("the sandbox did not start")
	}
	if s.sandbox.root == 0 {
		return errors.New("no sandbox uses this socket")
	}
	_, err := egress.CheckPeer(c, s.sandbox.root, s.sandbox.uid)
	return err
}

func (s *session) cleanup() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

// startProxy serves the proxy on a unix socket, 0600, in a fresh 0700
// folder of ours (under $XDG_RUNTIME_DIR, else TMPDIR): no other user can
// reach the path. The sandbox does not need the path: the socket itself is
// bound into it. A container sidecar running as another uid gets the
// socket once that uid is known (container). Whoever does reach the
// socket is admitted only if the kernel says it is a process of this
// run's sandbox (admit): not another sandbox of the same user, not a
// process of the user's outside any sandbox.
func (s *session) startProxy() error {
	allow := s.plan.Network.Rules()
	parent := socketParent()
	if s.rt.Sandbox == artefact.Bwrap && os.Geteuid() == 0 && !s.plan.User.Root() && !s.plan.User.Invoker {
		// bwrap will run as the plan's user (openSocketTo) and resolve
		// the socket's path as that user: root's runtime folder is 0700.
		parent = tempParent()
	}
	// The folder is ours alone only where the server cannot write: there
	// it could swap the socket, or its folder, for a link (the chmods below
	// refuse one, but a socket it made in our place would serve nothing).
	if g, in := launch.InsideAny(parent, s.plan.WritableSources(s.machine)); in {
		return fmt.Errorf("the folder for the egress proxy's socket, %s ($XDG_RUNTIME_DIR, else $TMPDIR), lies inside %s, which server %s may write: set TMPDIR (and XDG_RUNTIME_DIR) to a folder outside every read-write grant", parent, g, s.plan.Server)
	}
	sweepStale(parent)
	if tmp := tempParent(); tmp != parent {
		sweepStale(tmp) // left by a supervisor that ran with another environment
	}
	var err error
	if s.dir, err = os.MkdirTemp(parent, "mcpolicy-egress-"); err != nil {
		return err
	}
	s.cleanups = append(s.cleanups, func() { os.RemoveAll(s.dir) })
	if err := hostfile.Chmod(s.dir, 0o700); err != nil { // MkdirTemp's already, whatever the umask took
		return err
	}
	sock := filepath.Join(s.dir, "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	if err := hostfile.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return err
	}
	s.sandbox.init()
	// Whatever waits for a sandbox that never came is refused at the end.
	s.cleanups = append(s.cleanups, func() { s.sandbox.set(0, 0) })
	s.proxy = &egress.Proxy{Allow: allow, Resolve: s.opt.Resolve, Exempt: s.opt.Exempt, Log: s.opt.Log, LogLimit: s.opt.LogLimit, Dial: s.opt.Dial}
	go s.proxy.Serve(s.proxy.Guard(ln, s.admit))
	// Close ends every request, the sidecar's lifeline among them, then
	// the tunnels, and waits until every decision is logged.
	s.cleanups = append(s.cleanups, func() {
		s.proxy.Close()
		if n := s.proxy.NotLogged(); n > 0 && s.opt.Log != s.opt.Stderr && s.opt.Stderr != nil {
			fmt.Fprintf(s.opt.Stderr, "mcpolicy run: %d egress decisions were not logged: the decision log reached its limit (--log-max)\n", n)
		}
	})
	s.machine.EgressSocket = sock
	// The forwarder is bound into bwrap and container sandboxes. Seatbelt's
	// server reaches the proxy on the host's loopback (s.seatbelt): nothing
	// is bound, and mcpolicy on macOS is not an ELF executable to check.
	if s.rt.Sandbox == artefact.Seatbelt {
		return nil
	}
	if s.machine.Self, err = forwarderBinary(s.opt.Self); err != nil {
		return err
	}
	if u := s.plan.User; s.rt.Sandbox == artefact.Bwrap && os.Geteuid() == 0 && !u.Root() && !u.Invoker {
		// bwrap, run as the plan's user, resolves the forwarder's path as
		// that user: mcpolicy installed below /root is out of its reach.
		// A copy in the socket's folder, root's and searchable by the
		// user's group alone (openSocketTo), is not.
		c := &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}
		if launch.Reaches(c, s.machine.Self) != nil {
			if s.machine.Self, err = copyInto(s.dir, s.machine.Self); err != nil {
				return fmt.Errorf("the forwarder for the server's user: %v", err)
			}
		}
	}
	return nil
}

// copyInto links (on the same filesystem), or else copies, the executable
// at src into dir, mode 0755, and returns the new path.
func copyInto(dir, src string) (string, error) {
	dst := filepath.Join(dir, "mcpolicy")
	if os.Link(src, dst) == nil {
		if fi, err := os.Stat(dst); err == nil && fi.Mode().Perm()&0o005 == 0o005 {
			return dst, nil // the same inode: others may read and run it
		}
		os.Remove(dst)
	}
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return dst, os.Chmod(dst, 0o755)
}

// selfCheckWait bounds checkOwn's round trip through this process's own
// proxy.
const selfCheckWait = 5 * time.Second

// checkOwn proves that the socket descriptor fd, which bwrap is to bind,
// is this run's proxy: a random token sent through the descriptor must
// reach this process's admit. Another process listening in its place
// (renamed in between; a pid it reused would fool a check of the
// listener's credentials) receives the token, and cannot close the
// channel in this process.
func (s *session) checkOwn(fd int) error {
	b := make([]byte, 16)
	rand.Read(b)
	token := hex.EncodeToString(b)
	seen := make(chan struct{})
	s.selfChecks.Store(token, seen)
	defer s.selfChecks.Delete(token)
	c, err := launch.DialDescriptor(fd)
	if err != nil {
		return fmt.Errorf("cannot be reached: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(selfCheckWait))
	if _, err := fmt.Fprintf(c, "%s\n", token); err != nil {
		return fmt.Errorf("cannot be written: %v", err)
	}
	select {
	case <-seen:
		return nil
	case <-time.After(selfCheckWait):
		return errors.New("is not this mcpolicy run's proxy (another process put its own socket in its place?): refusing to start the server")
	}
}

// socketParent is where the socket's folder is made: $XDG_RUNTIME_DIR
// when it is what the XDG spec promises (a directory, not a symlink,
// owned by this user, that no one else may enter), else tempParent.
func socketParent() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) && len(d) <= maxParent {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() && fi.Mode().Perm()&0o077 == 0 && ownedByUs(fi) {
			return filepath.Clean(d)
		}
	}
	return tempParent()
}

// maxParent: a socket's path has at most 103 bytes on macOS (107 on
// Linux), and the folder and the socket's name take 40 of them.
const maxParent = 60

// tempParent is TMPDIR, or /tmp when TMPDIR is too long for a socket path.
// The folder made in it is 0700 all the same.
func tempParent() string {
	if d := os.TempDir(); len(d) <= maxParent {
		return d
	}
	return "/tmp"
}

// ownedByUs reports whether a file belongs to this process's user.
func ownedByUs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// sweepStale removes the socket folders of supervisors that were killed
// outright: ours, older than a minute, with a socket nobody listens on
// (the kernel's table says, where there is one; elsewhere a live proxy
// always accepts, if only to refuse the connection).
func sweepStale(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "mcpolicy-egress-*"))
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || !ownedByUs(fi) || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		sock := filepath.Join(d, "egress.sock")
		if live, known := listening(sock); known {
			if !live {
				os.RemoveAll(d)
			}
			continue
		}
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
			os.RemoveAll(d)
		}
	}
}

// staticSelf checks that the forwarder can run in any sandbox: an
// executable without a dynamic loader.
func staticSelf(path string) (string, error) {
	if path == "" {
		var err error
		if path, err = os.Executable(); err != nil {
			return "", err
		}
	}
	if err := CheckStatic(path); err != nil {
		return "", err
	}
	return path, nil
}

// forwarderBinary is the executable bound into the sandbox as the egress
// forwarder: self when given; else mcpolicy-launch beside this executable
// when it is there and static (it runs the same forwarder, and stays
// resident beside the server at a fraction of mcpolicy's memory); else
// this executable.
func forwarderBinary(self string) (string, error) {
	if self != "" {
		return staticSelf(self)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return forwarderBeside(exe)
}

func forwarderBeside(exe string) (string, error) {
	l := filepath.Join(filepath.Dir(exe), launch.LauncherName)
	if fi, err := os.Stat(l); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 && CheckStatic(l) == nil {
		return l, nil
	}
	return staticSelf(exe)
}

// bwrap runs the plan's bwrap arguments the way mcpolicy-launch does (see
// launch.PrepareBwrap): mount sources by descriptor, opened without
// following symlinks, the project's top level fixed, passthrough values on
// a memfd, and bwrap with an empty environment. The forwarder is bwrap's
// command and starts the server.
func (s *session) bwrap(ctx context.Context) (int, error) {
	args, err := bwrap.Args(s.plan, compiler.LaunchPaths{Machine: s.machine}, bwrap.DetectLayout(), 0)
	if err != nil {
		return 1, err
	}
	spec := &launch.BwrapSpec{BwrapSpec: artefact.BwrapSpec{Backend: artefact.BwrapProgram, Server: s.plan.Server, Plan: s.plan.Hash, Env: s.creds.names(s.plan.EnvNames()), Args: args}}
	if s.proxy != nil {
		spec.OwnSocket, spec.CheckOwn = inside.Socket, s.checkOwn
	}
	if s.creds != nil {
		spec.Data = s.creds.files
	}
	b, err := launch.PrepareBwrap(spec, s.machine.ProjectRoot, s.machine.Home, s.creds.environ(s.opt.Environ))
	if err != nil {
		return 1, err
	}
	// Started by root, bwrap runs as the plan's user (Credential), and so
	// does the forwarder in it: bwrap resolves the socket's bound path as
	// that user, who connects to it. The folder stays ours to write alone.
	uid := os.Geteuid()
	if c := b.Credential(); c != nil {
		uid = int(c.Uid)
		if s.proxy != nil {
			if err := s.openSocketTo(uid, int(c.Gid)); err != nil {
				return 1, err
			}
		}
	}
	cmd, err := b.Command()
	if err != nil {
		return 1, err
	}
	if err := s.stdio(cmd); err != nil {
		return 1, err
	}
	if uid != os.Geteuid() {
		var stdio []*os.File
		for _, x := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
			if f, ok := x.(*os.File); ok {
				stdio = append(stdio, f)
			}
		}
		if err := launch.GiveStdio(uid, stdio...); err != nil {
			return 1, err
		}
	}
	// Signals go to what bwrap runs, never to bwrap (signalSandboxed),
	// and bwrap gets none from a terminal either: its own process group.
	// (The sandbox is a new session: it has no controlling terminal to
	// read from as a background group.)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// bwrap's process and its descendants are the sandbox; the forwarder
	// in it runs as the uid bwrap starts as, as the host sees it (bwrap
	// maps the sandbox's uid to that one).
	return s.run(ctx, cmd, func(pid int) { s.sandbox.set(pid, uid) }, signalSandboxed)
}

// container starts the sidecar, waits until its forwarder has called in,
// then runs the server in the sidecar's network namespace.
func (s *session) container(ctx context.Context) (int, error) {
	engine := s.rt.Program
	sidecar, sidecarPID := "", 0
	if s.plan.Network.Mode == "allowlist" {
		sidecar = "mcpolicy-egress-" + s.plan.Server + "-" + randomHex(4)
		args, err := docker.SidecarArgs(s.plan, s.machine, sidecar)
		if err != nil {
			return 1, err
		}
		s.cleanups = append(s.cleanups, func() {
			exec.Command(engine, "rm", "-f", sidecar).Run() // usually gone already: its lifeline ended
		})
		if out, err := exec.CommandContext(ctx, engine, args...).CombinedOutput(); err != nil {
			return 1, fmt.Errorf("starting the egress sidecar: %s %v: %s", engine, err, bytes.TrimSpace(out))
		}
		if sidecarPID, err = s.trustSidecar(ctx, engine, sidecar); err != nil {
			return 1, err
		}
		wctx, cancel := context.WithTimeout(ctx, s.opt.StartTimeout)
		err = s.proxy.WaitForwarder(wctx)
		cancel()
		if err != nil {
			logs, _ := exec.Command(engine, "logs", sidecar).CombinedOutput()
			return 1, fmt.Errorf("%v (sidecar %s logs: %s)", err, sidecar, bytes.TrimSpace(logs))
		}
	}
	network := "container:" + sidecar
	if sidecar != "" && s.rt.Engine.JoinByPath {
		// podman records --network container:X as a dependency and then
		// will not --rm X while the server's container exists: a sidecar
		// whose lifeline ended before the server was gone (the supervisor
		// killed) would stay behind, exited. Joining the namespace by its
		// path records nothing.
		network = "ns:/proc/" + strconv.Itoa(sidecarPID) + "/ns/net"
	}
	args, err := docker.ServerArgs(s.plan, s.machine, network)
	if err != nil {
		return 1, err
	}
	if args, err = s.creds.engineArgs(args, s.dir); err != nil {
		return 1, err
	}
	// A name of its own, for signals (engineSignal).
	name := "mcpolicy-run-" + s.plan.Server + "-" + randomHex(4)
	args = append([]string{args[0], "--name", name}, args[1:]...)
	// As mcpolicy-launch --engine runs them: no source through a symlink,
	// the project's top level fixed.
	verifier, err := staticSelf(s.opt.Self)
	if err != nil {
		return 1, err
	}
	// The verifier (this static mcpolicy, bound read-only) checks the
	// mounts inside the container before the server starts.
	profile, err := launch.EngineSeccomp()
	if err != nil {
		return 1, err
	}
	defer profile.Close()
	if args, err = (launch.Engine{Path: engine, Root: s.machine.ProjectRoot, Home: s.machine.Home, Unprotected: s.plan.UnprotectedNames(), Verifier: verifier,
		Seccomp: "/proc/self/fd/3"}).Prepare(args); err != nil {
		return 1, err
	}
	cmd := exec.Command(engine, args...)
	cmd.ExtraFiles = []*os.File{profile} // fd 3
	// -e NAME copies the value from the engine's environment: a
	// credential's name has its placeholder there, never the value.
	cmd.Env = s.creds.environ(append(os.Environ(), s.opt.Environ...))
	if err := s.stdio(cmd); err != nil {
		return 1, err
	}
	// Signals reach the server through the engine (engineSignal), not
	// through the client's proxy, which podman sets up only after the
	// container runs, dying of a signal that comes first. Unless its
	// stdin is a terminal (it would stop reading it from a background
	// group), the client gets none from a terminal either: a process
	// group of its own, so none comes twice.
	if !isTerminal(cmd.Stdin) {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setpgid = true
	}
	return s.run(ctx, cmd, nil, engineSignal(engine, name))
}

// signalWait bounds the wait for the process a signal is for (the
// sandbox's first process, the server's container) to exist: then the
// process started (bwrap, the engine's client) gets it instead.
const signalWait = 5 * time.Second

// engineSignal passes a signal to the container named name with `engine
// kill`, which delivers it to the container's first process: the server
// (the verifier before it execs the server). Until the container exists
// it tries again; if it never does, the client gets the signal after all.
func engineSignal(engine, name string) func(*os.Process, syscall.Signal, <-chan struct{}) {
	return func(client *os.Process, sig syscall.Signal, exited <-chan struct{}) {
		deadline := time.Now().Add(signalWait)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := exec.CommandContext(ctx, engine, "kill", "--signal", strconv.Itoa(int(sig)), name).Run()
			cancel()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				client.Signal(sig) // an error once it is reaped: nothing is sent then
				return
			}
			select {
			case <-exited:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && terminal(f.Fd())
}

// seatbelt serves the proxy on the host's loopback at the plan's port (the
// one port the profile lets the server reach) and runs the wrapper.
func (s *session) seatbelt(ctx context.Context) (int, error) {
	if runtime.GOOS != "darwin" {
		return 1, errors.New("the seatbelt backend runs only on macOS (sandbox-exec)")
	}
	if s.plan.Network.Mode == "allowlist" {
		s.sandbox.set(0, 0) // nothing in this sandbox uses the unix socket
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.plan.Network.ProxyPort)))
		if err != nil {
			return 1, fmt.Errorf("the egress proxy's port for %q is taken: %v", s.plan.Server, err)
		}
		go s.proxy.Serve(ln)
	}
	pr, err := seatbelt.Build(s.plan)
	if err != nil {
		return 1, err
	}
	script, err := seatbelt.Wrapper(s.plan, pr, "")
	if err != nil {
		return 1, err
	}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "mcpolicy-run-"); err != nil {
			return 1, err
		}
		s.cleanups = append(s.cleanups, func() { os.RemoveAll(s.dir) })
	}
	// The wrapper reads its profile beside itself, as in .mcpolicy/seatbelt/.
	path := filepath.Join(s.dir, s.plan.Server+".sh")
	if err := os.WriteFile(filepath.Join(s.dir, s.plan.Server+".sb"), pr.Text(s.plan), 0o600); err != nil {
		return 1, err
	}
	if err := os.WriteFile(path, script, 0o700); err != nil {
		return 1, err
	}
	cmd := exec.Command("/bin/sh", path)
	cmd.Env = append(os.Environ(), s.opt.Environ...)
	cmd.Env = append(cmd.Env, "PROJECT_ROOT="+s.machine.ProjectRoot)
	if err := s.stdio(cmd); err != nil {
		return 1, err
	}
	return s.run(ctx, cmd, nil, nil)
}

// stdio gives cmd run's streams, or, for a plan with a tools section,
// the tool relay's pipes in place of stdin and stdout (s.run runs it).
func (s *session) stdio(cmd *exec.Cmd) error {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.opt.Stdin, s.opt.Stdout, s.opt.Stderr
	if s.opt.Tools != nil {
		relay, err := launch.NewToolRelay(s.opt.Tools, s.opt.Launch)
		if err != nil {
			return err
		}
		s.relay = relay
		s.cleanups = append(s.cleanups, relay.Close) // a start that fails after this
		cmd.Stdin, cmd.Stdout = relay.Stdio(nil, nil)
	}
	if s.serverStderr != nil {
		cmd.Stderr = s.serverStderr
	}
	// If this process is killed outright, the child goes too. What cmd's
	// attributes say already stays: bwrap's Credential (a root supervisor
	// starts it as the plan's user) was replaced here, and the server ran
	// as the host's root (red team).
	withParentDeath(cmd)
	return nil
}

// run is the package's run with the session's tool relay, if any, between
// run's streams and cmd's from its start to its end.
func (s *session) run(ctx context.Context, cmd *exec.Cmd, started func(pid int), deliver func(p *os.Process, sig syscall.Signal, exited <-chan struct{})) (int, error) {
	if s.relay == nil {
		return run(ctx, cmd, started, deliver)
	}
	relay := s.relay
	code, err := run(ctx, cmd, func(pid int) {
		relay.Start(s.opt.Stdin, s.opt.Stdout)
		if started != nil {
			started(pid)
		}
	}, deliver)
	if cmd.Process == nil { // never started
		relay.Close()
		return code, err
	}
	relay.Wait()
	return code, err
}

// openSocketTo lets uid reach the proxy's socket: the folder searchable
// (not readable or writable) by gid, its group, and by no one else; the
// socket uid's. Not by others: the folder may also hold a link to this
// mcpolicy (copyInto), and a supervisor killed outright leaves it behind
// until the next run sweeps it. Whoever else of the group finds its
// random name is still admitted only if the kernel says it is this run's
// sandbox (admit).
func (s *session) openSocketTo(uid, gid int) error {
	if err := os.Lchown(s.dir, -1, gid); err != nil {
		return fmt.Errorf("opening the egress socket's folder to the server's gid %d: %v", gid, err)
	}
	if err := hostfile.Chmod(s.dir, 0o710); err != nil {
		return err
	}
	if err := os.Lchown(filepath.Join(s.dir, "egress.sock"), uid, -1); err != nil {
		return fmt.Errorf("opening the egress socket to the server's uid %d: %v", uid, err)
	}
	return nil
}

// run starts cmd, tells started (if any) its pid, passes SIGINT, SIGTERM
// and SIGHUP on (and SIGTERM when ctx ends) — to cmd, or through deliver
// when cmd is not what must get them (bwrap: signalSandboxed) — and
// returns its exit status, 128+N for a signal N as shells report it.
func run(ctx context.Context, cmd *exec.Cmd, started func(pid int), deliver func(p *os.Process, sig syscall.Signal, exited <-chan struct{})) (int, error) {
	// From before the start: a signal that comes while cmd starts is
	// passed on too, not the end of this process.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 127, err
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	done := make(chan struct{})
	pass := func(sig syscall.Signal) {
		if deliver != nil {
			deliver(cmd.Process, sig, done)
		} else {
			cmd.Process.Signal(sig)
		}
	}
	forwarding := make(chan struct{})
	go func() {
		defer close(forwarding)
		for {
			select {
			case sig := <-sigs:
				pass(sig.(syscall.Signal))
			case <-ctx.Done():
				pass(syscall.SIGTERM)
				return
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-forwarding // no signal is passed on after run returns

	return exitcode.OfWait(err)
}

// Forward is `mcpolicy egress-forward`, inside the sandbox (see
// forwarder.Run; mcpolicy-launch runs the same).
func Forward(port int, socket string, lifeline bool, argv []string) (int, error) {
	return forwarder.Run(port, socket, lifeline, argv)
}

// trustSidecar names the sidecar as the socket's sandbox: its first
// process (the forwarder, or an init the engine adds in front of it) and
// the uid it runs as on the host, which is the plan's uid under a rootful
// engine, another under a rootless one or a remapping daemon. The socket
// is then opened to that uid: it stays 0600 when the uid is ours; root
// gives it to the sidecar's uid (0600 still; root passes anyway); anyone
// else cannot give a file away and makes it 0666, the 0700 folder still
// keeping every other user's path away from it. Until then the
// forwarder's lifeline is told "permission denied" and tries again.
func (s *session) trustSidecar(ctx context.Context, engine, name string) (int, error) {
	out, err := exec.CommandContext(ctx, engine, "inspect", "--format", "{{.State.Pid}}", name).Output()
	pid, perr := strconv.Atoi(string(bytes.TrimSpace(out)))
	if err != nil || perr != nil || pid <= 1 {
		return 0, fmt.Errorf("finding the egress sidecar's process: %v %q", err, bytes.TrimSpace(out))
	}
	euid, fsuid, err := egress.ProcessUID(pid)
	if err != nil {
		return 0, fmt.Errorf("the egress sidecar's uid: %v", err)
	}
	sock := s.machine.EgressSocket
	switch me := os.Geteuid(); {
	case fsuid == me:
	case me == 0:
		err = os.Lchown(sock, fsuid, -1)
	default:
		err = hostfile.Chmod(sock, 0o666)
	}
	if err != nil {
		return 0, fmt.Errorf("opening the egress socket to the sidecar's uid %d: %v", fsuid, err)
	}
	s.sandbox.set(pid, euid)
	return pid, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
