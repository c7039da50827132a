package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/syncbuf"

	"github.com/mcpolicy/mcpolicy/runtime/egress"
)

// startEgressProxy runs `mcpolicy egress-proxy ARGS` in-process, on
// 127.0.0.1:0, and returns its address, its stdout (the decision log by
// default) and a stop function that returns the command's exit code.
func startEgressProxy(t *testing.T, args ...string) (addr string, stdout *syncbuf.Buffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout = &syncbuf.Buffer{}
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs(append([]string{"egress-proxy", "--listen", "127.0.0.1:0"}, args...))
	root.SetOut(stdout)
	root.SetErr(pw)
	done := make(chan int, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		code := 0
		if err != nil {
			fmt.Fprintf(pw, "mcpolicy: %v\n", err)
			code = exitCode(err)
		}
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	_, rest, ok := strings.Cut(line, "listening on ")
	if err != nil || !ok {
		cancel()
		t.Fatalf("egress-proxy did not start: %q %v", line, err)
	}
	addr, _, _ = strings.Cut(rest, ",")
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				t.Error("egress-proxy did not stop within 10s of its context's end")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return addr, stdout, stop
}

// connect sends a CONNECT for target to the proxy at addr and returns the
// answer, the connection (a tunnel after a 200) and its reader.
func connect(t *testing.T, addr, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return resp, c, br
}

// TestEgressProxyCommand runs `mcpolicy egress-proxy` on a loopback port,
// as the kubernetes backend's proxy Pod does (there on 0.0.0.0), with an
// allowlist given by --allow: an allowed CONNECT reaches a local server
// through the tunnel; a host not listed gets 403 with X-Mcpolicy-Denied
// and the typed body; a listed name that resolves (--hosts) to a private
// address is refused though listed (the private-address rule holds over
// TCP as over the unix socket); each decision is a JSON line on stdout;
// and the proxy stops on its context's end (SIGTERM in the Pod).
func TestEgressProxyCommand(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from upstream")
	}))
	defer upstream.Close()
	_, port, _ := net.SplitHostPort(upstream.Listener.Addr().String())
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 api.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// By address: a rule naming a private address allows it. By name:
	// api.test resolves to loopback, which no rule names.
	addr, log, stop := startEgressProxy(t, "--allow", "127.0.0.1:"+port, "--allow", "api.test:"+port, "--hosts", hosts)

	// Allowed: the tunnel carries a request to the upstream and back.
	resp, c, br := connect(t, addr, "127.0.0.1:"+port)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("allowed CONNECT: %s", resp.Status)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n", port)
	up, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("through the tunnel: %v", err)
	}
	body, _ := io.ReadAll(up.Body)
	if string(body) != "hello from upstream" {
		t.Errorf("through the tunnel: %s %q", up.Status, body)
	}
	c.Close()

	// Denied: not listed, and listed but private.
	for target, want := range map[string]string{
		"evil.test:443":    egress.DeniedNotListed,
		"api.test:" + port: egress.DeniedPrivate,
	} {
		resp, _, _ := connect(t, addr, target)
		var d egress.Denial
		err := json.NewDecoder(resp.Body).Decode(&d)
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get(egress.DeniedHeader) != want || err != nil || d.Denied != want {
			t.Errorf("CONNECT %s: %s, %s: %q, body %+v (%v); want 403 and %q", target, resp.Status,
				egress.DeniedHeader, resp.Header.Get(egress.DeniedHeader), d, err, want)
		}
	}

	if code := stop(); code != 0 {
		t.Errorf("egress-proxy exited %d on its context's end", code)
	}
	// Every decision is logged once the command has returned.
	var ds []egress.Decision
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var d egress.Decision
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		ds = append(ds, d)
	}
	got := map[string]egress.Decision{}
	for _, d := range ds {
		got[fmt.Sprintf("%s:%d", d.Host, d.Port)] = d
	}
	if len(ds) != 3 {
		t.Errorf("%d decisions logged, want 3:\n%s", len(ds), log.String())
	}
	if d := got["127.0.0.1:"+port]; d.Action != "allow" || d.Method != "CONNECT" || d.Rule != "127.0.0.1:"+port || d.Down == 0 {
		t.Errorf("the allowed CONNECT's log line: %+v", d)
	}
	if d := got["evil.test:443"]; d.Action != "deny" || d.Denied != egress.DeniedNotListed {
		t.Errorf("the denied CONNECT's log line: %+v", d)
	}
	if d := got["api.test:"+port]; d.Action != "deny" || d.Denied != egress.DeniedPrivate {
		t.Errorf("the private CONNECT's log line: %+v", d)
	}
}

// TestEgressProxyFromPolicy: -p POLICY --server NAME enforces the server's
// compiled allowlist (canonical spellings), and --log FILE takes the log.
func TestEgressProxyFromPolicy(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: gh: {
	command: ["gh-mcp"]
	network: allow: ["API.GitHub.com.:443"]
}
servers: quiet: command: ["q"]
`)
	logFile := filepath.Join(dir, "decisions.jsonl")
	addr, stdout, stop := startEgressProxy(t, "-p", dir, "--server", "gh", "--log", logFile)
	resp, _, _ := connect(t, addr, "evil.test:443")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT evil.test:443: %s", resp.Status)
	}
	stop()
	b, err := os.ReadFile(logFile)
	if err != nil || !strings.Contains(string(b), `"denied":"not-in-allowlist"`) {
		t.Errorf("--log file: %q %v", b, err)
	}
	if stdout.String() != "" {
		t.Errorf("stdout with --log FILE: %q", stdout.String())
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", dir, "--server", "quiet"}, "has no egress allowlist"},
		{[]string{"--server", "gh", "--allow", "a.test:443"}, "not both"},
		{[]string{"-p", dir, "--allow", "a.test:443"}, "drop -p"},
		{[]string{"--allow", "*:443"}, "egress"},
		{nil, "give the allowlist"},
	} {
		code, _, stderr := run(t, append([]string{"egress-proxy", "--listen", "127.0.0.1:0"}, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("egress-proxy %q: exit %d, %q; want an error saying %q", c.args, code, stderr, c.want)
		}
	}
}

// TestEgressProxyCredentialFlags: --credential needs --credentials-dir
// and a grant's JSON; a folder whose files do not fit is refused before
// the proxy listens, naming the credential; one that fits is announced.
func TestEgressProxyCredentialFlags(t *testing.T) {
	grant := `{"name":"GITHUB_TOKEN","to":["api.github.com:443"],"as":{"header":"Authorization","format":"Bearer {}"}}`
	base := []string{"egress-proxy", "--listen", "127.0.0.1:0", "--allow", "api.github.com:443"}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--credential", grant}, ExitError, "go together"},
		{[]string{"--credential", `{"name":"GITHUB_TOKEN","too":[]}`, "--credentials-dir", "."}, ExitInvalid, "want a grant's JSON"},
		{[]string{"--credential", grant, "--credentials-dir", t.TempDir()}, ExitError, "GITHUB_TOKEN: open"},
	} {
		code, _, stderr := run(t, append(base, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %s; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	dir := t.TempDir()
	cert, key, err := egress.GenerateCA([]string{"api.github.com"})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string][]byte{"GITHUB_TOKEN": []byte("ghp_R3alT0kenValue0123456789abcdefABCD"),
		"GITHUB_TOKEN.placeholder": []byte("ghp_Pl4ceh0lderXyz9876543210zyxwvuZYXW"), "session-ca.crt": cert, "session-ca.key": key} {
		os.WriteFile(filepath.Join(dir, name), v, 0o400)
	}
	_, _, stop := startEgressProxy(t, "--allow", "api.github.com:443", "--credential", grant, "--credentials-dir", dir)
	if code := stop(); code != 0 {
		t.Errorf("egress-proxy with a credential exited %d", code)
	}
}
