package supervise_test

// Real traffic through `mcpolicy run`: the static mcpolicy, run as the
// probe in place of a server under bwrap, docker and podman, fetches
// through the egress proxy from stand-in upstreams on 203.0.113.7
// (TEST-NET-3, never routed, added to lo for the test), and tries to go
// around it. Names resolve through an in-test hosts table, never DNS.
//
//	TestEgressRun               supervise.Run in this process: every probe
//	                            answer, the decision log, no survivors (per
//	                            backend), and a tunnel its upstream never
//	                            closes is closed and logged when Run returns;
//	                            a credential never inside (credentialRun,
//	                            credentials_test.go)
//	TestEgressSupervisorKilled  `mcpolicy run` as a process, SIGKILLed while
//	                            its server blocks: the sidecar and the
//	                            sandbox go anyway
//	TestEgressSocketPeers       the proxy's socket: another uid cannot reach
//	                            it, and neither another uid nor a process of
//	                            ours outside the sandbox is served when it
//	                            does; the control (no check) is served
//
// Needs root (to add the address to lo) and bwrap, docker, podman; each is
// skipped when missing, unless CI=true, when that fails instead.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/syncbuf"
	"github.com/mcpolicy/mcpolicy/internal/testenv"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// upstreamAddr stands for an internet host: TEST-NET-3 is never routed,
// so only this machine's lo answers there, and only during the test.
const upstreamAddr = "203.0.113.7"

// probeDir is where the static mcpolicy sits inside every sandbox: bound
// from the project under bwrap, in the stand-in image under docker/podman.
const probeDir = "/opt/probe"

var ci = os.Getenv("CI") == "true"

// need skips a test whose tool is missing, or fails it in CI.
func need(t *testing.T, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if ci {
		t.Fatalf("CI=true: %s", why)
	}
	t.Skip(why)
}

var (
	// base holds everything the test binary makes; tmp is its TMPDIR, so
	// every mcpolicy-egress-* folder the in-process supervisor makes lands
	// there and nowhere another test process could add one.
	base, tmp string

	setupOnce sync.Once
	setupErr  error
	skipWhy   string // set when the machine cannot run these tests (not root)
	w         struct {
		marker    string // unique to this test binary's run
		bin       string // the static mcpolicy
		addedLo   bool
		hosts     string
		httpPort  int // api.test: plain HTTP, allowed
		tlsPort   int // tls.test: HTTPS through CONNECT, allowed
		otherPort int // api.test's other port: listening, not allowed
		loopPort  int // 127.0.0.1: listening, reached only through evil.test
		holdPort  int // hold.test: answers, then never closes
		holdLn    net.Listener
		holdEOF   chan struct{} // hold read the end of its client's stream
		holdPoke  chan struct{} // the test asks hold whether the connection is still open
		holdOpen  chan bool     // its answer
		body      string
		hits      map[string]*atomic.Int64 // requests each stand-in served
		servers   []*httptest.Server
		image     string                 // the stand-in image's tag, on both engines
		images    map[string]*importOnce // by engine
	}
)

// importOnce imports the stand-in image into one engine.
type importOnce struct {
	once     sync.Once
	err      error
	imported bool
}

func TestMain(m *testing.M) {
	if os.Getenv(dialEnv) != "" {
		os.Exit(dial())
	}
	var err error
	base, err = os.MkdirTemp("/var/tmp", "mcpolicy-sv-") // short: a unix socket's path has at most 107 bytes
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Chmod(base, 0o755)
	tmp = filepath.Join(base, "tmp")
	os.Mkdir(tmp, 0o755)
	os.Setenv("TMPDIR", tmp)
	// The in-process runs put their socket folders in a runtime
	// directory of the test's own, as a desktop session's would be.
	run := filepath.Join(base, "run")
	os.Mkdir(run, 0o700)
	os.Setenv("XDG_RUNTIME_DIR", run)
	code := m.Run()
	teardown()
	os.RemoveAll(base)
	os.Exit(code)
}

func teardown() {
	hostileCleanup()
	if w.holdLn != nil {
		w.holdLn.Close()
	}
	for _, s := range w.servers {
		s.Close()
	}
	if w.addedLo {
		exec.Command("ip", "addr", "del", upstreamAddr+"/32", "dev", "lo").Run()
	}
	for engine, im := range w.images {
		im.once.Do(func() {}) // wait for an import in flight
		if im.imported {
			exec.Command(engine, "rmi", "-f", w.image).Run()
		}
	}
}

// setup builds the static mcpolicy, puts the upstream address on lo and
// starts the stand-in servers, once per test binary.
func setup(t *testing.T) {
	t.Helper()
	testbin.SkipShort(t, "runs sandboxes (bwrap, docker, podman) and adds an address to lo")
	setupOnce.Do(func() { setupErr = doSetup() })
	if skipWhy != "" {
		need(t, false, skipWhy)
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

func doSetup() error {
	if os.Geteuid() != 0 {
		skipWhy = "not root: adding " + upstreamAddr + " to lo needs CAP_NET_ADMIN"
		return nil
	}
	w.marker = randomHex(4)
	w.image = "localhost/mcpolicy-egress-probe:" + w.marker
	w.images = map[string]*importOnce{"docker": {}, "podman": {}}

	dir := filepath.Join(base, "bin")
	os.Mkdir(dir, 0o755)
	w.bin = filepath.Join(dir, "mcpolicy")
	// Static: the forwarder and the probe in any sandbox. A copy of its
	// own, in a folder every uid can read.
	bin, err := testbin.Path(testbin.McpolicyPkg)
	if err != nil {
		return fmt.Errorf("building the static mcpolicy: %v", err)
	}
	if err := testbin.CopyFile(bin, w.bin); err != nil {
		return err
	}

	out, err := exec.Command("ip", "addr", "add", upstreamAddr+"/32", "dev", "lo").CombinedOutput()
	switch {
	case err == nil:
		w.addedLo = true
	case onLo():
		// There already ("File exists", "Address already assigned"): not ours to remove.
	default:
		return fmt.Errorf("ip addr add %s/32 dev lo: %v: %s", upstreamAddr, err, out)
	}

	w.body = "hello from the stand-in upstream " + w.marker + "\n"
	w.hits = map[string]*atomic.Int64{"http": {}, "tls": {}, "other": {}, "loop": {}}
	start := func(name, ip string, tls bool) (int, error) {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.hits[name].Add(1)
			io.WriteString(rw, w.body)
		}))
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return 0, err
		}
		s.Listener.Close()
		s.Listener = ln
		if tls {
			s.StartTLS()
		} else {
			s.Start()
		}
		w.servers = append(w.servers, s)
		return ln.Addr().(*net.TCPAddr).Port, nil
	}
	for _, s := range []struct {
		name, ip string
		tls      bool
		port     *int
	}{
		{"http", upstreamAddr, false, &w.httpPort},
		{"tls", upstreamAddr, true, &w.tlsPort},
		{"other", upstreamAddr, false, &w.otherPort},
		{"loop", "127.0.0.1", false, &w.loopPort},
	} {
		if *s.port, err = start(s.name, s.ip, s.tls); err != nil {
			return fmt.Errorf("stand-in %s on %s: %v", s.name, s.ip, err)
		}
	}

	// hold answers the ClientHello with a TLS alert (handshake failure),
	// then, like a server that ignores a half-close, keeps its side open
	// after reading the end of the client's stream, and says whether the
	// proxy still holds the connection when the test asks: a write to a
	// socket closed at the far end fails by the second one (RST).
	if w.holdLn, err = net.Listen("tcp", net.JoinHostPort(upstreamAddr, "0")); err != nil {
		return fmt.Errorf("stand-in hold: %v", err)
	}
	w.holdPort = w.holdLn.Addr().(*net.TCPAddr).Port
	w.holdEOF, w.holdPoke, w.holdOpen = make(chan struct{}, 16), make(chan struct{}, 16), make(chan bool, 16)
	go func() {
		for {
			c, err := w.holdLn.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Read(make([]byte, 64<<10))                              // the ClientHello
				c.Write([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28}) // alert: fatal, handshake_failure
				io.Copy(io.Discard, c)                                    // until the client's side ends
				w.holdEOF <- struct{}{}
				<-w.holdPoke
				_, err1 := c.Write([]byte("x"))
				time.Sleep(200 * time.Millisecond)
				_, err2 := c.Write([]byte("x"))
				w.holdOpen <- err1 == nil && err2 == nil
			}()
		}
	}()

	w.hosts = fmt.Sprintf(`# the test's names: never DNS
%[1]s api.test tls.test denied.test hold.test
127.0.0.1 evil.test # something listens there, on the host's loopback
169.254.169.254 meta.test # cloud metadata
`, upstreamAddr)
	return nil
}

// onLo reports whether lo holds the upstream address.
func onLo() bool {
	out, err := exec.Command("ip", "-o", "addr", "show", "dev", "lo").Output()
	return err == nil && strings.Contains(string(out), " "+upstreamAddr+"/")
}

// image imports, once per engine, a stand-in image holding only the
// static mcpolicy at /opt/probe/mcpolicy (and an empty /tmp).
func image(t *testing.T, engine string) string {
	t.Helper()
	im := w.images[engine]
	im.once.Do(func() {
		bin, err := os.ReadFile(w.bin)
		if err != nil {
			im.err = err
			return
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, d := range []string{"opt/", "opt/probe/"} {
			tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
		}
		tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777})
		tw.WriteHeader(&tar.Header{Name: "opt/probe/mcpolicy", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))})
		tw.Write(bin)
		tw.Close()
		if err := testenv.ImportImage(context.Background(), engine, w.image, buf.Bytes()); err != nil {
			im.err = err
			return
		}
		im.imported = true
	})
	if im.err != nil {
		t.Fatal(im.err)
	}
	return w.image
}

// needBackend skips (or in CI fails) when the backend's tool is missing.
func needBackend(t *testing.T, backend string) {
	t.Helper()
	switch backend {
	case "bwrap":
		_, err := exec.LookPath("bwrap")
		need(t, err == nil, "bwrap is not installed")
	default:
		out, err := exec.Command(backend, "info").CombinedOutput()
		need(t, err == nil, fmt.Sprintf("%s info: %v %s", backend, err, bytes.TrimSpace(out)))
	}
}

// writeProject writes a policy whose one server runs the probe with args and
// compiles it.
func writeProject(t *testing.T, backend, server string, allow, args []string) (*project.Project, *compiler.Plan) {
	t.Helper()
	dir := filepath.Join(base, "projects", server)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	command := append([]string{probeDir + "/mcpolicy", "probe"}, args...)
	var confine string
	if backend == "bwrap" {
		// The probe comes from the project, bound read-only; a static
		// binary needs no baseline.
		if err := os.Link(w.bin, filepath.Join(dir, "mcpolicy")); err != nil {
			copyFile(t, w.bin, filepath.Join(dir, "mcpolicy"))
		}
		confine = fmt.Sprintf(`backends: ["bwrap"]
	runtime: "static"
	mounts: [{source: "mcpolicy", target: %q}]`, probeDir+"/mcpolicy")
	} else {
		confine = fmt.Sprintf(`backends: ["docker"]
	image: %q`, image(t, backend))
	}
	q := func(ss []string) string {
		b, _ := json.Marshal(ss)
		return string(b)
	}
	policy := fmt.Sprintf(`version: "v1"
servers: %q: {
	%s
	command: %s
	network: allow: %s
}
`, server, confine, q(command), q(allow))
	file := filepath.Join(dir, "mcpolicy.cue")
	if err := os.WriteFile(file, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	proj, err := project.Discover(file)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := proj.Compile(home(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, policy)
	}
	if len(plans) != 1 || plans[0].Network.Mode != "allowlist" {
		t.Fatalf("want one plan with an allowlist, got %+v", plans)
	}
	return proj, plans[0]
}

func home(t *testing.T) string {
	h, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// expectation is one probe attempt and its answer, exactly.
type expectation struct {
	attempt string
	want    string
}

// wantDecision is one line the decision log must hold.
type wantDecision struct {
	action, method, host string
	port                 int
	reason               string // deny: exactly this
	rule                 string // when set, exactly this
	addr                 string // allow: exactly this
	down, up             bool   // bytes must have flowed that way
}

// concurrently runs one subtest per name at once. The runs mostly wait
// on engines, so they do not take -parallel slots (2 on a 2-CPU machine).
func concurrently(t *testing.T, names []string, f func(t *testing.T, name string)) {
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, func(t *testing.T) { f(t, name) })
		}()
	}
	wg.Wait()
}

// TestEgressRun calls supervise.Run in this process: the probe under each
// backend with an allowlist (every answer, the decision log, no
// survivors), and a tunnel its upstream never closes. These are the only
// in-process runs, so once they are over no socket folder may remain in
// this binary's TMPDIR.
func TestEgressRun(t *testing.T) {
	t.Parallel()
	setup(t)
	before := egressDirs(t)
	concurrently(t, []string{"bwrap", "docker", "podman", "tunnel-ends-with-run", "log-full",
		"credential-bwrap", "credential-docker", "credential-podman"}, func(t *testing.T, name string) {
		if backend, ok := strings.CutPrefix(name, "credential-"); ok {
			needBackend(t, backend)
			credentialRun(t, backend)
			return
		}
		switch name {
		case "tunnel-ends-with-run":
			needBackend(t, "bwrap")
			tunnelEndsWithRun(t)
			return
		case "log-full":
			needBackend(t, "bwrap")
			logFullRun(t)
			return
		}
		needBackend(t, name)
		realTraffic(t, name)
	})
	for d := range egressDirs(t) {
		if !before[d] {
			t.Errorf("the socket folder %s survived its run", d)
		}
	}
}

func realTraffic(t *testing.T, backend string) {
	marker := w.marker + randomHex(2) + "-" + backend // per call: -count=N reruns
	server := "egress-" + marker
	hp, tp, op, lp := w.httpPort, w.tlsPort, w.otherPort, w.loopPort
	allow := []string{
		fmt.Sprintf("api.test:%d", hp),
		fmt.Sprintf("tls.test:%d", tp),
		fmt.Sprintf("evil.test:%d", lp),
		"meta.test:80",
	}
	exps := []expectation{
		{attempt: fmt.Sprintf("fetch:http://api.test:%d/", hp), want: "ok"},
		{attempt: fmt.Sprintf("fetch:https://tls.test:%d/", tp), want: "ok"},
		// Not listed: refused before any lookup.
		{attempt: fmt.Sprintf("fetch:http://denied.test:%d/", hp), want: "http 403"},
		// A listed name on a port not listed, though a server listens there.
		{attempt: fmt.Sprintf("fetch:http://api.test:%d/", op), want: "http 403"},
		// The listed name's address is not the name.
		{attempt: fmt.Sprintf("fetch:http://%s:%d/", upstreamAddr, hp), want: "http 403"},
		// A tunnel to a name not listed: Go's client reports a refused
		// CONNECT as an error holding the status text, not as a status.
		{attempt: fmt.Sprintf("fetch:https://denied.test:%d/", tp), want: "http 403"},
		// Listed names that resolve to private addresses.
		{attempt: fmt.Sprintf("fetch:http://evil.test:%d/", lp), want: "http 403"},
		{attempt: "fetch:http://meta.test/", want: "http 403"},
		// Around the proxy: the namespace has no route.
		{attempt: fmt.Sprintf("connect:%s:%d", upstreamAddr, hp), want: "ENETUNREACH"},
		{attempt: fmt.Sprintf("udp:%s:53", upstreamAddr), want: "ENETUNREACH"},
		// The sandbox's loopback is its own: the host's server is not there.
		{attempt: fmt.Sprintf("connect:127.0.0.1:%d", lp), want: "ECONNREFUSED"},
		// The marker, for the process scan: an attempt that reads nothing.
		{attempt: "read:/" + marker, want: "ENOENT"},
	}
	decisions := []wantDecision{
		{action: "allow", method: "GET", host: "api.test", port: hp, rule: fmt.Sprintf("api.test:%d", hp), addr: upstreamAddr, down: true},
		{action: "allow", method: "CONNECT", host: "tls.test", port: tp, rule: fmt.Sprintf("tls.test:%d", tp), addr: upstreamAddr, down: true, up: true},
		{action: "deny", method: "GET", host: "denied.test", port: hp, reason: "not in the allowlist"},
		{action: "deny", method: "GET", host: "api.test", port: op, reason: "not in the allowlist"},
		{action: "deny", method: "GET", host: upstreamAddr, port: hp, reason: "not in the allowlist"},
		{action: "deny", method: "CONNECT", host: "denied.test", port: tp, reason: "not in the allowlist"},
		{action: "deny", method: "GET", host: "evil.test", port: lp, rule: fmt.Sprintf("evil.test:%d", lp), reason: "evil.test resolves to the private address 127.0.0.1"},
		{action: "deny", method: "GET", host: "meta.test", port: 80, rule: "meta.test:80", reason: "meta.test resolves to the private address 169.254.169.254"},
	}
	var args []string
	for _, e := range exps {
		args = append(args, e.attempt)
	}
	proj, plan := writeProject(t, backend, server, allow, args)

	resolve, err := egress.HostsResolver(strings.NewReader(w.hosts), noDNS)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr, log syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	httpHits, tlsHits := w.hits["http"].Load(), w.hits["tls"].Load()
	start := time.Now()
	code, err := supervise.Run(ctx, plan, supervise.Options{
		Backend: backend,
		Machine: compiler.Machine{ProjectRoot: proj.Root, Home: home(t)},
		Self:    w.bin,
		Log:     &log,
		Resolve: resolve, Exempt: standIns(w.hosts),
		Stdout: &stdout,
		Stderr: &stderr,
	})
	t.Logf("supervise.Run: %v", time.Since(start).Round(time.Millisecond))
	if err != nil || code != 0 {
		t.Fatalf("supervise.Run: code %d, %v\nstderr: %s", code, err, stderr.String())
	}
	returned := log.String()

	// What the probe saw, attempt by attempt.
	results, err := probe.Decode([]byte(stdout.String()))
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, stderr.String())
	}
	if len(results) != len(exps) {
		t.Fatalf("%d results for %d attempts:\n%s\nstderr: %s", len(results), len(exps), stdout.String(), stderr.String())
	}
	for i, e := range exps {
		r := results[i]
		if string(r.Op)+":"+r.Target != e.attempt {
			t.Errorf("result %d is for %s:%s, want %s", i, r.Op, r.Target, e.attempt)
			continue
		}
		if r.Result != e.want {
			t.Errorf("%s: %q, want %q", e.attempt, r.Result, e.want)
		}
	}

	// The decision log: one line per request that reached the proxy. A
	// tunnel's line is written when it closes; wait for it briefly, but
	// say if it came only after Run returned.
	var got []egress.Decision
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err = parseDecisions(log.String())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) >= len(decisions) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, _ := parseDecisions(returned); len(n) != len(got) {
		t.Errorf("%d of %d decision lines were written only after supervise.Run returned (`mcpolicy run --log` closes the file then, so they would be lost):\n%s",
			len(got)-len(n), len(got), log.String())
	}
	checkDecisions(t, got, decisions)
	if t.Failed() {
		t.Logf("probe output:\n%s\nstderr:\n%s\ndecision log:\n%s", stdout.String(), stderr.String(), log.String())
	}

	// The allowed fetches reached the stand-ins; the stand-ins that only a
	// bypass could reach were never reached.
	if w.hits["http"].Load() <= httpHits || w.hits["tls"].Load() <= tlsHits {
		t.Errorf("the allowed fetches did not reach the stand-ins")
	}
	for _, name := range []string{"other", "loop"} {
		if n := w.hits[name].Load(); n != 0 {
			t.Errorf("the %s stand-in served %d requests", name, n)
		}
	}

	// Nothing the run started remains.
	noSurvivors(t, backend, plan, marker)
}

// logFullRun: a server that causes more denials than its log's limit
// holds fills the log only to the limit; the log says so, its last line
// (written before supervise.Run returns) counts what was not logged, and
// so does stderr. Backend-neutral (the proxy's part): run under bwrap.
func logFullRun(t *testing.T) {
	marker := w.marker + randomHex(2) + "-full"
	const n = 40
	var attempts []string
	for i := range n {
		attempts = append(attempts, fmt.Sprintf("fetch:http://d%d.denied.test:%d/", i, w.httpPort))
	}
	attempts = append(attempts, "read:/"+marker)
	proj, plan := writeProject(t, "bwrap", "egress-"+marker, []string{fmt.Sprintf("api.test:%d", w.httpPort)}, attempts)
	resolve, err := egress.HostsResolver(strings.NewReader(w.hosts), noDNS)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr, log syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const limit = 4 << 10 // about 12 lines
	code, err := supervise.Run(ctx, plan, supervise.Options{
		Backend: "bwrap",
		Machine: compiler.Machine{ProjectRoot: proj.Root, Home: home(t)},
		Self:    w.bin, Log: &log, LogLimit: limit, Resolve: resolve, Exempt: standIns(w.hosts), Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil || code != 0 {
		t.Fatalf("supervise.Run: code %d, %v\nstderr: %s", code, err, stderr.String())
	}
	lines := strings.SplitAfter(log.String(), "\n")
	lines = lines[:len(lines)-1]
	if size := len(log.String()) - len(lines[len(lines)-1]); size > limit {
		t.Errorf("the log holds %d bytes before its last line, past its limit of %d", size, limit)
	}
	var denies, full int
	for _, l := range lines {
		var d egress.Decision
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		switch d.Action {
		case "deny":
			denies++
		case egress.LogFull:
			full++
		}
	}
	notLogged := n - denies
	if full != 2 || denies == 0 || notLogged == 0 || !strings.Contains(lines[len(lines)-1], fmt.Sprintf("%d decisions were not logged", notLogged)) {
		t.Errorf("%d denials logged of %d, %d log-full lines; want 2 and the count %d last:\n%s", denies, n, full, notLogged, log.String())
	}
	if want := fmt.Sprintf("%d egress decisions were not logged", notLogged); !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
	}
	noSurvivors(t, "bwrap", plan, marker)
}

// tunnelEndsWithRun: an allowed tunnel to an upstream that never closes
// its side is closed, and logged, by the time supervise.Run returns:
// `mcpolicy run` closes its --log file and exits right after, so a line
// written later is lost, and the connection would outlive the server it
// served. The upstream refuses the TLS handshake, so the probe gives up at
// once and exits. Backend-neutral (the proxy's part): run under bwrap.
func tunnelEndsWithRun(t *testing.T) {
	marker := w.marker + randomHex(2) + "-hold"
	hold := fmt.Sprintf("hold.test:%d", w.holdPort)
	proj, plan := writeProject(t, "bwrap", "egress-"+marker, []string{hold},
		[]string{"fetch:https://" + hold + "/", "read:/" + marker})
	resolve, err := egress.HostsResolver(strings.NewReader(w.hosts), noDNS)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr, log syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	code, err := supervise.Run(ctx, plan, supervise.Options{
		Backend: "bwrap",
		Machine: compiler.Machine{ProjectRoot: proj.Root, Home: home(t)},
		Self:    w.bin, Log: &log, Resolve: resolve, Exempt: standIns(w.hosts), Stdout: &stdout, Stderr: &stderr,
	})
	t.Logf("supervise.Run: %v", time.Since(start).Round(time.Millisecond))
	if err != nil || code != 0 {
		t.Fatalf("supervise.Run: code %d, %v\nstderr: %s", code, err, stderr.String())
	}
	returned := log.String()
	rs, err := probe.Decode([]byte(stdout.String()))
	if err != nil || len(rs) != 2 {
		t.Fatalf("probe output %q: %v", stdout.String(), err)
	}
	if want := fmt.Sprintf(`error: Get "https://%s/": remote error: tls: handshake failure`, hold); rs[0].Result != want {
		t.Errorf("fetch: %q, want %q", rs[0].Result, want)
	}

	ds, err := parseDecisions(returned)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 {
		late := "never, within 3 s"
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if l := log.String(); l != returned {
				late = "only after Run returned: " + l
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("when supervise.Run returned the log held %d lines, want the tunnel's allow line; it came %s", len(ds), late)
	} else {
		checkDecisions(t, ds, []wantDecision{{action: "allow", method: "CONNECT", host: "hold.test", port: w.holdPort,
			rule: hold, addr: upstreamAddr, down: true, up: true}})
	}
	select {
	case <-w.holdEOF:
		w.holdPoke <- struct{}{}
		if <-w.holdOpen {
			t.Errorf("after supervise.Run returned, the proxy still held the tunnel's connection to the upstream")
		}
	case <-time.After(3 * time.Second):
		t.Errorf("the upstream never saw the end of the client's stream")
	}
	noSurvivors(t, "bwrap", plan, marker)
}

// noDNS keeps every name the hosts table lacks away from real DNS.
func noDNS(_ context.Context, host string) ([]netip.Addr, error) {
	return nil, fmt.Errorf("%s: not in the test's hosts table (no DNS in tests)", host)
}

func checkDecisions(t *testing.T, got []egress.Decision, want []wantDecision) {
	t.Helper()
	used := make([]bool, len(got))
	for _, wd := range want {
		found := false
		for i, d := range got {
			if used[i] || d.Action != wd.action || d.Method != wd.method || d.Host != wd.host || d.Port != wd.port {
				continue
			}
			used[i], found = true, true
			if d.Reason != wd.reason {
				t.Errorf("%s %s %s:%d: reason %q, want %q", wd.action, wd.method, wd.host, wd.port, d.Reason, wd.reason)
			}
			if wd.rule != "" && d.Rule != wd.rule {
				t.Errorf("%s %s %s:%d: rule %q, want %q", wd.action, wd.method, wd.host, wd.port, d.Rule, wd.rule)
			}
			if wd.action == "allow" && d.Addr != wd.addr {
				t.Errorf("%s %s %s:%d: addr %q, want %q", wd.action, wd.method, wd.host, wd.port, d.Addr, wd.addr)
			}
			if wd.action == "deny" && d.Addr != "" {
				t.Errorf("deny %s %s:%d names an address it connected to: %q", wd.method, wd.host, wd.port, d.Addr)
			}
			if wd.down && d.Down <= 0 {
				t.Errorf("%s %s %s:%d: bytesDown %d, want > 0", wd.action, wd.method, wd.host, wd.port, d.Down)
			}
			if wd.up && d.Up <= 0 {
				t.Errorf("%s %s %s:%d: bytesUp %d, want > 0", wd.action, wd.method, wd.host, wd.port, d.Up)
			}
			if wd.action == "deny" && (d.Down != 0 || d.Up != 0) {
				t.Errorf("deny %s %s:%d carried bytes: up %d, down %d", wd.method, wd.host, wd.port, d.Up, d.Down)
			}
			if _, err := time.Parse(time.RFC3339, d.Time); err != nil {
				t.Errorf("%s %s %s:%d: time %q: %v", wd.action, wd.method, wd.host, wd.port, d.Time, err)
			}
			break
		}
		if !found {
			t.Errorf("no %s line for %s %s:%d", wd.action, wd.method, wd.host, wd.port)
		}
	}
	for i, d := range got {
		if !used[i] {
			t.Errorf("unexpected decision: %+v", d)
		}
	}
}

// noSurvivors checks, once a run is over, that neither its sidecar nor
// its server container exists and that no process of it remains.
func noSurvivors(t *testing.T, backend string, plan *compiler.Plan, marker string) {
	t.Helper()
	if backend != "bwrap" {
		if c := containers(t, backend, docker.LabelEgress+"="+plan.Hash); c != "" {
			t.Errorf("the sidecar survived the run: %s ps -a --filter label=%s=%s: %s", backend, docker.LabelEgress, plan.Hash, c)
		}
		if c := containers(t, backend, docker.LabelPlan+"="+plan.Hash); c != "" {
			t.Errorf("the server container survived the run: %s", c)
		}
	}
	// podman's conmon runs the container's cleanup after `podman run`
	// has returned, and ends with it: a process still there is one that
	// outlives that cleanup, not one caught in it.
	ps := processes(marker)
	for deadline := time.Now().Add(10 * time.Second); len(ps) > 0 && time.Now().Before(deadline); ps = processes(marker) {
		time.Sleep(100 * time.Millisecond)
	}
	if len(ps) > 0 {
		t.Errorf("processes of the sandbox survived the run: %s", strings.Join(ps, "; "))
	}
	if ps := forwarders(plan.Network.ProxyPort); len(ps) > 0 {
		t.Errorf("forwarders for port %d survived the run: %s", plan.Network.ProxyPort, strings.Join(ps, "; "))
	}
}

// TestEgressSupervisorKilled starts `mcpolicy run` as a process for a
// server that fetches once and then blocks, SIGKILLs the supervisor once
// traffic has flowed, and checks that the sidecar's lifeline ends it and
// that nothing of the sandbox remains.
func TestEgressSupervisorKilled(t *testing.T) {
	t.Parallel()
	setup(t)
	concurrently(t, []string{"bwrap", "docker", "podman"}, func(t *testing.T, backend string) {
		needBackend(t, backend)
		killed(t, backend)
	})
}

func killed(t *testing.T, backend string) {
	marker := w.marker + randomHex(2) + "-kill-" + backend
	server := "egress-" + marker
	api := fmt.Sprintf("api.test:%d", w.httpPort)
	// read:/dev/stdin blocks: the test holds stdin open and writes nothing.
	args := []string{"read:/" + marker, "fetch:http://" + api + "/", "read:/dev/stdin"}
	proj, plan := writeProject(t, backend, server, []string{api}, args)

	dir := filepath.Join(base, "kill-"+randomHex(2)) // short: the socket folder goes in its tmp
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	hostsFile := filepath.Join(dir, "hosts")
	logFile := filepath.Join(dir, "decisions.jsonl")
	if err := os.WriteFile(hostsFile, []byte(w.hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinW.Close()
	// Files, not buffers: Wait must not wait for pipes a survivor holds.
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	defer stderr.Close()

	self := w.bin
	if backend == "bwrap" && os.Geteuid() == 0 {
		// mcpolicy where the plan's user cannot reach it (below /root,
		// say): the supervisor links it into its socket folder.
		private := filepath.Join(dir, "private")
		if err := os.Mkdir(private, 0o700); err != nil {
			t.Fatal(err)
		}
		self = filepath.Join(private, "mcpolicy")
		if err := os.Link(w.bin, self); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(w.bin, "run", "--policy", proj.Root, "--server", server, "--backend", backend,
		"--hosts", hostsFile, "--log", logFile, "--self", self)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdout, stderr
	// Its own TMPDIR: the socket folder a killed supervisor leaves is
	// this test's to see.
	// (It has no XDG_RUNTIME_DIR: the folder goes in that TMPDIR.)
	cmd.Env = append(os.Environ(), "TMPDIR="+filepath.Join(dir, "tmp"), "XDG_RUNTIME_DIR=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
		// Whatever a failed assertion left behind.
		if backend != "bwrap" {
			for _, l := range []string{docker.LabelEgress, docker.LabelPlan} {
				if c := containers(t, backend, l+"="+plan.Hash); c != "" {
					exec.Command(backend, append([]string{"rm", "-f"}, ids(c)...)...).Run()
				}
			}
		}
		for _, pid := range pids(marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	dump := func() string {
		o, _ := os.ReadFile(stdout.Name())
		e, _ := os.ReadFile(stderr.Name())
		l, _ := os.ReadFile(logFile)
		return fmt.Sprintf("stdout: %s\nstderr: %s\ndecisions: %s", o, e, l)
	}

	// Up: the fetch went through the forwarder and the proxy, and the
	// probe now blocks on stdin.
	start := time.Now()
	for {
		b, _ := os.ReadFile(logFile)
		ds, _ := parseDecisions(string(b))
		if len(ds) > 0 {
			if ds[0].Action != "allow" || ds[0].Host != "api.test" || ds[0].Down <= 0 {
				t.Fatalf("first decision: %+v, want allow GET api.test with bytes down", ds[0])
			}
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("mcpolicy run ended before any traffic: %v\n%s", err, dump())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("no traffic within 30 s\n%s", dump())
		}
	}
	// The server, the supervisor aside (its argv names the server).
	if ps := pids(marker); len(ps) == 0 || len(ps) == 1 && ps[0] == cmd.Process.Pid {
		t.Fatalf("the server is not running\n%s", dump())
	}
	if backend == "bwrap" {
		if len(forwarders(plan.Network.ProxyPort)) == 0 {
			t.Fatalf("no forwarder process\n%s", dump())
		}
	} else if containers(t, backend, docker.LabelEgress+"="+plan.Hash) == "" {
		t.Fatalf("no sidecar container\n%s", dump())
	}
	t.Logf("up after %v", time.Since(start).Round(time.Millisecond))

	killedAt := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	exited <- err
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("mcpolicy run ended otherwise than by SIGKILL: %v\n%s", err, dump())
	}

	var left []string
	for time.Since(killedAt) < 15*time.Second {
		left = nil
		if backend != "bwrap" {
			if c := containers(t, backend, docker.LabelEgress+"="+plan.Hash); c != "" {
				left = append(left, "sidecar "+c)
			}
			if c := containers(t, backend, docker.LabelPlan+"="+plan.Hash); c != "" {
				left = append(left, "server container "+c)
			}
		}
		left = append(left, processes(marker)...)
		left = append(left, forwarders(plan.Network.ProxyPort)...)
		if len(left) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// SIGKILL gave the supervisor no chance to remove its socket folder:
	// expected, and harmless (nothing listens on the socket any more), as
	// long as no other user may enter it: a root supervisor's bwrap
	// folder holds a link to its mcpolicy (copyInto).
	if m, _ := filepath.Glob(filepath.Join(dir, "tmp", "mcpolicy-egress-*")); len(m) > 0 {
		for _, d := range m {
			fi, err := os.Lstat(d)
			if err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(d)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if fi.Mode().Perm()&0o007 != 0 {
				t.Errorf("the killed supervisor left %s (%v, holding %v), which other users may enter", d, fi.Mode(), names)
			} else {
				t.Logf("left by the killed supervisor, as expected: %s (%v, holding %v)", d, fi.Mode(), names)
			}
		}
	}
	if len(left) > 0 {
		for _, l := range left {
			if strings.HasPrefix(l, "sidecar ") && strings.Contains(l, "Exited") {
				t.Errorf("the sidecar's lifeline ended and it exited, but --rm did not remove it: %s", l)
			}
		}
		t.Errorf("15 s after SIGKILL of the supervisor, still there: %s\n%s", strings.Join(left, "; "), dump())
	} else {
		t.Logf("everything gone %v after SIGKILL", time.Since(killedAt).Round(time.Millisecond))
	}
}

// containers lists the containers (running or not) with a label, as
// "ID (STATUS)"; ids lists their ids.
func containers(t *testing.T, engine, label string) string {
	t.Helper()
	out, err := exec.Command(engine, "ps", "-a", "--filter", "label="+label, "--format", "{{.ID}} ({{.Status}})").CombinedOutput()
	if err != nil {
		t.Errorf("%s ps: %v %s", engine, err, out)
	}
	return strings.Join(strings.Split(strings.TrimSpace(string(out)), "\n"), ", ")
}

func ids(listed string) []string {
	var ids []string
	for _, c := range strings.Split(listed, ", ") {
		if id, _, _ := strings.Cut(c, " "); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// processes describes every process whose command line holds marker.
func processes(marker string) []string {
	var ps []string
	for _, pid := range pids(marker) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		ps = append(ps, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '})))
	}
	return ps
}

func pids(marker string) []int {
	return scanProc(func(argv []string) bool {
		return strings.Contains(strings.Join(argv, " "), marker)
	})
}

// forwarders describes every `egress-forward --port port` process: the
// sandbox's forwarder (under bwrap also bwrap's own argv) or a sidecar's.
func forwarders(port int) []string {
	var ps []string
	for _, pid := range scanProc(func(argv []string) bool {
		for i, a := range argv {
			if a == "egress-forward" {
				for j := i + 1; j+1 < len(argv) && argv[j] != "--"; j++ {
					if argv[j] == "--port" && argv[j+1] == strconv.Itoa(port) {
						return true
					}
				}
			}
		}
		return false
	}) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		ps = append(ps, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '})))
	}
	return ps
}

func scanProc(match func(argv []string) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var found []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(b) == 0 { // gone, or a zombie
			continue
		}
		if match(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")) {
			found = append(found, pid)
		}
	}
	return found
}

// egressDirs lists the supervisor's socket folders in XDG_RUNTIME_DIR
// and TMPDIR.
func egressDirs(t *testing.T) map[string]bool {
	t.Helper()
	set := map[string]bool{}
	for _, parent := range []string{os.Getenv("XDG_RUNTIME_DIR"), os.TempDir()} {
		m, err := filepath.Glob(filepath.Join(parent, "mcpolicy-egress-*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range m {
			set[d] = true
		}
	}
	return set
}

func parseDecisions(log string) ([]egress.Decision, error) {
	var ds []egress.Decision
	for _, line := range strings.Split(log, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var d egress.Decision
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			return nil, fmt.Errorf("decision line %q: %v", line, err)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// standIns is Options.Exempt for the tests' hosts table: the stand-in
// internet sits on lo, and the table says it is there (as mcpolicy run
// --hosts does); every other address of the machine stays refused.
func standIns(hosts string) func(netip.Addr) bool {
	table, err := egress.ParseHosts(strings.NewReader(hosts))
	if err != nil {
		panic(err)
	}
	return table.Names
}
