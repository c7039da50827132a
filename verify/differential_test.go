package verify

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/internal/syncbuf"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
	_ "github.com/mcpolicy/mcpolicy/runtime/probe/fetch" // the fetch op
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// The differential test: generated policies, compiled once, run under every
// Linux backend with a probe in place of the server; the kernel's answers
// must match what the plan says, probe by probe.
//
//	MCPOLICY_VERIFY_CASES=N   generated cases per backend (default: see casesAndSeed)
//	MCPOLICY_VERIFY_SEED=S    the generator's seed (default 1)
//
// In CI (CI=true) a missing backend fails the test instead of skipping it.
//
// A quarter of the cases allow egress to a stand-in internet: HTTP(S)
// servers on 203.0.113.8 (TEST-NET-3, added to lo for the test; needs
// root, skipped without it unless CI=true) under names the proxy resolves
// from a table, never DNS. Those cases run through supervise.Run (the
// proxy, and bwrap's forwarder or the container sidecar) and probe fetches
// through the proxy, connections around it and UDP; landlock must refuse
// them.

const probeInSandbox = "/opt/probe/mcpolicy"

type backendRun struct {
	name string
	view View
	// run executes the attempts under the plan; nil error with results.
	run func(t *testing.T, c *testCase, attempts []probe.Attempt) ([]probe.Result, error)
	// refuses predicts a compile-time refusal from the plan alone.
	refuses func(p *compiler.Plan) bool
	// noEgress: the backend cannot enforce an allowlist; refused checks,
	// for a case refuses predicts it refuses, that it really refuses it
	// (nil: the prediction is the check).
	noEgress bool
	refused  func(c *testCase) error
	// structural checks, instead of running it, a case with an allowlist
	// the backend's engine here cannot confine (kubernetes: podman does
	// not enforce NetworkPolicy, and no egress-proxy Pod runs).
	structural func(c *testCase) error
	// mutation names a deliberate mistake (see mutations); serial runs
	// one case at a time (a mistake that shares the host's network
	// namespace would have the forwarders of parallel cases collide).
	mutation string
	serial   bool
}

type testCase struct {
	n      int
	root   string // project root
	policy string
	plan   *compiler.Plan
}

func (c *testCase) egress() bool { return c.plan.Network.Mode == "allowlist" }

// fixedTop says whether the plan mounts the project root read-write: its
// top level is fixed by the launcher (launch.PrepareBwrap, launch.Engine),
// not by the emitted arguments, so such a case runs as mcpolicy run
// starts it (runSupervised), never from bare arguments.
func (c *testCase) fixedTop() bool {
	return slices.ContainsFunc(c.plan.Mounts, compiler.Mount.FixedTop)
}

// launched says whether a case runs through the launcher (supervise.Run)
// under bwrap, docker and podman: an allowlist or a fixed top level.
func (c *testCase) launched() bool { return c.egress() || c.fixedTop() }

var (
	setupOnce sync.Once
	setupErr  error
	world     struct {
		base, probeDir, probeBin string
		fixture                  Fixture
		listener                 net.Listener
		tools                    map[string]string // bwrap, docker, podman: absolute paths, before any shim
		// egress: the stand-in internet (nil fixture.Egress when it
		// cannot be set up here: egressOff says why).
		egressOff string
		addedLo   bool
		upstreams []*httptest.Server
		resolve   func(context.Context, string) ([]netip.Addr, error)
		exempt    func(netip.Addr) bool // the stand-ins on lo are not the machine's own (egress.Hosts.Names)
		hosts     string
	}
)

// upstreamAddr is where the stand-in internet lives: TEST-NET-3, never
// routed, answered only by this machine's lo while the test runs. (The
// supervise tests use .7.)
const upstreamAddr = "203.0.113.8"

// setup builds the static probe and the fixture once per test binary. The
// base folder is outside /tmp: Landlock scratch mounts a tmpfs over /tmp.
func setup(t *testing.T) {
	testbin.SkipShort(t, "runs generated policies under bwrap, Landlock, docker, podman and podman kube play")
	setupOnce.Do(func() {
		base, err := os.MkdirTemp("/var/tmp", "mcpolicy-verify-")
		if err != nil {
			setupErr = err
			return
		}
		world.base = base
		os.Chmod(base, 0o755)
		world.probeDir = filepath.Join(base, "probe")
		os.MkdirAll(world.probeDir, 0o755)
		world.probeBin = filepath.Join(world.probeDir, "mcpolicy")
		bin, err := testbin.Path(testbin.McpolicyPkg)
		if err != nil {
			setupErr = fmt.Errorf("building the probe: %v", err)
			return
		}
		if err := testbin.CopyFile(bin, world.probeBin); err != nil {
			setupErr = err
			return
		}
		home := filepath.Join(base, "home")
		plant(filepath.Join(home, ".aws", "credentials"), "[default]\naws_secret_access_key = planted\n")
		plant(filepath.Join(home, ".ssh", "id_ed25519"), "planted key\n")
		outside := filepath.Join(base, "outside")
		plant(filepath.Join(outside, "probe.txt"), "outside\n")
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			setupErr = err
			return
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		world.listener = l
		world.fixture = Fixture{Home: home, Outside: outside, Listener: l.Addr().String()}
		world.tools = map[string]string{}
		for _, name := range []string{"bwrap", "docker", "podman"} {
			if p, err := exec.LookPath(name); err == nil {
				world.tools[name] = p
			}
		}
		setupErr = setupEgress()
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	if world.egressOff != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("egress cases cannot run (%s); CI must run them", world.egressOff)
		}
		t.Logf("no egress cases: %s", world.egressOff)
	}
}

// tool is the absolute path of bwrap, docker or podman as found before
// any shim was put on PATH.
func tool(name string) string {
	if p := world.tools[name]; p != "" {
		return p
	}
	return name
}

// setupEgress puts upstreamAddr on lo (when it is not there already) and
// starts the stand-in servers: plain HTTP on two ports, HTTPS on a third,
// and an HTTP server on 127.0.0.1 at the first port, which a name that
// rebinds to loopback would reach were the proxy to let it.
func setupEgress() error {
	if os.Geteuid() != 0 {
		world.egressOff = "not root: adding " + upstreamAddr + " to lo needs CAP_NET_ADMIN"
		return nil
	}
	if _, err := exec.LookPath("ip"); err != nil {
		world.egressOff = "no ip command (iproute2)"
		return nil
	}
	out, err := exec.Command("ip", "addr", "add", upstreamAddr+"/32", "dev", "lo").CombinedOutput()
	switch {
	case err == nil:
		world.addedLo = true
	case onLo(upstreamAddr):
		// There already: not ours to remove.
	default:
		return fmt.Errorf("ip addr add %s/32 dev lo: %v: %s", upstreamAddr, err, out)
	}
	serve := func(ln net.Listener, tls bool) {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "stand-in upstream\n")
		}))
		s.Listener.Close()
		s.Listener = ln
		if tls {
			s.StartTLS()
		} else {
			s.Start()
		}
		world.upstreams = append(world.upstreams, s)
	}
	listen := func(ip string, port int) (net.Listener, error) {
		return net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	}
	e := &Egress{Upstream: netip.MustParseAddr(upstreamAddr)}
	// The first port: free on both the upstream and loopback.
	for try := 0; ; try++ {
		ln, err := listen(upstreamAddr, 0)
		if err != nil {
			return err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		loop, err := listen("127.0.0.1", port)
		if err != nil {
			ln.Close()
			if try < 20 {
				continue
			}
			return fmt.Errorf("no port free on both %s and 127.0.0.1: %v", upstreamAddr, err)
		}
		serve(ln, false)
		serve(loop, false)
		e.HTTPPorts = append(e.HTTPPorts, port)
		break
	}
	for _, tls := range []bool{false, true} {
		ln, err := listen(upstreamAddr, 0)
		if err != nil {
			return err
		}
		serve(ln, tls)
		if port := ln.Addr().(*net.TCPAddr).Port; tls {
			e.TLSPort = port
		} else {
			e.HTTPPorts = append(e.HTTPPorts, port)
		}
	}
	// a.test, b.test and c.test are the upstream (c.test is never listed);
	// w.test is the apex of the wildcard *.w.test and x.w.test a name
	// below it; r.test rebinds to loopback, m.test to cloud metadata.
	world.hosts = fmt.Sprintf(`# the harness's names: never DNS
%s a.test b.test c.test w.test x.w.test
127.0.0.1 r.test
169.254.169.254 m.test
`, upstreamAddr)
	e.Hosts = map[string]netip.Addr{}
	for _, line := range strings.Split(world.hosts, "\n") {
		if f := strings.Fields(line); len(f) > 1 && !strings.HasPrefix(f[0], "#") {
			for _, name := range f[1:] {
				e.Hosts[name] = netip.MustParseAddr(f[0])
			}
		}
	}
	table, err := egress.ParseHosts(strings.NewReader(world.hosts))
	if err != nil {
		return err
	}
	world.exempt = table.Names
	world.resolve, err = egress.HostsResolver(strings.NewReader(world.hosts), func(_ context.Context, host string) ([]netip.Addr, error) {
		return nil, fmt.Errorf("%s: not in the harness's hosts table (no DNS in tests)", host)
	})
	if err != nil {
		return err
	}
	world.fixture.Egress = e
	return nil
}

// onLo reports whether lo holds addr.
func onLo(addr string) bool {
	out, err := exec.Command("ip", "-o", "addr", "show", "dev", "lo").Output()
	return err == nil && strings.Contains(string(out), " "+addr+"/")
}

// universe is what an allowlist is drawn from: names of the upstream (a
// wildcard among them), an address, and names that resolve somewhere
// private, on the stand-in ports.
func universe(e *Egress) []string {
	p1, p2, tls := strconv.Itoa(e.HTTPPorts[0]), strconv.Itoa(e.HTTPPorts[1]), strconv.Itoa(e.TLSPort)
	return []string{
		"a.test:" + p1, "a.test:" + tls, "b.test:" + p2,
		"*.w.test:" + p1, "*.w.test:" + tls,
		"r.test:" + p1, "m.test:" + p1,
		upstreamAddr + ":" + p2,
	}
}

// drawAllowlist picks each entry of the universe with even odds (at
// least one), some spelled in upper case: the plan holds them canonical.
func drawAllowlist(rng *rand.Rand, e *Egress) []string {
	var allow []string
	u := universe(e)
	for _, entry := range u {
		if rng.IntN(2) == 0 {
			if rng.IntN(4) == 0 {
				entry = strings.ToUpper(entry)
			}
			allow = append(allow, entry)
		}
	}
	if len(allow) == 0 {
		allow = append(allow, u[rng.IntN(len(u))])
	}
	return allow
}

// plant writes a file any uid may write: under docker the probe is uid
// 1000, and the plan, not file modes, must decide what it can change.
func plant(path, content string) {
	os.MkdirAll(filepath.Dir(path), 0o777)
	os.WriteFile(path, []byte(content), 0o666)
	os.Chmod(path, 0o666) // past the umask
}

func TestMain(m *testing.M) {
	// This binary doubles as the launcher for mutated plans, and so also as
	// the launcher's stage 2 inside the namespaces.
	if len(os.Args) > 1 && os.Args[1] == launch.Stage2Arg {
		launch.Stage2()
	}
	// ... and as the shim that puts a mistake into what supervise.Run
	// starts (see useShim).
	if mutation := shimMutation(); mutation != "" && shimmed[filepath.Base(os.Args[0])] {
		shimMain(filepath.Base(os.Args[0]), mutation)
	}
	if planJSON := os.Getenv("MCPOLICY_HELPER_PLAN"); planJSON != "" {
		var p compiler.Plan
		if err := json.Unmarshal([]byte(planJSON), &p); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(125)
		}
		rs, err := landlock.Build(&p, compiler.Machine{ProjectRoot: os.Getenv("MCPOLICY_HELPER_ROOT"), Home: os.Getenv("HOME")})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(125)
		}
		code, err := launch.Start(rs, launch.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(125)
		}
		os.Exit(code)
	}
	code := m.Run()
	for _, im := range images {
		exec.Command(tool(im[0]), "rmi", "-f", im[1]).Run()
	}
	for _, s := range world.upstreams {
		s.Close()
	}
	if world.addedLo {
		exec.Command("ip", "addr", "del", upstreamAddr+"/32", "dev", "lo").Run()
	}
	if world.base != "" {
		os.RemoveAll(world.base)
	}
	os.Exit(code)
}

// egressDraw says whether a generated case may allow egress.
type egressDraw int

const (
	egressRandom egressDraw = iota // one case in four
	egressNever
	egressAlways
)

// generate writes case n: a project of folders a..d (each with probe.txt,
// inner/probe.txt and maybe protected files) and a random policy over it,
// which may mount the project root itself (see generateIn); some cases
// allow egress (see egressDraw). The allowlist is drawn last,
// so a case's folders and mounts do not depend on it.
func generate(t *testing.T, seed uint64, n int, draw egressDraw) *testCase {
	return generateIn(t, seed, n, draw, "")
}

// generateIn is generate in a folder of its own under cases/sub: backends
// run in parallel must not share a case's folders (a read-write mount's
// files are created and removed by each run).
func generateIn(t *testing.T, seed uint64, n int, draw egressDraw, sub string) *testCase {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	root := filepath.Join(world.base, "cases", sub, strconv.Itoa(n))
	var mounts []string
	for _, d := range []string{"a", "b", "c", "d"} {
		plant(filepath.Join(root, d, "probe.txt"), d+"\n")
		plant(filepath.Join(root, d, "inner", "probe.txt"), d+" inner\n")
		switch rng.IntN(8) { // protected files in a quarter of the folders
		case 0:
			plant(filepath.Join(root, d, ".git", "config"), "[core]\n")
			plant(filepath.Join(root, d, ".git", "hooks", "pre-commit"), "#!/bin/sh\n")
		case 1:
			plant(filepath.Join(root, d, ".env"), "TOKEN=planted\n")
		}
		mode := []string{"", "ro", "rw"}[rng.IntN(3)]
		if mode != "" {
			mounts = append(mounts, fmt.Sprintf(`{source: %q, target: %q, mode: %q}`, d, "/m/"+d, mode))
			if rng.IntN(4) == 0 { // a nested mount with its own mode
				mounts = append(mounts, fmt.Sprintf(`{source: %q, target: %q, mode: %q}`, d+"/inner", "/m/"+d+"/inner", []string{"ro", "rw"}[rng.IntN(2)]))
			}
		}
	}
	// One case in four also mounts the project root itself at /w, its top
	// level holding a..d, the policy and maybe .git, .env and .mcpolicy:
	// read-write (two in three), it gets a fixed top level at launch; in
	// half of them a policy's own mount sits exactly on one of its
	// entries and takes that entry's place.
	if rng.IntN(4) == 0 {
		mode := []string{"rw", "rw", "ro"}[rng.IntN(3)]
		switch rng.IntN(3) {
		case 0:
			plant(filepath.Join(root, ".git", "config"), "[core]\n")
			plant(filepath.Join(root, ".git", "hooks", "pre-commit"), "#!/bin/sh\n")
		case 1:
			plant(filepath.Join(root, ".env"), "TOKEN=planted\n")
		}
		if rng.IntN(2) == 0 { // as mcpolicy build leaves it
			plant(filepath.Join(root, ".mcpolicy", "manifest.json"), "{}\n")
		}
		if sub == "kubernetes" && mode == "rw" {
			// kubernetes refuses a fixed top level (no launcher runs in a
			// cluster to fix it: emit/kubernetes FixedTop is Missing), and
			// a read-write mount of "." would also hold every other
			// read-write mount (refused: rw inside rw). Its Pods get the
			// read-only form instead of a refusal; the draws stay the
			// same, so the rest of the case is every backend's.
			mode = "ro"
		}
		mounts = append(mounts, fmt.Sprintf(`{source: ".", target: "/w", mode: %q}`, mode))
		entry := []string{"a", "b", "c", "d"}[rng.IntN(4)]
		entryMode := []string{"ro", "rw"}[rng.IntN(2)]
		if rng.IntN(2) == 0 {
			mounts = append(mounts, fmt.Sprintf(`{source: %q, target: %q, mode: %q}`, entry, "/w/"+entry, entryMode))
		}
	}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			os.Chmod(p, 0o777)
		}
		return nil
	})
	mounts = append(mounts, fmt.Sprintf(`{source: %q, target: "/opt/probe"}`, world.probeDir))
	scratch := ""
	if rng.IntN(2) == 0 {
		scratch = `scratch: {target: "/tmp", size: "1m"}`
	}
	network := ""
	if e := world.fixture.Egress; e != nil {
		has := rng.IntN(4) == 0
		switch draw {
		case egressNever:
			has = false
		case egressAlways:
			has = true
		}
		if has {
			allow, _ := json.Marshal(drawAllowlist(rng, e))
			network = "network: allow: " + string(allow)
		}
	}
	policy := fmt.Sprintf(`version: "v1"
servers: s: {
	image: "mcpolicy-verify:%d"
	command: [%q, "probe"]
	backends: ["docker", "bwrap", "landlock"]
	mounts: [%s]
	%s
	%s
}
`, seed, probeInSandbox, strings.Join(mounts, ", "), scratch, network)
	file := filepath.Join(root, "mcpolicy.cue")
	if err := os.WriteFile(file, []byte(policy), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(file, 0o666) // a top-level entry too: the plan, not its mode, keeps it
	proj, err := project.Discover(file)
	if err != nil {
		t.Fatal(err)
	}
	pols, err := proj.Load()
	if err != nil {
		t.Fatalf("case %d: %v\n%s", n, err, policy)
	}
	plans, err := compiler.Compile(pols, compiler.Options{Root: proj.Root, Home: world.fixture.Home})
	if err != nil {
		t.Fatalf("case %d: %v\n%s", n, err, policy)
	}
	return &testCase{n: n, root: proj.Root, policy: file, plan: plans[0]}
}

func (c *testCase) machine() compiler.Machine {
	return compiler.Machine{ProjectRoot: c.root, Home: world.fixture.Home}
}

func withCommand(p *compiler.Plan, bin string, attempts []probe.Attempt) *compiler.Plan {
	q := *p
	q.Command = []string{bin, "probe"}
	for _, a := range attempts {
		q.Command = append(q.Command, string(a.Op)+":"+a.Target)
	}
	return &q
}

func runCmd(name string, args []string, env []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %v\nstderr: %s", name, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func bwrapBackend(mutation string) backendRun {
	return backendRun{name: "bwrap", view: SandboxView, refuses: func(*compiler.Plan) bool { return false }, mutation: mutation,
		run: func(t *testing.T, c *testCase, attempts []probe.Attempt) ([]probe.Result, error) {
			p := withCommand(c.plan, probeInSandbox, attempts)
			if c.launched() && !(c.fixedTop() && mutation == "bwrap-unfixed-top") {
				return runSupervised(p, c, "bwrap")
			}
			args, err := bwrap.Args(p, c.machine(), bwrap.DetectLayout(), 0)
			if err != nil {
				return nil, err
			}
			if mutation != "" {
				args = mutations[mutation](args)
			}
			out, err := runCmd(tool("bwrap"), args, []string{"PATH=/usr/bin:/bin"})
			if err != nil {
				return nil, err
			}
			return probe.Decode(out)
		}}
}

// runSupervised runs a plan as `mcpolicy run` does: through the launcher
// (mount sources by descriptor, the project's top level fixed), and with
// an allowlist the egress proxy in this process (resolving the harness's
// names), the sandbox with its forwarder (bwrap) or sidecar (docker,
// podman).
func runSupervised(p *compiler.Plan, c *testCase, backend string) ([]probe.Result, error) {
	var stdout, stderr bytes.Buffer
	var log syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	code, err := supervise.Run(ctx, p, supervise.Options{
		Backend: backend,
		Machine: c.machine(),
		Self:    world.probeBin, // the static mcpolicy: the forwarder
		Log:     &log,
		Resolve: world.resolve,
		Exempt:  world.exempt,
		Stdin:   strings.NewReader(""),
		Stdout:  &stdout,
		Stderr:  &stderr,
	})
	if err != nil || code != 0 {
		return nil, fmt.Errorf("supervise.Run (%s): exit %d, %v\nstderr: %s\nproxy log: %s", backend, code, err, stderr.String(), log.String())
	}
	return probe.Decode(stdout.Bytes())
}

func landlockBackend(mutate func(*compiler.Plan)) backendRun {
	return backendRun{name: "landlock", view: HostView, noEgress: true, refused: landlockRefuses,
		refuses: func(p *compiler.Plan) bool {
			_, err := landlock.Build(p, compiler.Machine{ProjectRoot: "/p", Home: "/h"})
			var ne *emit.NotEnforceableError
			return errors.As(err, &ne)
		},
		run: func(t *testing.T, c *testCase, attempts []probe.Attempt) ([]probe.Result, error) {
			p := withCommand(c.plan, world.probeBin, attempts)
			if mutate != nil { // a deliberately wrong plan cannot come from a policy
				mutate(p)
				return runLaunchLibrary(p, c)
			}
			args := append([]string{"exec", "--policy", c.policy, "--server", "s", "--"}, p.Command...)
			out, err := runCmd(world.probeBin, args, []string{"HOME=" + world.fixture.Home, "PATH=/usr/bin:/bin"})
			if err != nil {
				return nil, err
			}
			return probe.Decode(out)
		}}
}

// landlockRefuses checks that a case with an allowlist starts nothing on
// landlock: its report says the restriction cannot be enforced, `mcpolicy
// exec` exits 2 (not enforceable; the message names the first such
// restriction, which may be another) before the probe runs, and
// supervise.Run (`mcpolicy run`) refuses the backend for it. A fixed top
// level and protected paths run (the launcher's minimal root binds them);
// other refusals are the prediction's alone.
func landlockRefuses(c *testCase) error {
	var want []emit.Restriction
	if c.egress() {
		want = append(want, emit.EgressAllowlist)
	}
	if len(want) == 0 {
		return nil
	}
	rows := landlock.Enforcement(c.plan, landlock.Best)
	for _, w := range want {
		if !slices.ContainsFunc(rows, func(r emit.Row) bool { return r.Restriction == w && r.Support == emit.Missing }) {
			return fmt.Errorf("landlock's report does not say it cannot enforce the %s", w)
		}
	}
	args := []string{"exec", "--policy", c.policy, "--server", "s", "--", world.probeBin, "probe", "read:/"}
	cmd := exec.Command(world.probeBin, args...)
	cmd.Env = []string{"HOME=" + world.fixture.Home, "PATH=/usr/bin:/bin"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || stdout.Len() > 0 || !strings.Contains(stderr.String(), "is not enforceable by backend landlock") {
		return fmt.Errorf("mcpolicy exec of a plan with %v: %v (want exit 2, not enforceable, and no probe output)\nstdout: %s\nstderr: %s", want, err, stdout.String(), stderr.String())
	}
	if !c.egress() {
		return nil
	}
	code, err := supervise.Run(context.Background(), c.plan, supervise.Options{Backend: "landlock", Machine: c.machine(), Self: world.probeBin,
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "egress allowlist") {
		return fmt.Errorf("supervise.Run on landlock with an allowlist: exit %d, %v; want a refusal naming the egress allowlist", code, err)
	}
	return nil
}

// runLaunchLibrary is used only by the wrong-emitter test: it re-runs this
// test binary as a launcher for a mutated plan (see TestMain).
func runLaunchLibrary(p *compiler.Plan, c *testCase) ([]probe.Result, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	out, err := runCmd(os.Args[0], nil, []string{
		"MCPOLICY_HELPER_PLAN=" + string(b), "MCPOLICY_HELPER_ROOT=" + c.root, "HOME=" + world.fixture.Home, "PATH=/usr/bin:/bin"})
	if err != nil {
		return nil, err
	}
	return probe.Decode(out)
}

func engineBackend(engine string, mutation string) backendRun {
	var once sync.Once
	var image string
	var imgErr error
	return backendRun{name: engine, view: SandboxView, refuses: func(*compiler.Plan) bool { return false }, mutation: mutation,
		run: func(t *testing.T, c *testCase, attempts []probe.Attempt) ([]probe.Result, error) {
			once.Do(func() { image, imgErr = importImage(engine) })
			if imgErr != nil {
				return nil, imgErr
			}
			p := withCommand(c.plan, probeInSandbox, attempts)
			p.Image = image
			if c.launched() {
				return runSupervised(p, c, engine)
			}
			args, err := docker.Args(p, c.machine())
			if err != nil {
				return nil, err
			}
			if mutation != "" {
				args = mutations[mutation](args)
			}
			out, err := runCmd(tool(engine), args, os.Environ())
			if err != nil {
				return nil, err
			}
			return probe.Decode(out)
		}}
}

// mutations are the deliberate mistakes of TestWrongEmittersAreCaught, by
// name: applied to the arguments the harness runs itself, and, through
// the shim, to those supervise.Run passes to bwrap, docker or podman.
var mutations = map[string]func([]string) []string{
	// Every namespace but the network's.
	"bwrap-host-net": bwrapHostNet,
	// A read-write project root from bwrap's bare arguments, not through
	// the launcher (bwrapBackend): a plain --bind, its top level not fixed.
	"bwrap-unfixed-top": func(args []string) []string { return args },
	// The same, only where a forwarder runs in front of the server: the
	// forwarder then listens on the host's loopback, and the server
	// reaches the proxy and everything else.
	"bwrap-host-net-with-egress": func(args []string) []string {
		if !contains(args, "egress-forward") {
			return args
		}
		return bwrapHostNet(args)
	},
	"docker-host-net": func(args []string) []string {
		for i := range args {
			if args[i] == "none" && i > 0 && args[i-1] == "--network" {
				args[i] = "host"
			}
		}
		return args
	},
	// The server on the host's network instead of the sidecar's
	// namespace; the sidecar (--network none) is left alone.
	"docker-egress-host-net": func(args []string) []string {
		for i := range args {
			if strings.HasPrefix(args[i], "container:") && i > 0 && args[i-1] == "--network" {
				args[i] = "host"
			}
		}
		return args
	},
}

var bwrapHostNet = replaceArg("--unshare-all", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try")

func replaceArg(old string, new ...string) func([]string) []string {
	return func(args []string) []string {
		var out []string
		for _, a := range args {
			if a == old {
				out = append(out, new...)
			} else {
				out = append(out, a)
			}
		}
		return out
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// The shim: supervise.Run starts "bwrap", "docker" or "podman" by name,
// so a folder of links to this test binary, first on PATH, puts a
// mutation between it and the real tool. The harness's own runs use
// absolute paths (tool) and never meet the shim.
const (
	envMutation = "MCPOLICY_VERIFY_MUTATION"
	envRealPath = "MCPOLICY_VERIFY_REAL_PATH"
)

var shimmed = map[string]bool{"bwrap": true, "docker": true, "podman": true}

// useShim makes what supervise.Run starts, for the rest of t, go through
// the named mutation.
func useShim(t *testing.T, mutation string) {
	dir := filepath.Join(world.base, "shim")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o755)
	// A copy of the test binary beside the links: a root supervisor starts
	// bwrap as the plan's user, who cannot reach the go test cache.
	copySelf := filepath.Join(dir, "self.test")
	if _, err := os.Stat(copySelf); err != nil {
		b, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copySelf, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name := range shimmed {
		link := filepath.Join(dir, name)
		os.Remove(link)
		if err := os.Symlink(copySelf, link); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(envRealPath, os.Getenv("PATH"))
	t.Setenv(envMutation, mutation)
	// bwrap is started with an empty environment: the shim also finds
	// the mutation and the real PATH in files beside itself.
	os.WriteFile(filepath.Join(dir, "mutation"), []byte(mutation), 0o644)
	os.WriteFile(filepath.Join(dir, "path"), []byte(os.Getenv("PATH")), 0o644)
	t.Cleanup(func() { os.Remove(filepath.Join(dir, "mutation")) })
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// shimMutation is the mutation this process applies as the shim: from the
// environment, or (bwrap starts with none) from the file beside the link
// it was started as.
func shimMutation() string {
	if m := os.Getenv(envMutation); m != "" {
		return m
	}
	if filepath.IsAbs(os.Args[0]) {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(os.Args[0]), "mutation")); err == nil {
			p, _ := os.ReadFile(filepath.Join(filepath.Dir(os.Args[0]), "path"))
			os.Setenv(envRealPath, string(p))
			return string(b)
		}
	}
	return ""
}

// shimMain runs in place of the tool: the real one, with the mutation
// applied to its arguments, in this process (stdio, descriptors and the
// parent's signals stay as supervise.Run set them).
func shimMain(name, mutation string) {
	mutate, ok := mutations[mutation]
	if !ok {
		fmt.Fprintf(os.Stderr, "verify shim: no mutation %q\n", mutation)
		os.Exit(125)
	}
	realPath := os.Getenv(envRealPath)
	os.Setenv("PATH", realPath)
	bin, err := exec.LookPath(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify shim: %v\n", err)
		os.Exit(125)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envMutation+"=") && !strings.HasPrefix(kv, envRealPath+"=") {
			env = append(env, kv)
		}
	}
	err = syscall.Exec(bin, append([]string{name}, mutate(os.Args[1:])...), env)
	fmt.Fprintf(os.Stderr, "verify shim: exec %s: %v\n", bin, err)
	os.Exit(125)
}

// importImage makes an image with nothing but empty folders: the probe
// arrives through the policy's own read-only mount of its folder.
func importImage(engine string) (string, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []struct {
		name string
		mode int64
	}{{"tmp/", 0o1777}, {"var/", 0o755}, {"var/tmp/", 0o1777}, {"run/", 0o755}, {"etc/", 0o755}, {"opt/", 0o755}, {"m/", 0o755}, {"w/", 0o755}} {
		tw.WriteHeader(&tar.Header{Name: d.name, Typeflag: tar.TypeDir, Mode: d.mode})
	}
	tw.Close()
	tag := fmt.Sprintf("mcpolicy-verify:%d", os.Getpid())
	if engine == "podman" {
		tag = "localhost/" + tag
	}
	if err := testenv.ImportImage(context.Background(), tool(engine), tag, buf.Bytes()); err != nil {
		return "", err
	}
	imagesMu.Lock()
	images = append(images, [2]string{engine, tag})
	imagesMu.Unlock()
	return tag, nil
}

// images are those importImage made, removed when the tests end: their
// tags hold this process's id, so no later run would use them.
var (
	imagesMu sync.Mutex
	images   [][2]string
)

// available says whether a backend can run here; in CI it must.
func available(t *testing.T, name string) bool {
	var err error
	switch name {
	case "bwrap":
		_, err = exec.LookPath("bwrap")
	case "landlock":
		if h := hostcaps.Detect(); h.ABI < landlock.MinABI {
			err = fmt.Errorf("Landlock ABI %d", h.ABI)
		}
	case "kubernetes": // podman kube play
		if why := testenv.KubePlay(docker.Podman.Runtime()); why != "" {
			err = errors.New(why)
		}
	default:
		err = exec.Command(tool(name), "info").Run()
	}
	if err == nil {
		return true
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("backend %s is not usable (%v); CI must install it", name, err)
	}
	t.Skipf("backend %s is not usable here: %v", name, err)
	return false
}

// casesAndSeed: 400 cases by default (host backends are cheap, and about
// half of the cases are refused by landlock at compile time: allowlists,
// read-only grants inside read-write ones), of which the container engines take 200 without an
// allowlist and a few with one (see engineSubset).
func casesAndSeed() (int, uint64) {
	n, seed := 400, uint64(1)
	if v, err := strconv.Atoi(os.Getenv("MCPOLICY_VERIFY_CASES")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.ParseUint(os.Getenv("MCPOLICY_VERIFY_SEED"), 10, 64); err == nil {
		seed = v
	}
	return n, seed
}

// engineSubset is what docker and podman run, at about a second a run on
// a small machine and nearly three with a sidecar: by default the first
// 64 cases without an allowlist and the first 4 with one (every run costs
// the engine's CPU, the two cores CI shares with every other package; the
// emitter's code is the same for every case, and bwrap and landlock run
// all 400); with
// MCPOLICY_VERIFY_CASES=N (make verify) every case without one and the
// first N/10 with one (bwrap runs them all: the proxy and its rules are
// the same for every backend, only the wiring differs).
func engineSubset(cases []*testCase) []*testCase {
	plainMax, egressMax := 64, 4
	if os.Getenv("MCPOLICY_VERIFY_CASES") != "" {
		plainMax, egressMax = len(cases), max(egressMax, len(cases)/10)
	}
	var out []*testCase
	plain, withAllow := 0, 0
	for _, c := range cases {
		switch {
		case c.egress() && withAllow < egressMax:
			withAllow++
		case !c.egress() && plain < plainMax:
			plain++
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}

// disagreement is one probe where the kernel and the plan differ.
type disagreement struct {
	backend string
	n       int
	e       Expectation
	got     string
}

// verifyBackend runs every case under one backend and returns the
// disagreements and the errno counts of the denials.
func verifyBackend(t *testing.T, b backendRun, cases []*testCase) ([]disagreement, map[string]int) {
	var mu sync.Mutex
	var dis []disagreement
	errnos := map[string]int{}
	parallel := 3
	if b.serial {
		parallel = 1
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, c := range cases {
		if b.refuses(c.plan) {
			mu.Lock()
			errnos["refused at compile time"]++
			mu.Unlock()
			if b.refused != nil {
				if err := b.refused(c); err != nil {
					t.Errorf("%s case %d: %v", b.name, c.n, err)
				}
			}
			continue
		}
		if c.egress() && b.structural != nil {
			err := b.structural(c)
			mu.Lock()
			if err != nil {
				t.Errorf("%s case %d: structurally: %v", b.name, c.n, err)
			} else {
				errnos["allowlist checked structurally"]++
			}
			mu.Unlock()
			continue
		}
		if c.egress() && b.noEgress {
			t.Errorf("%s case %d: the backend cannot enforce an allowlist, yet the plan was not refused:\n%s", b.name, c.n, strings.Join(c.plan.Network.Entries(), ", "))
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(c *testCase) {
			defer wg.Done()
			defer func() { <-sem }()
			es, rs, err := b.attempt(t, c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s case %d: %v", b.name, c.n, err)
				return
			}
			for i, e := range es {
				if rs[i].Attempt != e.Attempt {
					t.Errorf("%s case %d: result %d is for %s:%s, want %s:%s", b.name, c.n, i, rs[i].Op, rs[i].Target, e.Op, e.Target)
					continue
				}
				if !e.Agrees(rs[i].Result) {
					dis = append(dis, disagreement{b.name, c.n, e, rs[i].Result})
				}
				switch {
				case rs[i].Result != "ok":
					errnos[rs[i].Result]++
				case e.Op == probe.Fetch:
					errnos[fetchedKey]++
				}
			}
		}(c)
	}
	wg.Wait()
	return dis, errnos
}

func report(t *testing.T, dis []disagreement) {
	for i, d := range dis {
		if i == 20 {
			t.Errorf("... and %d more", len(dis)-20)
			break
		}
		t.Errorf("%s case %d: %s %s (%s): plan says %s, kernel said %s", d.backend, d.n, d.e.Op, d.e.Target, d.e.Why, d.e.Says(), d.got)
	}
}

// fetchedKey counts, among the denials, the fetches that went through.
const fetchedKey = "fetched"

// summary is the fetches that went through, then the denials by answer.
func summary(errnos map[string]int) string {
	short := map[string]int{}
	for k, v := range errnos {
		if k == fetchedKey {
			continue
		}
		short[k] += v
	}
	keys := make([]string, 0, len(short))
	for k := range short {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, short[k]))
	}
	return strings.Join(parts, " ")
}

func countEgress(cases []*testCase) int {
	n := 0
	for _, c := range cases {
		if c.egress() {
			n++
		}
	}
	return n
}

func TestDifferential(t *testing.T) {
	setup(t)
	n, seed := casesAndSeed()
	backends := []backendRun{bwrapBackend(""), landlockBackend(nil), engineBackend("docker", ""), engineBackend("podman", ""), kubernetesBackend(nil)}
	// The same policies for every backend, each in its own folders, made
	// here, one at a time (loading is not shared across goroutines).
	casesOf := map[string][]*testCase{}
	for _, b := range backends {
		for i := range n {
			casesOf[b.name] = append(casesOf[b.name], generateIn(t, seed, i, egressRandom, b.name))
		}
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			// The backends share nothing but the read-only world and the
			// stand-in upstreams (each has its own copy of the cases):
			// while the engines wait on their daemons, the host backends run.
			t.Parallel()
			if !available(t, b.name) {
				return
			}
			cases := casesOf[b.name]
			cs := cases
			if b.name == "docker" || b.name == "podman" {
				cs = engineSubset(cases)
			}
			if b.name == "kubernetes" {
				cs = kubeSubset(cases)
			}
			start := time.Now()
			dis, errnos := verifyBackend(t, b, cs)
			report(t, dis)
			t.Logf("%s: %d cases (%d with an allowlist), %d disagreements, %v; fetches through the proxy: %d; denials by errno: %s",
				b.name, len(cs), countEgress(cs), len(dis), time.Since(start).Round(time.Second), errnos[fetchedKey], summary(errnos))
			if b.name == "kubernetes" {
				kubeStats.Lock()
				t.Logf("kubernetes: %d cases played with subPath resolved by the harness (podman before 5 ignores subPath); NetworkPolicy checked structurally for every case (podman does not enforce it)", kubeStats.rewrites)
				kubeStats.Unlock()
			}
		})
	}
}

// TestWrongEmittersAreCaught: the harness must notice a sandbox wider than
// its plan. Each backend is run with one deliberate mistake; the egress
// mistakes are put into what supervise.Run starts, on cases that all have
// an allowlist.
func TestWrongEmittersAreCaught(t *testing.T) {
	setup(t)
	_, seed := casesAndSeed()
	var cases, egressCases, fixedCases []*testCase
	for i := range 6 {
		cases = append(cases, generate(t, seed, 10000+i, egressNever))
	}
	// Cases with a fixed top level: the first three the generator draws.
	for i := 0; len(fixedCases) < 3 && i < 200; i++ {
		if c := generateIn(t, seed, 40000+i, egressNever, "fixed"); c.fixedTop() {
			fixedCases = append(fixedCases, c)
		}
	}
	if world.fixture.Egress != nil {
		for i := range 3 {
			egressCases = append(egressCases, generate(t, seed, 20000+i, egressAlways))
		}
	}
	serial := func(b backendRun) backendRun { b.serial = true; return b }
	mistakes := []struct {
		what   string
		b      backendRun
		egress bool
		fixed  bool // run on fixedCases
	}{
		{"bwrap without --unshare-net", bwrapBackend("bwrap-host-net"), false, false},
		{"landlock with / in the baseline", landlockBackend(func(p *compiler.Plan) { p.Runtime.ReadOnly = append(p.Runtime.ReadOnly, "/") }), false, false},
		{"docker on the host network", engineBackend("docker", "docker-host-net"), false, false},
		{"kubernetes with its read-only mounts made read-write", kubernetesBackend(kubeReadOnlyMadeRW), false, false},
		// The forwarders would share the host's loopback: one at a time.
		{"bwrap without --unshare-net where a forwarder runs (allowlist)", serial(bwrapBackend("bwrap-host-net-with-egress")), true, false},
		{"docker server on the host network instead of the sidecar's (allowlist)", engineBackend("docker", "docker-egress-host-net"), true, false},
		{"bwrap with the project's top level not fixed (a plain read-write bind)", bwrapBackend("bwrap-unfixed-top"), false, true},
	}
	for _, m := range mistakes {
		name := m.b.name
		if m.egress {
			name += "-egress"
		}
		if m.fixed {
			name += "-fixed-top"
		}
		t.Run(name, func(t *testing.T) {
			if !available(t, m.b.name) {
				return
			}
			cs := cases
			if m.fixed {
				cs = fixedCases
			}
			if m.egress {
				if world.fixture.Egress == nil {
					t.Skipf("no egress cases: %s", world.egressOff)
				}
				cs = egressCases
			}
			if m.b.mutation != "" {
				// What runs through supervise.Run (an allowlist, a fixed
				// top level) meets the mistake through the shim.
				useShim(t, m.b.mutation)
			}
			dis, _ := verifyBackend(t, m.b, cs)
			if m.egress {
				// Caught by what only the egress probes ask: around the
				// proxy, or through it.
				var on []disagreement
				for _, d := range dis {
					if d.e.Op == probe.UDP || d.e.Op == probe.Fetch || strings.HasPrefix(d.e.Target, upstreamAddr+":") {
						on = append(on, d)
					}
				}
				dis = on
			}
			if len(dis) == 0 {
				t.Errorf("%s: the harness found no disagreement; it cannot tell a wider sandbox", m.what)
				return
			}
			byOp := map[probe.Op]int{}
			for _, d := range dis {
				byOp[d.e.Op]++
			}
			t.Logf("%s: caught, %d disagreements (%v), e.g. %s %s (%s): plan says %s, kernel said %s",
				m.what, len(dis), byOp, dis[0].e.Op, dis[0].e.Target, dis[0].e.Why, dis[0].e.Says(), dis[0].got)
		})
	}
}

// attempt runs every attempt the plan's expectations name under the
// backend: one result per expectation, in order, or an error. The
// baseline is copied: appending the probe's folder to the plan's own
// slice would write into a plan other goroutines read.
func (b backendRun) attempt(t *testing.T, c *testCase) ([]Expectation, []probe.Result, error) {
	readable := append(slices.Clone(c.plan.Runtime.ReadOnly), world.probeDir)
	es := Expectations(c.plan, c.machine(), world.fixture, b.view, readable)
	attempts := make([]probe.Attempt, len(es))
	for i, e := range es {
		attempts[i] = e.Attempt
	}
	rs, err := b.run(t, c, attempts)
	if err == nil && len(rs) != len(es) {
		err = fmt.Errorf("%d results for %d attempts", len(rs), len(es))
	}
	return es, rs, err
}
