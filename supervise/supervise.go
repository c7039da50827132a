// Package supervise is `mcpolicy run`: for a plan with an egress allowlist
// it starts the egress proxy, then the server confined by its backend with
// the proxy as its only way out, passes stdio through unchanged, and stops
// everything when either side ends. The proxy lives in this process, so it
// cannot outlive the server; a container sidecar holds a lifeline to it and
// exits with it.
package supervise

import (
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/egress"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/seatbelt"
	"github.com/mcpolicy/mcpolicy/launch"
)

// Options say how to run one server.
type Options struct {
	Backend string           // bwrap, docker, podman or seatbelt
	Machine compiler.Machine // project root and home; Self and EgressSocket are filled here
	// Self is a statically linked mcpolicy: bound read-only into the
	// sandbox, it forwards the sandbox's loopback to the proxy.
	Self    string
	Log     io.Writer                                                    // decisions, JSON lines; nil: none
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error) // nil: the system resolver
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// Environ holds the values of the plan's passthrough variables.
	Environ []string
	// StartTimeout bounds the wait for a container sidecar; 0: 30 s.
	StartTimeout time.Duration
}

// Run starts the server and returns its exit status once everything it
// started has stopped.
func Run(ctx context.Context, p *compiler.Plan, o Options) (int, error) {
	if o.StartTimeout == 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.Backend == "landlock" {
		if p.Network.Mode == "allowlist" {
			return 1, fmt.Errorf("server %q: the landlock backend cannot enforce an egress allowlist (mcpolicy explain %s --backend landlock): use bwrap or docker", p.Server, p.Server)
		}
		return 1, fmt.Errorf("server %q: for the landlock backend use mcpolicy exec", p.Server)
	}
	s := &session{plan: p, opt: o, machine: o.Machine}
	defer s.cleanup()
	if p.Network.Mode == "allowlist" {
		if err := s.startProxy(); err != nil {
			return 1, err
		}
	}
	switch o.Backend {
	case "bwrap":
		return s.bwrap(ctx)
	case "docker", "podman":
		return s.container(ctx, o.Backend)
	case "seatbelt":
		return s.seatbelt(ctx)
	}
	return 1, fmt.Errorf("unknown backend %q (bwrap, docker, podman, seatbelt)", o.Backend)
}

type session struct {
	plan     *compiler.Plan
	opt      Options
	machine  compiler.Machine
	dir      string
	proxy    *egress.Proxy
	server   *http.Server
	cleanups []func()
}

func (s *session) cleanup() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

// startProxy serves the proxy on a unix socket in a fresh folder. The
// socket is world-connectable (a container's user is not ours) inside a
// folder only its random name leads to: whoever reaches it gets this
// plan's allowlist, no more.
func (s *session) startProxy() error {
	allow, err := egress.ParseAllowlist(s.plan.Network.Allow)
	if err != nil {
		return err
	}
	// A socket's path has at most 103 bytes on macOS (107 on Linux): a
	// long TMPDIR falls back to /tmp.
	tmpdir := os.TempDir()
	if len(tmpdir) > 60 {
		tmpdir = "/tmp"
	}
	sweepStale(tmpdir)
	if s.dir, err = os.MkdirTemp(tmpdir, "mcpolicy-egress-"); err != nil {
		return err
	}
	s.cleanups = append(s.cleanups, func() { os.RemoveAll(s.dir) })
	if err := os.Chmod(s.dir, 0o711); err != nil {
		return err
	}
	sock := filepath.Join(s.dir, "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		ln.Close()
		return err
	}
	s.proxy = &egress.Proxy{Allow: allow, Resolve: s.opt.Resolve, Log: s.opt.Log}
	s.server = &http.Server{Handler: s.proxy, ReadHeaderTimeout: 30 * time.Second}
	go s.server.Serve(ln)
	// Close ends every request, the sidecar's lifeline among them.
	// Then the proxy ends the tunnels, which the server no longer tracks,
	// and waits until every decision is logged.
	s.cleanups = append(s.cleanups, func() { s.server.Close(); s.proxy.Close() })
	s.machine.EgressSocket = sock
	if s.machine.Self, err = staticSelf(s.opt.Self); err != nil {
		return err
	}
	return nil
}

// sweepStale removes the socket folders of supervisors that were killed
// outright: older than a minute, with a socket nobody answers on (a live
// proxy always accepts).
func sweepStale(tmpdir string) {
	dirs, _ := filepath.Glob(filepath.Join(tmpdir, "mcpolicy-egress-*"))
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		c, err := net.DialTimeout("unix", filepath.Join(d, "egress.sock"), time.Second)
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

// CheckStatic refuses a dynamically linked executable: inside a sandbox
// its loader and libraries may not be there.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked and cannot run inside the sandbox as the egress forwarder: build mcpolicy with CGO_ENABLED=0 (or pass --self a static build)", path)
		}
	}
	return nil
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
	spec := &launch.BwrapSpec{Backend: bwrap.Backend, Server: s.plan.Server, Plan: s.plan.Hash, Env: s.plan.Env, Args: args}
	b, err := launch.PrepareBwrap(spec, s.machine.ProjectRoot, s.machine.Home, s.opt.Environ)
	if err != nil {
		return 1, err
	}
	cmd, err := b.Command()
	if err != nil {
		return 1, err
	}
	s.stdio(cmd)
	return run(ctx, cmd)
}

// container starts the sidecar, waits until its forwarder has called in,
// then runs the server in the sidecar's network namespace.
func (s *session) container(ctx context.Context, engine string) (int, error) {
	sidecar := ""
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
		wctx, cancel := context.WithTimeout(ctx, s.opt.StartTimeout)
		err = s.proxy.WaitForwarder(wctx)
		cancel()
		if err != nil {
			logs, _ := exec.Command(engine, "logs", sidecar).CombinedOutput()
			return 1, fmt.Errorf("%v (sidecar %s logs: %s)", err, sidecar, bytes.TrimSpace(logs))
		}
	}
	network := "container:" + sidecar
	if sidecar != "" && engine == "podman" {
		// podman records --network container:X as a dependency and then
		// will not --rm X while the server's container exists: a sidecar
		// whose lifeline ended before the server was gone (the supervisor
		// killed) would stay behind, exited. Joining the namespace by its
		// path records nothing.
		out, err := exec.CommandContext(ctx, engine, "inspect", "--format", "{{.State.Pid}}", sidecar).Output()
		pid := string(bytes.TrimSpace(out))
		if err != nil || pid == "" || pid == "0" {
			return 1, fmt.Errorf("finding the egress sidecar's process: %v", err)
		}
		network = "ns:/proc/" + pid + "/ns/net"
	}
	args, err := docker.ServerArgs(s.plan, s.machine, network)
	if err != nil {
		return 1, err
	}
	// As mcpolicy-launch --engine runs them: no source through a symlink,
	// the project's top level fixed.
	verifier := s.machine.Self
	if verifier == "" {
		if verifier, err = staticSelf(s.opt.Self); err != nil {
			return 1, err
		}
	}
	// The verifier (this static mcpolicy, bound read-only) checks the
	// mounts inside the container before the server starts.
	if args, err = (launch.Engine{Path: engine, Root: s.machine.ProjectRoot, Home: s.machine.Home, Unprotected: s.plan.Unprotected, Verifier: verifier}).Prepare(args); err != nil {
		return 1, err
	}
	cmd := exec.Command(engine, args...)
	cmd.Env = append(os.Environ(), s.opt.Environ...) // -e NAME copies the value from the engine's environment
	s.stdio(cmd)
	return run(ctx, cmd)
}

// seatbelt serves the proxy on the host's loopback at the plan's port (the
// one port the profile lets the server reach) and runs the wrapper.
func (s *session) seatbelt(ctx context.Context) (int, error) {
	if runtime.GOOS != "darwin" {
		return 1, errors.New("the seatbelt backend runs only on macOS (sandbox-exec)")
	}
	if s.plan.Network.Mode == "allowlist" {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.plan.Network.ProxyPort)))
		if err != nil {
			return 1, fmt.Errorf("the egress proxy's port for %q is taken: %v", s.plan.Server, err)
		}
		go s.server.Serve(ln)
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
	s.stdio(cmd)
	return run(ctx, cmd)
}

func (s *session) stdio(cmd *exec.Cmd) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.opt.Stdin, s.opt.Stdout, s.opt.Stderr
	// If this process is killed outright, the child goes too.
	cmd.SysProcAttr = sysProcAttr()
}

// run starts cmd, passes SIGINT, SIGTERM and SIGHUP on to it (and SIGTERM
// when ctx ends), and returns its exit status, 128+N for a signal N as
// shells report it.
func run(ctx context.Context, cmd *exec.Cmd) (int, error) {
	if err := cmd.Start(); err != nil {
		return 127, err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case sig := <-sigs:
				cmd.Process.Signal(sig)
			case <-ctx.Done():
				cmd.Process.Signal(syscall.SIGTERM)
				return
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}

// Forward is `mcpolicy egress-forward`, inside the sandbox: listen on
// 127.0.0.1:port, carry connections to the proxy's socket, and either run
// argv (stdio unchanged; its exit status returned) or, with lifeline,
// serve until the proxy is gone. With both, the server is killed when the
// proxy goes: no proxy, no server.
func Forward(port int, socket string, lifeline bool, argv []string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 1, err
	}
	defer ln.Close()
	go egress.Forward(ln, socket)

	if len(argv) == 0 {
		if !lifeline {
			return 1, errors.New("egress-forward: give a command to run, or --lifeline")
		}
		egress.Lifeline(socket)
		return 0, nil
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if lifeline {
		go func() {
			egress.Lifeline(socket)
			cancel()
		}()
	}
	return run(ctx, cmd)
}

func lookup(environ []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for i := len(environ) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(environ[i], "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
