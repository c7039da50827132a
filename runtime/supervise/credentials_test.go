package supervise_test

// A credential that never enters the sandbox (issue 41), through
// `mcpolicy run` with real traffic: stand-in HTTPS upstreams on
// 203.0.113.7 (TEST-NET-3) in a network namespace of the test's, which
// the proxy dials into (Options.Dial) and nothing else reaches, with
// certificates of a test CA the proxy verifies them against; a hostile server
// (testdata/hostile) that looks for the value everywhere it can read and
// sends its placeholder everywhere it can reach. Per backend with egress.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/syncbuf"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
	"github.com/mcpolicy/mcpolicy/internal/testnetns"
	"github.com/mcpolicy/mcpolicy/internal/testpki"
	"github.com/mcpolicy/mcpolicy/internal/testupstream"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

const hostilePkg = "./runtime/supervise/testdata/hostile"

// hostileReport is testdata/hostile's output.
type hostileReport struct {
	Env    string              `json:"env"`
	Trust  map[string]string   `json:"trust"`
	Tokens map[string][]string `json:"tokens"`
	HTTP   map[string]string   `json:"http"`
	Write  string              `json:"writeCA"`
	Bytes  int64               `json:"scanned"`
}

// credentialRun (TestEgressRun's credential-BACKEND, with the other
// in-process runs): the bound upstream receives the real value; the
// hostile server sees only its placeholder, wherever it looks, and
// cannot get the value by sending the placeholder to a second allowed
// host, to a host it controls, or by having the bound host reflect it.
func credentialRun(t *testing.T, backend string) {
	hostile := testbin.Build(t, hostilePkg)
	pki := testpki.New(t, "api.test", "mirror.test", "attacker.test")
	roots, cert := pki.Pool, pki.Leaf
	stands := map[string]*testupstream.Recorder{"api": {}, "mirror": {}, "attacker": {}}
	ports := map[string]int{}
	ns := testnetns.New(t, upstreamAddr)
	// The host's lo holds upstreamAddr too (setup): a port its stand-ins
	// listen on there would answer the control below.
	hostPorts := map[int]bool{w.httpPort: true, w.tlsPort: true, w.otherPort: true, w.holdPort: true}
	for name, rc := range stands {
		s := httptest.NewUnstartedServer(rc)
		var ln net.Listener
		for ln == nil || hostPorts[ln.Addr().(*net.TCPAddr).Port] {
			l, err := ns.Listen("tcp", net.JoinHostPort(upstreamAddr, "0"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			ln = l
		}
		// The control: from the host's namespace the upstream is not
		// there, so what reaches it went through the namespace.
		if c, err := net.DialTimeout("tcp", ln.Addr().String(), 2*time.Second); err == nil {
			c.Close()
			t.Fatalf("%s (%s) is reachable from the host's namespace", name, ln.Addr())
		}
		s.Listener.Close()
		s.Listener = ln
		s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.StartTLS()
		t.Cleanup(s.Close)
		ports[name] = ln.Addr().(*net.TCPAddr).Port
	}
	bound := fmt.Sprintf("api.test:%d", ports["api"])
	hosts := fmt.Sprintf("%s api.test mirror.test attacker.test\n", upstreamAddr)
	value := "ghp_" + testpki.Alnum(36)

	marker := w.marker + randomHex(2) + "-cred-" + backend
	server := "cred-" + marker
	dir := filepath.Join(base, "projects", server)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const inBox = "/opt/probe/hostile"
	var confine string
	if backend == "bwrap" {
		copyFile(t, hostile, filepath.Join(dir, "hostile"))
		confine = fmt.Sprintf(`backends: ["bwrap"]
	runtime: "static"
	mounts: [{source: "hostile", target: %q}]`, inBox)
	} else {
		confine = fmt.Sprintf(`backends: ["docker"]
	image: %q`, hostileImage(t, backend, hostile))
	}
	urls := []string{"https://" + bound + "/reflect", fmt.Sprintf("https://mirror.test:%d/", ports["mirror"]), fmt.Sprintf("https://attacker.test:%d/", ports["attacker"])}
	policy := fmt.Sprintf(`version: "v1"
servers: %q: {
	%s
	command: [%q, "GITHUB_TOKEN", %q, %q, %q]
	network: allow: [%q, "mirror.test:%d", "attacker.test:%d"]
	credentials: GITHUB_TOKEN: to: [%q]
}
`, server, confine, inBox, urls[0], urls[1], urls[2], bound, ports["mirror"], ports["attacker"], bound)
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
	if g := plans[0].Credentials; len(g) != 1 || g[0].As.Header != "Authorization" || g[0].As.Format != "Bearer {}" || g[0].From.Env != "GITHUB_TOKEN" {
		t.Fatalf("the plan's credentials: %+v", g)
	}
	resolve, err := egress.HostsResolver(strings.NewReader(hosts), noDNS)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr, log syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code, err := supervise.Run(ctx, plans[0], supervise.Options{
		Backend: backend,
		Machine: compiler.Machine{ProjectRoot: proj.Root, Home: home(t)},
		Self:    w.bin,
		Log:     &log,
		Resolve: resolve, Exempt: standIns(hosts),
		Stdout: &stdout, Stderr: &stderr,
		Environ:       []string{"GITHUB_TOKEN=" + value},
		UpstreamRoots: roots,
		Dial:          ns.DialContext,
	})
	if err != nil || code != 0 {
		t.Fatalf("supervise.Run: code %d, %v\nstderr: %s", code, err, stderr.String())
	}
	var rep hostileReport
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("the hostile server's report: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	ph := rep.Env
	t.Logf("scanned %d bytes; tokens seen: %v; http: %v", rep.Bytes, rep.Tokens, rep.HTTP)

	// What the server holds: a placeholder of the value's shape.
	if ph == value || len(ph) != len(value) || !strings.HasPrefix(ph, "ghp_") {
		t.Fatalf("the server's GITHUB_TOKEN is not a placeholder of the value's shape: %q", ph)
	}
	if where, ok := rep.Tokens[value]; ok {
		t.Errorf("the server read the value: %v", where)
	}
	// The scan's control: each way it looks finds the placeholder, so
	// each would have found the value.
	where := strings.Join(rep.Tokens[ph], " ")
	for _, want := range []string{"environ", "/environ", "/mem", "bound body"} {
		if !strings.Contains(where, want) {
			t.Errorf("the scan did not find the placeholder in %s (it found it in %s): would it find the value there?", want, where)
		}
	}
	for k, v := range rep.Trust {
		if v == "" {
			t.Errorf("%s is not set in the sandbox", k)
		}
	}
	if rep.Write == "" {
		t.Error("the server wrote the CA bundle")
	}
	for _, a := range []string{"bound", "bound-elsewhere", "mirror", "attacker"} {
		if rep.HTTP[a] != "200" {
			t.Errorf("%s: %s", a, rep.HTTP[a])
		}
	}

	// What the upstreams received: the value at the bound host, in the
	// bound header alone; the placeholder everywhere else.
	got, auth := stands["api"].Received()
	if len(auth) != 2 || auth[0] != "Bearer "+value || auth[1] != "token "+ph {
		t.Errorf("the bound upstream's Authorization headers: %q", auth)
	}
	if strings.Count(got, value) != 1 {
		t.Errorf("the bound upstream received the value %d times, want once (the bound header):\n%s", strings.Count(got, value), got)
	}
	for _, name := range []string{"mirror", "attacker"} {
		got, auth := stands[name].Received()
		if strings.Contains(got, value) {
			t.Errorf("%s received the value:\n%s", name, got)
		}
		if len(auth) != 1 || auth[0] != "Bearer "+ph {
			t.Errorf("%s's Authorization headers: %q", name, auth)
		}
	}

	// The decision log names the injection, and holds neither string.
	logged := log.String()
	if strings.Contains(logged, value) || strings.Contains(logged, ph) || strings.Contains(stderr.String(), value) {
		t.Errorf("the value or the placeholder is logged:\n%s\nstderr: %s", logged, stderr.String())
	}
	ds, err := parseDecisions(logged)
	if err != nil {
		t.Fatal(err)
	}
	injects := 0
	for _, d := range ds {
		if d.Action == egress.ActionInject {
			injects++
			if d.Credential != "GITHUB_TOKEN" || d.Host != "api.test" {
				t.Errorf("inject line: %+v", d)
			}
		}
	}
	if injects != 1 {
		t.Errorf("%d inject lines, want 1:\n%s", injects, logged)
	}
	noSurvivors(t, backend, plans[0], marker)
}

var hostileImages sync.Map // engine -> *importOnce

// hostileImage imports, once per engine, an image holding the hostile
// server at /opt/probe/hostile (and an empty /tmp), removed at the end.
func hostileImage(t *testing.T, engine, hostile string) string {
	t.Helper()
	tag := "localhost/mcpolicy-hostile:" + w.marker
	v, _ := hostileImages.LoadOrStore(engine, &importOnce{})
	im := v.(*importOnce)
	im.once.Do(func() {
		bin, err := os.ReadFile(hostile)
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
		tw.WriteHeader(&tar.Header{Name: "opt/probe/hostile", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))})
		tw.Write(bin)
		tw.Close()
		if err := testenv.ImportImage(context.Background(), engine, tag, buf.Bytes()); err != nil {
			im.err = err
			return
		}
		im.imported = true
	})
	if im.err != nil {
		t.Fatal(im.err)
	}
	hostileTags.Store(engine, tag)
	return tag
}

var hostileTags sync.Map

// hostileCleanup removes the hostile images (TestMain's teardown).
func hostileCleanup() {
	hostileTags.Range(func(k, v any) bool {
		exec.Command(k.(string), "rmi", "-f", v.(string)).Run()
		return true
	})
}
