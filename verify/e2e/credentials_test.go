package e2e_test

// A credential through the entries `mcpolicy client` writes (issue 41):
// the policy binds GITHUB_TOKEN to one host; the entry passes where its
// value comes from (Claude Desktop: the env file; Claude Code: its own
// ${GITHUB_TOKEN}), and the server, started exactly as the client starts
// the entry, is runtime/supervise's hostile one: it looks for the value
// everywhere it can read and sends its placeholder everywhere it can
// reach. The stand-in upstreams listen on 203.0.113.10 (TEST-NET-3) in a
// network namespace of the test's, where each entry is started (nsenter):
// the host's network is neither touched nor reached. Their certificates
// are a test CA's, the run's roots (SSL_CERT_FILE); the entry's mcpolicy
// run gets --hosts, the one argument the test adds, to find them.

import (
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
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testnetns"
	"github.com/mcpolicy/mcpolicy/internal/testpki"
	"github.com/mcpolicy/mcpolicy/internal/testupstream"
)

// upstreamAddr stands for an internet host: TEST-NET-3 is never routed.
// It is on the lo of the test's namespace alone.
const upstreamAddr = "203.0.113.10"

const credPolicy = `version: "v1"

servers: gh: {
	image:   %[1]q
	command: ["/opt/probe/hostile", "GITHUB_TOKEN", %[2]q, %[3]q, %[4]q]
	runtime: "static"
	backends: ["bwrap", "docker"]
	mounts: [{source: "bin/hostile", target: "/opt/probe/hostile"}]
	network: allow: [%[5]q, %[6]q, %[7]q]
	%[8]s
}
`

// hostileReport is what the hostile server prints.
type hostileReport struct {
	Env    string              `json:"env"`
	Tokens map[string][]string `json:"tokens"`
	HTTP   map[string]string   `json:"http"`
}

// credWorld is the project, the home, the upstreams and the files the
// run's machine holds (its roots, its hosts table).
type credWorld struct {
	mcpolicy, base, root, home string
	roots, hosts               string
	ns                         *testnetns.NS // the upstreams and the runs
	value                      string
	stands                     map[string]*testupstream.Recorder
	urls                       [3]string
	dests                      [3]string
}

// TestCredentialThroughClientEntries: with the credential, the upstream
// receives the value and the server only its placeholder, wherever it
// looks and whatever it sends, through each client's entry on bwrap and
// docker; with the credential turned into an env grant (the weakened
// wiring), the same checks fail.
func TestCredentialThroughClientEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes in a network namespace of the test's")
	}
	if os.Geteuid() != 0 {
		unavailable(t, "not root: a network namespace needs CAP_SYS_ADMIN")
	}
	for _, b := range []string{"bwrap", "docker"} {
		requireBackend(t, b)
	}
	w := newCredWorld(t)
	bound := fmt.Sprintf("credentials: GITHUB_TOKEN: to: [%q]", w.dests[0])
	w.build(t, bound)
	for _, c := range []string{"claude-desktop", "claude-code"} {
		for _, backend := range []string{"bwrap", "docker"} {
			t.Run(c+"-"+backend, func(t *testing.T) {
				rep, stderr, log := w.spawn(t, c, backend)
				// The scan's control: where it looks it finds the
				// placeholder, so it would have found the value; and
				// each attempt reached its host.
				for _, want := range []string{"environ", "/mem", "bound body"} {
					if !strings.Contains(strings.Join(rep.Tokens[rep.Env], " "), want) {
						t.Errorf("the scan did not find the placeholder in %s: %v", want, rep.Tokens)
					}
				}
				for _, a := range []string{"bound", "bound-elsewhere", "mirror", "attacker"} {
					if rep.HTTP[a] != "200" {
						t.Errorf("%s: %s", a, rep.HTTP[a])
					}
				}
				if problems := w.leaks(rep, log); len(problems) > 0 {
					t.Errorf("%s\nstderr: %s", strings.Join(problems, "\n"), tail(stderr, 2000))
				}
				if !strings.Contains(log, `"inject"`) || !strings.Contains(log, `"GITHUB_TOKEN"`) {
					t.Errorf("the decision log names no injection of GITHUB_TOKEN:\n%s", tail(log, 2000))
				}
			})
		}
	}

	// The control: the value given to the server as an env grant. The
	// checks above must fail, or they prove nothing.
	t.Run("weakened", func(t *testing.T) {
		w.build(t, `env: ["GITHUB_TOKEN"]
	waive: [{rule: "ENV_SECRET_NOT_CREDENTIAL", reason: "the test's control"}]`)
		rep, _, log := w.spawn(t, "claude-desktop", "bwrap")
		problems := w.leaks(rep, log)
		if len(problems) == 0 {
			t.Fatalf("the server held the value and the checks found nothing: %+v", rep)
		}
		t.Logf("the weakened wiring, as the checks see it: %s", strings.Join(problems, "; "))
	})
}

func newCredWorld(t *testing.T) *credWorld {
	t.Helper()
	mcpolicy := tools(t)
	hostile := testbin.Build(t, "./runtime/supervise/testdata/hostile")
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-e2e-cred-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	must(t, err)
	must(t, os.Chmod(base, 0o755))
	w := &credWorld{mcpolicy: mcpolicy, base: base, root: filepath.Join(base, "proj"), home: filepath.Join(base, "home"),
		value: "ghp_" + testpki.Alnum(36), stands: map[string]*testupstream.Recorder{"api": {}, "mirror": {}, "attacker": {}}}
	bin := filepath.Join(w.root, "bin", "hostile")
	must(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	must(t, testbin.CopyFile(hostile, bin))
	must(t, os.Chmod(bin, 0o755))
	must(t, os.MkdirAll(filepath.Join(w.home, ".local", "state"), 0o700))
	// Claude Desktop's entry reads the value from the default env file.
	envDir := filepath.Join(w.home, ".config", "mcpolicy")
	must(t, os.MkdirAll(envDir, 0o700))
	must(t, os.WriteFile(filepath.Join(envDir, "env"), []byte("GITHUB_TOKEN="+w.value+"\n"), 0o600))

	w.ns = testnetns.New(t, upstreamAddr)
	pki := testpki.New(t, "api.test", "mirror.test", "attacker.test")
	cert, caPEM := pki.Leaf, pki.CAPEM
	w.roots = filepath.Join(base, "roots.pem")
	must(t, os.WriteFile(w.roots, caPEM, 0o644))
	for i, name := range []string{"api", "mirror", "attacker"} {
		s := httptest.NewUnstartedServer(w.stands[name])
		ln, err := w.ns.Listen("tcp", net.JoinHostPort(upstreamAddr, "0"))
		must(t, err)
		s.Listener.Close()
		s.Listener = ln
		s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.StartTLS()
		t.Cleanup(s.Close)
		w.dests[i] = fmt.Sprintf("%s.test:%d", name, ln.Addr().(*net.TCPAddr).Port)
		w.urls[i] = "https://" + w.dests[i] + "/"
	}
	w.urls[0] += "reflect"
	w.hosts = filepath.Join(base, "hosts")
	must(t, os.WriteFile(w.hosts, []byte(upstreamAddr+" api.test mirror.test attacker.test\n"), 0o644))
	return w
}

// build writes the policy with grant (the credential, or the env grant
// that replaces it) and builds it, the image an empty one.
func (w *credWorld) build(t *testing.T, grant string) {
	t.Helper()
	image := fmt.Sprintf("mcpolicy-e2e-cred:t%d-%d", os.Getpid(), time.Now().UnixNano())
	importEmptyImage(t, "docker", image)
	policy := fmt.Sprintf(credPolicy, image, w.urls[0], w.urls[1], w.urls[2], w.dests[0], w.dests[1], w.dests[2], grant)
	must(t, os.WriteFile(filepath.Join(w.root, "mcpolicy.cue"), []byte(policy), 0o644))
	w.run(t, "build", w.root)
}

func (w *credWorld) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(w.mcpolicy, args...)
	cmd.Dir = w.root
	cmd.Env = append(os.Environ(), "HOME="+w.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mcpolicy %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// spawn writes client's entry for backend (the user's file in the home,
// or the project's .mcp.json), starts it as the client does, and returns
// the server's report, run's stderr and the decision log.
func (w *credWorld) spawn(t *testing.T, client, backend string) (hostileReport, string, string) {
	t.Helper()
	w.run(t, "client", client, "--backend", backend, "--write", "-p", w.root)
	env := envMap(os.Environ())
	env["HOME"] = w.home
	var spec spawnSpec
	var err error
	switch client {
	case "claude-desktop":
		spec, err = claudeDesktopSpawn(filepath.Join(w.home, ".config", "Claude", "claude_desktop_config.json"), "gh", clientSide{env: env, cwd: "/"})
	case "claude-code":
		env["GITHUB_TOKEN"] = w.value // the user's shell: Claude Code expands ${GITHUB_TOKEN}
		spec, err = claudeCodeSpawn(filepath.Join(w.root, ".mcp.json"), "gh", clientSide{env: env, workspace: w.root})
	}
	must(t, err)
	file := filepath.Join(w.home, ".config", "Claude", "claude_desktop_config.json")
	if client == "claude-code" {
		file = filepath.Join(w.root, ".mcp.json")
	}
	// check reads the entry as written: the source gets its value, no
	// drift, nothing unmanaged.
	w.run(t, "check", "-p", w.root, "--client", file)
	raw, err := os.ReadFile(file)
	must(t, err)
	if bytes.Contains(raw, []byte(w.value)) {
		t.Fatalf("the client file holds the value:\n%s", raw)
	}
	// Where the value comes from: Claude Code's reference, Claude
	// Desktop's env file (it passes no environment of its own).
	if client == "claude-code" && !bytes.Contains(raw, []byte(`"GITHUB_TOKEN": "${GITHUB_TOKEN}"`)) {
		t.Errorf("the entry does not refer to the client's GITHUB_TOKEN:\n%s", raw)
	}
	if len(spec.args) == 0 || spec.args[0] != "run" {
		t.Fatalf("the entry does not start mcpolicy run: %s %q", spec.command, spec.args)
	}
	// The machine's roots and names: the one argument the test adds.
	// Started in the namespace: its proxy reaches the upstreams there.
	args := append([]string{"run", "--hosts", w.hosts}, spec.args[1:]...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := w.ns.Command(ctx, spec.command, args...)
	cmd.Env, cmd.Dir = append(spec.env, "SSL_CERT_FILE="+w.roots), spec.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\nstderr: %s", spec.command, args, err, tail(stderr.String(), 3000))
	}
	var rep hostileReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("the server's report: %v\n%s\nstderr: %s", err, stdout.String(), tail(stderr.String(), 3000))
	}
	var log []byte
	if m := regexp.MustCompile(`egress decisions: (\S+)`).FindStringSubmatch(stderr.String()); m != nil {
		log, _ = os.ReadFile(m[1])
	}
	return rep, stderr.String(), string(log)
}

// leaks are the ways the value reached the server, or a host other than
// the bound one, or the decision log; and a placeholder not of the
// value's shape. The upstreams' records are cleared.
func (w *credWorld) leaks(rep hostileReport, log string) []string {
	var out []string
	ph := rep.Env
	if ph == w.value {
		out = append(out, "the server's GITHUB_TOKEN is the value")
	} else if len(ph) != len(w.value) || !strings.HasPrefix(ph, "ghp_") {
		out = append(out, fmt.Sprintf("the server's GITHUB_TOKEN is not a placeholder of the value's shape: %q", ph))
	}
	if where, ok := rep.Tokens[w.value]; ok {
		out = append(out, fmt.Sprintf("the server read the value in %v", where))
	}
	got, auth := w.stands["api"].Received()
	if !slices.Contains(auth, "Bearer "+w.value) {
		out = append(out, fmt.Sprintf("the bound upstream never received the value: Authorization %q (the server's attempts: %v)", auth, rep.HTTP))
	}
	if n := strings.Count(got, w.value); n > 1 {
		out = append(out, fmt.Sprintf("the bound upstream received the value %d times, beyond the bound header", n))
	}
	for _, name := range []string{"mirror", "attacker"} {
		if got, _ := w.stands[name].Received(); strings.Contains(got, w.value) {
			out = append(out, name+" received the value")
		}
	}
	if strings.Contains(log, w.value) {
		out = append(out, "the decision log holds the value")
	}
	for _, rc := range w.stands {
		rc.Reset()
	}
	return out
}
