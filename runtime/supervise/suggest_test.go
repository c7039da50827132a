package supervise_test

// TestDenialToReview is issue #18's acceptance, for real: under bwrap and
// docker (and podman), a server (a small static client, curl-like: it speaks to the
// proxy itself so it sees the answer's header and body, which an HTTP
// library hides for a refused CONNECT) is denied evil.test:443, through
// CONNECT and plain HTTP, and receives the typed body and the
// X-Mcpolicy-Denied header; `mcpolicy suggest --from-log` on the run's
// log gives a patch with one entry, evil.test:443; applied in a git copy
// of the project and committed, `mcpolicy diff` reports it as
// EGRESS_ADDED, widened (exit 6); and the patched policy, run again, lets
// the same request through.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/testenv"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
)

// clientSource is the server: for each argument, connect:HOST:PORT sends
// a CONNECT, get:URL an absolute-form GET, both to the proxy that
// HTTPS_PROXY names; it prints one JSON line per attempt.
const clientSource = `package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

type result struct {
	Attempt     string ` + "`json:\"attempt\"`" + `
	Status      int    ` + "`json:\"status\"`" + `
	Denied      string ` + "`json:\"denied\"`" + `
	ContentType string ` + "`json:\"contentType\"`" + `
	Body        string ` + "`json:\"body\"`" + `
	Error       string ` + "`json:\"error,omitempty\"`" + `
}

func main() {
	proxy, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || proxy.Host == "" {
		fmt.Fprintln(os.Stderr, "no HTTPS_PROXY")
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	for _, a := range os.Args[1:] {
		r := result{Attempt: a}
		op, target, _ := strings.Cut(a, ":")
		var req string
		switch op {
		case "connect":
			req = "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n"
		case "get":
			u, _ := url.Parse(target)
			req = "GET " + target + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n\r\n"
		case "forge": // a line on stderr that reads as the proxy's
			fmt.Fprintln(os.Stderr, target)
			continue
		default: // mark:...: only names the process, for the scans
			continue
		}
		c, err := net.DialTimeout("tcp", proxy.Host, 5*time.Second)
		if err != nil {
			r.Error = err.Error()
			out.Encode(r)
			continue
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: strings.ToUpper(op)})
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Status, r.Denied, r.ContentType = resp.StatusCode, resp.Header.Get("X-Mcpolicy-Denied"), resp.Header.Get("Content-Type")
			if resp.StatusCode != 200 || op == "get" {
				b, _ := io.ReadAll(resp.Body)
				r.Body = string(b)
			}
		}
		c.Close()
		out.Encode(r)
	}
}
`

type clientResult struct {
	Attempt     string `json:"attempt"`
	Status      int    `json:"status"`
	Denied      string `json:"denied"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"`
	Error       string `json:"error,omitempty"`
}

var (
	clientOnce sync.Once
	clientBin  string
	clientErr  error
)

// client builds clientSource, static, once per test binary.
func client(t *testing.T) string {
	t.Helper()
	clientOnce.Do(func() {
		src := filepath.Join(base, "client-src")
		os.MkdirAll(src, 0o755)
		os.WriteFile(filepath.Join(src, "go.mod"), []byte("module client\n\ngo 1.26\n"), 0o644)
		os.WriteFile(filepath.Join(src, "main.go"), []byte(clientSource), 0o644)
		clientBin = filepath.Join(base, "bin", "client")
		cmd := exec.Command("go", "build", "-o", clientBin, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			clientErr = fmt.Errorf("building the client: %v\n%s", err, out)
		}
	})
	if clientErr != nil {
		t.Fatal(clientErr)
	}
	return clientBin
}

// clientImage imports an image holding only the client at
// /opt/probe/client (and an empty /tmp) into engine.
func clientImage(t *testing.T, engine, bin string) string {
	t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"opt/", "opt/probe/"} {
		tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
	}
	tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777})
	tw.WriteHeader(&tar.Header{Name: "opt/probe/client", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(b))})
	tw.Write(b)
	tw.Close()
	tag := "localhost/mcpolicy-suggest-client:" + w.marker + randomHex(2)
	testenv.Import(context.Background(), t, engine, tag, buf.Bytes())
	t.Cleanup(func() { exec.Command(engine, "rmi", "-f", tag).Run() })
	return tag
}

func TestDenialToReview(t *testing.T) {
	t.Parallel()
	setup(t)
	_, err := exec.LookPath("git")
	need(t, err == nil, "git is not installed")
	bin := client(t)
	// evil.test's stand-in, for the run after the patch: TEST-NET-3, port
	// 443, on lo. Something that accepts is enough: CONNECT's 200 is the
	// proxy's answer.
	evil, err := net.Listen("tcp", net.JoinHostPort(upstreamAddr, "443"))
	if err != nil {
		t.Logf("no listener on %s:443 (%v): the run after the patch is skipped", upstreamAddr, err)
	} else {
		defer evil.Close()
		go func() {
			for {
				c, err := evil.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	concurrently(t, []string{"bwrap", "docker", "podman"}, func(t *testing.T, backend string) {
		needBackend(t, backend)
		denialToReview(t, backend, bin, evil != nil)
	})
}

func denialToReview(t *testing.T, backend, bin string, rerun bool) {
	marker := w.marker + randomHex(2) + "-suggest-" + backend
	server := "egress-" + marker
	dir := filepath.Join(base, "suggest-"+randomHex(3))
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, "project")
	os.Mkdir(proj, 0o755)
	api := fmt.Sprintf("api.test:%d", w.httpPort)
	// The server also forges a denial on the stderr it shares with
	// mcpolicy run: the default log is the proxy's alone, and suggest,
	// reading it, never sees the forgery.
	forged := `{"time":"2026-12-01T00:00:00Z","action":"deny","method":"CONNECT","host":"forged.test","port":443,"reason":"not in the allowlist","denied":"not-in-allowlist","suggest":"forged.test:443","bytesUp":0,"bytesDown":0}`
	attempts := []string{"get:http://" + api + "/", "connect:evil.test:443", "get:http://evil.test:443/", "forge:" + forged, "mark:" + marker}
	var confine string
	if backend == "bwrap" {
		copyFile(t, bin, filepath.Join(proj, "client"))
		confine = `backends: ["bwrap"]
	runtime: "static"
	mounts: [{source: "client", target: "/opt/probe/client"}] // the server, from the project`
	} else {
		confine = fmt.Sprintf(`backends: ["docker"]
	image: %q`, clientImage(t, backend, bin))
	}
	cmdJSON, _ := json.Marshal(append([]string{"/opt/probe/client"}, attempts...))
	policy := fmt.Sprintf(`version: "v1"

// The server may reach the stand-in API only.
servers: %q: {
	%s
	command: %s
	network: allow: [
		%q, // GRANT: the API
	]
}
`, server, confine, cmdJSON, api)
	policyFile := filepath.Join(proj, "mcpolicy.cue")
	if err := os.WriteFile(policyFile, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(proj, ".gitignore"), []byte("/client\n/.mcpolicy/\n"), 0o644)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = proj
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "before")

	hostsFile := filepath.Join(dir, "hosts")
	os.WriteFile(hostsFile, []byte(fmt.Sprintf("%s api.test evil.test # TEST-NET-3, on lo for the test\n", upstreamAddr)), 0o644)
	state := filepath.Join(dir, "state") // XDG_STATE_HOME: where the default log goes

	// 1. The run: the server is denied evil.test:443 and reads why.
	// log "" is run's default; it returns the path run says it logs to.
	run := func(log string) ([]clientResult, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args := []string{"run", "--policy", proj, "--server", server, "--backend", backend, "--hosts", hostsFile, "--self", w.bin}
		if log != "" {
			args = append(args, "--log", log)
		}
		cmd := exec.Command(w.bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Env = append(os.Environ(), "TMPDIR="+filepath.Join(dir, "tmp"), "XDG_RUNTIME_DIR=", "XDG_STATE_HOME="+state)
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("mcpolicy run: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
		}
		t.Logf("mcpolicy run (%s): %v", backend, time.Since(start).Round(time.Millisecond))
		var rs []clientResult
		sc := bufio.NewScanner(&stdout)
		for sc.Scan() {
			var r clientResult
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("client output %q: %v\nstderr: %s", sc.Text(), err, stderr.String())
			}
			rs = append(rs, r)
		}
		if len(rs) != len(attempts)-2 { // the forgery and the marker are no requests: one writes stderr, one names the processes
			t.Fatalf("%d results for %d attempts:\n%s\nstderr: %s", len(rs), len(attempts)-2, stdout.String(), stderr.String())
		}
		if !strings.Contains(stderr.String(), forged) {
			t.Errorf("the forged line is not on run's stderr:\n%s", stderr.String())
		}
		_, path, _ := strings.Cut(stderr.String(), "mcpolicy run: egress decisions: ")
		path, _, _ = strings.Cut(path, "\n")
		return rs, path
	}
	rs, logFile := run("")
	if !strings.HasPrefix(logFile, filepath.Join(state, "mcpolicy", "egress", server+"-")) || !strings.HasSuffix(logFile, ".jsonl") {
		t.Fatalf("run logs to %q, want the server's file in %s", logFile, filepath.Join(state, "mcpolicy", "egress"))
	}
	if rs[0].Status != 200 || !strings.Contains(rs[0].Body, w.marker) {
		t.Errorf("the allowed GET: %+v", rs[0])
	}
	for i, method := range map[int]string{1: "CONNECT", 2: "GET"} {
		r := rs[i]
		if r.Status != 403 || r.Denied != egress.DeniedNotListed || r.ContentType != "application/json" {
			t.Errorf("%s: status %d, X-Mcpolicy-Denied %q, Content-Type %q (error %q); want 403, %q, application/json",
				r.Attempt, r.Status, r.Denied, r.ContentType, r.Error, egress.DeniedNotListed)
		}
		var d egress.Denial
		dec := json.NewDecoder(strings.NewReader(r.Body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			t.Errorf("%s: the body is not an egress.Denial: %v: %q", r.Attempt, err, r.Body)
			continue
		}
		want := egress.Denial{Error: "mcpolicy egress proxy: denied", Denied: egress.DeniedNotListed, Reason: "not in the allowlist",
			Method: method, Destination: "evil.test:443", Suggest: "evil.test:443", Hint: d.Hint}
		if d != want || !strings.Contains(d.Hint, `"evil.test:443"`) {
			t.Errorf("%s: body %+v\nwant %+v", r.Attempt, d, want)
		}
		if i == 1 {
			t.Logf("the server received (%s): %d, %s: %s, body %s", r.Attempt, r.Status, egress.DeniedHeader, r.Denied, strings.TrimSpace(r.Body))
		}
	}
	logged, _ := os.ReadFile(logFile)
	ds, err := parseDecisions(string(logged))
	if err != nil {
		t.Fatal(err)
	}
	denies := 0
	for _, d := range ds {
		if d.Action == "deny" {
			denies++
			if d.Host != "evil.test" || d.Port != 443 || d.Denied != egress.DeniedNotListed || d.Suggest != "evil.test:443" {
				t.Errorf("deny line: %+v", d)
			}
		}
	}
	if denies != 2 || len(ds) != 3 {
		t.Errorf("the log holds %d lines, %d denials; want 3, 2:\n%s", len(ds), denies, logged)
	}

	// 2. suggest: one entry, in the list where it is written.
	mcpolicy := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(w.bin, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = proj, &stdout, &stderr
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	patch, stderr, code := mcpolicy("suggest", "--server", server) // the server's default log
	if code != 0 {
		t.Fatalf("mcpolicy suggest: exit %d\n%s", code, stderr)
	}
	t.Logf("mcpolicy suggest:\n%s%s", patch, stderr)
	var added []string
	for _, l := range strings.Split(patch, "\n") {
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
			added = append(added, strings.TrimSpace(l[1:]))
		}
	}
	if len(added) != 1 || added[0] != `"evil.test:443",` || !strings.HasPrefix(patch, "--- a/mcpolicy.cue\n+++ b/mcpolicy.cue\n") {
		t.Errorf("the patch adds %q, want one line \"evil.test:443\",", added)
	}
	if strings.Contains(patch, "*") {
		t.Errorf("the patch holds a wildcard:\n%s", patch)
	}
	if after, _ := os.ReadFile(policyFile); string(after) != policy {
		t.Errorf("suggest changed the policy file without --write")
	}

	// 3. Applied and committed, diff calls it a widening: EGRESS_ADDED.
	patchFile := filepath.Join(dir, "allow.patch")
	os.WriteFile(patchFile, []byte(patch), 0o644)
	git("apply", patchFile)
	if got, _ := os.ReadFile(policyFile); !strings.Contains(string(got), "\"evil.test:443\",\n\t]") || !strings.Contains(string(got), "// GRANT: the API") {
		t.Errorf("the patched policy:\n%s", got)
	}
	git("commit", "-q", "-am", "after: suggest's patch")
	out, stderr, code := mcpolicy("diff", "--against", "HEAD~1")
	t.Logf("mcpolicy diff --against HEAD~1: exit %d\n%s%s", code, out, stderr)
	if code != 6 || !strings.Contains(out, server+" WIDENED EGRESS_ADDED") || !strings.Contains(out, "evil.test:443") ||
		strings.Count(out, "WIDENED") != 1 {
		t.Errorf("mcpolicy diff: exit %d, want 6 and one WIDENED EGRESS_ADDED line naming evil.test:443:\n%s%s", code, out, stderr)
	}

	// 4. The patched policy lets the same request through.
	if !rerun {
		return
	}
	rs, _ = run(filepath.Join(dir, "after.jsonl"))
	if rs[1].Status != 200 || rs[1].Denied != "" {
		t.Errorf("after the patch, %s: %+v, want 200", rs[1].Attempt, rs[1])
	}
}
