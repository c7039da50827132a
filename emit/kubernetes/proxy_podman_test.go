package kubernetes_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
)

// TestPodmanEgressProxy plays the egress-proxy Pod of an emitted manifest
// (that document alone, as emitted, in an image holding the static
// mcpolicy at kubernetes.ProxyBinary) with `podman kube play`, and checks
// that it starts under its securityContext (uid and gid 65532, read-only
// root, no capabilities, no new privileges, seccomp), refuses a CONNECT to
// a name off the allowlist with 403 and X-Mcpolicy-Denied:
// not-in-allowlist, logs the decision as a JSON line on stdout (podman
// logs), and relays to an entry of the allowlist: the address of the
// podman bridge's gateway, where the test listens (there is no internet
// here; an IP entry lets the proxy reach a private address).
//
// The Pod is played on podman's default bridge network ("podman", whose
// gateway the allowlist names; kube play's own default,
// podman-default-kube-network, may not exist yet when the manifest is
// emitted), so the test reaches the proxy at the Pod's address. podman does not enforce
// NetworkPolicy: the manifest's NetworkPolicies (who may use the proxy,
// which ports it may reach) are not played; TestGolden checks them
// structurally.
//
// Without podman the test skips, except under CI=true, where it fails.
func TestPodmanEgressProxy(t *testing.T) {
	ctx := requireKubePlay(t, "podman kube play of the egress-proxy Pod")
	gateway := strings.TrimSpace(string(podman(ctx, t, "network", "inspect", "podman", "--format", "{{range .Subnets}}{{if .Gateway.To4}}{{.Gateway}} {{end}}{{end}}")))
	gateway, _, _ = strings.Cut(gateway, " ")
	if net.ParseIP(gateway) == nil {
		t.Fatalf("podman's default network has no IPv4 gateway (%q)", gateway)
	}

	// The allowed destination: an HTTP server on the host, reached from
	// the Pod at the bridge's gateway (which exists only once a container
	// is on the bridge: the test listens on every address).
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	target := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "target reached\n")
	}), ReadHeaderTimeout: 10 * time.Second}
	go target.Serve(ln)
	t.Cleanup(func() { target.Close() })
	allowed := net.JoinHostPort(gateway, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))

	image := importProxyImage(ctx, t, testbin.Mcpolicy(t))
	pod := emitProxyPod(t, image, "api.example.com:443", allowed)
	c := pod.Spec.Containers[0]
	if c.Image != image || len(c.Command) == 0 || c.Command[0] != kubernetes.ProxyBinary {
		t.Fatalf("proxy container: image %q command %q", c.Image, c.Command)
	}
	port := int(c.Ports[0].ContainerPort)

	f := writePod(t, pod)
	t.Cleanup(func() { podRm(t, pod) })
	start := time.Now()
	podman(ctx, t, kubePlayArgs(pod, "podman", f)...)
	ctr := pod.Name + "-" + c.Name
	infra := strings.TrimSpace(string(podman(ctx, t, "pod", "inspect", pod.Name, "--format", "{{.InfraContainerID}}")))
	ip := strings.TrimSpace(string(podman(ctx, t, "inspect", infra, "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}")))
	if net.ParseIP(ip) == nil {
		t.Fatalf("the Pod has no address on podman's network (%q)", ip)
	}
	proxy := net.JoinHostPort(ip, strconv.Itoa(port))

	// The proxy listens: the process started under the emitted
	// securityContext (RestartPolicy Always would restart a failing one).
	for {
		conn, err := net.DialTimeout("tcp", proxy, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the proxy does not listen at %s: %v\nstate: %s\nlogs:\n%s", proxy, err,
				podman(ctx, t, "inspect", ctr, "--format", "{{.State.Status}} exit {{.State.ExitCode}} restarts {{.RestartCount}} {{.State.Error}}"),
				podman(ctx, t, "logs", ctr))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("kube play to listening at %s: %v", proxy, time.Since(start).Round(time.Millisecond))

	// What the kernel says of the proxy's process.
	pid := strings.TrimSpace(string(podman(ctx, t, "inspect", ctr, "--format", "{{.State.Pid}}")))
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	// The ids as the host sees them: through the Pod's own user namespace
	// (hostUsers: false), uid and gid 65532 inside are others outside.
	checkUserNamespace(ctx, t, pod, ctr)
	u := strconv.Itoa(hostID(t, pid, "uid_map", kubernetes.ProxyUser))
	g := strconv.Itoa(hostID(t, pid, "gid_map", kubernetes.ProxyUser))
	if u == strconv.Itoa(kubernetes.ProxyUser) {
		t.Errorf("uid %d inside is %s on the host: no user namespace of its own", kubernetes.ProxyUser, u)
	}
	for field, want := range map[string]string{
		"Uid":        u + "\t" + u + "\t" + u + "\t" + u,
		"Gid":        g + "\t" + g + "\t" + g + "\t" + g,
		"CapEff":     "0000000000000000",
		"CapPrm":     "0000000000000000",
		"CapBnd":     "0000000000000000",
		"NoNewPrivs": "1",
		"Seccomp":    "2",
	} {
		if got := procField(status, field); got != want {
			t.Errorf("/proc/%s/status %s: %q, want %q", pid, field, got, want)
		}
	}
	if gs := procField(status, "Groups"); gs != "" && gs != g {
		t.Errorf("/proc/%s/status Groups: %q, want none but %s", pid, gs, g)
	}
	// Its resources: the cgroup's memory and CPU bounds are the manifest's
	// limits (256Mi; 500m, a quota of 50 ms a 100 ms period).
	for _, c := range []struct{ v2, v1, controller, want string }{
		{"memory.max", "memory.limit_in_bytes", "memory", "268435456"},
		{"cpu.max", "cpu.cfs_quota_us", "cpu", "50000"},
	} {
		f := cgroupFile(t, pid, c.controller, c.v2, c.v1)
		b, err := os.ReadFile(f)
		if got, _, _ := strings.Cut(strings.TrimSpace(string(b)), " "); err != nil || got != c.want {
			t.Errorf("%s: %q (%v), want %s", f, bytes.TrimSpace(b), err, c.want)
		}
	}
	mountinfo, err := os.ReadFile("/proc/" + pid + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if opts, ok := rootMountOptions(mountinfo); !ok || !strings.HasPrefix(opts, "ro,") && opts != "ro" {
		t.Errorf("root mount options %q (found %v), want read-only", opts, ok)
	}
	if exe, err := os.Readlink("/proc/" + pid + "/exe"); err != nil || !strings.HasSuffix(exe, kubernetes.ProxyBinary) {
		t.Errorf("the process is %q (%v), want %s", exe, err, kubernetes.ProxyBinary)
	}

	// A name off the allowlist: refused before any lookup.
	resp, body := connect(t, proxy, "denied.example:443")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Mcpolicy-Denied") != "not-in-allowlist" {
		t.Errorf("CONNECT denied.example:443: %s, X-Mcpolicy-Denied %q, want 403 not-in-allowlist\n%s", resp.Status, resp.Header.Get("X-Mcpolicy-Denied"), body)
	}
	// The allowlist's address entry: relayed to the test's server.
	resp, body = connect(t, proxy, allowed)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "target reached") {
		t.Errorf("CONNECT %s (allowed) and GET through it: %s\n%s", allowed, resp.Status, body)
	}

	// The decisions, JSON lines on the container's stdout.
	want := map[string]bool{"deny denied.example not-in-allowlist": false, "allow " + gateway + " ": false}
	var logs []byte
	for deadline := time.Now().Add(10 * time.Second); ; {
		logs = podman(ctx, t, "logs", ctr)
		for _, line := range bytes.Split(logs, []byte("\n")) {
			var d struct{ Action, Host, Requested, Denied string }
			if json.Unmarshal(line, &d) != nil {
				continue
			}
			host := d.Host
			if host == "" {
				host, _, _ = net.SplitHostPort(d.Requested)
			}
			k := d.Action + " " + host + " " + d.Denied
			if _, ok := want[k]; ok {
				want[k] = true
			}
		}
		if !want["deny denied.example not-in-allowlist"] || !want["allow "+gateway+" "] {
			if time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			t.Errorf("podman logs lacks decisions %v:\n%s", want, logs)
		}
		break
	}
	t.Logf("podman logs %s:\n%s", ctr, logs)
}

// emitProxyPod compiles a server with the allowlist entries and returns
// the egress-proxy Pod of its manifest, through YAML and strict decoding,
// its image proxyImage.
func emitProxyPod(t *testing.T, proxyImage string, allow ...string) *corev1.Pod {
	t.Helper()
	root, home := t.TempDir(), t.TempDir()
	entries, _ := json.Marshal(allow)
	policy := fmt.Sprintf(`version: "v1"
servers: fetch: {
	image:    %s
	command:  ["/bin/true"]
	network:  {allow: %s}
	backends: ["kubernetes"]
}
`, strconv.Quote(proxyImage), entries)
	if err := os.WriteFile(filepath.Join(root, "mcpolicy.cue"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, data := manifestObjects(t, root, home, kubernetes.Options{ProxyImage: proxyImage})
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Labels[kubernetes.LabelRole] == kubernetes.RoleEgressProxy {
			return p
		}
	}
	t.Fatalf("no egress-proxy Pod in the manifest:\n%s", data)
	return nil
}

// importProxyImage imports an image holding only the static mcpolicy at
// kubernetes.ProxyBinary, owned by root, mode 0755 (so uid 65532 may run
// it), without any registry, under a tag unique to this run, removed at
// cleanup.
func importProxyImage(ctx context.Context, t *testing.T, mcpolicy string) string {
	t.Helper()
	bin, err := os.ReadFile(mcpolicy)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	dir := strings.TrimPrefix(filepath.Dir(kubernetes.ProxyBinary), "/")
	var dirs []string
	for d := dir; d != "."; d = filepath.Dir(d) {
		dirs = append([]string{d + "/"}, dirs...)
	}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
	}
	return importTar(ctx, t, "mcpolicy-k8s-proxy", &buf, tw, strings.TrimPrefix(kubernetes.ProxyBinary, "/"), bin, mtime)
}

// connect sends CONNECT dest to the proxy and returns its answer; on a 200
// it sends a GET through the tunnel and returns that answer's body.
func connect(t *testing.T, proxy, dest string) (*http.Response, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(15 * time.Second))
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", dest, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", dest)
	got, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET through the tunnel to %s: %v", dest, err)
	}
	b, _ := io.ReadAll(got.Body)
	got.Body.Close()
	return resp, string(b)
}

// procField is a field of /proc/PID/status.
func procField(status []byte, name string) string {
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return "(absent)"
}

// rootMountOptions are the per-mount options of the process's root in
// /proc/PID/mountinfo (field 6 of the line whose mount point is /).
func rootMountOptions(mountinfo []byte) (string, bool) {
	opts, ok := "", false
	for _, line := range strings.Split(string(mountinfo), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			opts, ok = f[5], true // the last mount on / is the one seen
		}
	}
	return opts, ok
}

// hostID is the host's id for id inside the process's user namespace
// (its /proc/PID/uid_map or gid_map), -1 when it maps none.
func hostID(t *testing.T, pid, file string, id int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/" + file)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, _ := strconv.Atoi(f[0])
		out, _ := strconv.Atoi(f[1])
		n, _ := strconv.Atoi(f[2])
		if id >= in && id < in+n {
			return out + id - in
		}
	}
	return -1
}

// cgroupFile is the file of the process's cgroup that holds a
// controller's setting: v2file in its unified cgroup, or v1file in the
// controller's hierarchy where the controller is mounted there (v1).
func cgroupFile(t *testing.T, pid, controller, v2file, v1file string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	unified := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "" {
			unified = f[2]
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == controller {
				return filepath.Join("/sys/fs/cgroup", f[1], f[2], v1file)
			}
		}
	}
	return filepath.Join("/sys/fs/cgroup", unified, v2file)
}
