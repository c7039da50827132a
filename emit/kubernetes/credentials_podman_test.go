package kubernetes_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testnetns"
	"github.com/mcpolicy/mcpolicy/internal/testpki"
	"github.com/mcpolicy/mcpolicy/internal/testupstream"
)

// A credential that never enters the server's Pod (issue 41), played
// with podman kube play: the egress-proxy Pod and the server's Pod as
// emitted, the Secrets and the ConfigMap as `mcpolicy credentials`
// printed them. The server is runtime/supervise's hostile one: it looks
// for the value in its environment, /proc, the memory it can read and
// every file it can read, and sends its placeholder to the bound host
// (which reflects it), to a second allowed host and to one it controls.
// The stand-in upstreams are HTTPS servers of the test, listening in a
// network namespace made for it and joined to podman's bridge, with
// certificates of a test CA the proxy's image trusts; the policy names
// them by address.
//
// podman 4.3 stands in for the kubelet in two ways a cluster does not
// need: its secretKeyRef reads a podman secret holding a flat JSON object
// of base64 values, its secret volume one of plain strings (and mounts
// every key: the split into two Secrets is what keeps the proxy's keys
// out of the server's Pod, not items); the test writes each podman secret
// in the form its one reader takes, from the objects printed.
// NetworkPolicy is not enforced by podman (TestGolden checks it).

const hostilePkg = "./runtime/supervise/testdata/hostile"

type hostileReport struct {
	Env    string              `json:"env"`
	Trust  map[string]string   `json:"trust"`
	Tokens map[string][]string `json:"tokens"`
	HTTP   map[string]string   `json:"http"`
	Write  string              `json:"writeCA"`
}

func TestPodmanCredentials(t *testing.T) {
	ctx := requireKubePlay(t, "podman kube play of a server with a credential")
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	// The upstreams: in a network namespace of the test's, joined to
	// podman's bridge at the subnet's last address (its allocator hands
	// addresses out from the first).
	var bridge, subnet string
	fmt.Sscan(string(podman(ctx, t, "network", "inspect", "podman", "--format", "{{.NetworkInterface}} {{range .Subnets}}{{if .Gateway.To4}}{{.Subnet}} {{end}}{{end}}")), &bridge, &subnet)
	prefix, err := netip.ParsePrefix(subnet)
	if err != nil || bridge == "" {
		t.Fatalf("podman's default network: bridge %q, IPv4 subnet %q: %v", bridge, subnet, err)
	}
	upstream := lastHost(prefix)
	ns := testnetns.New(t)
	ns.Attach(t, bridge, netip.PrefixFrom(upstream, prefix.Bits()).String())
	pki := testpki.New(t, upstream.String())
	stands := map[string]*testupstream.Recorder{"api": {}, "mirror": {}, "attacker": {}}
	dest := map[string]string{}
	for name, rc := range stands {
		s := httptest.NewUnstartedServer(rc)
		ln, err := ns.Listen("tcp4", net.JoinHostPort(upstream.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		s.Listener.Close()
		s.Listener = ln
		s.TLS = &tls.Config{Certificates: []tls.Certificate{pki.Leaf}}
		s.StartTLS()
		t.Cleanup(s.Close)
		dest[name] = net.JoinHostPort(upstream.String(), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}

	mcpolicy := testbin.Mcpolicy(t)
	proxyImage := importImageFiles(ctx, t, "mcpolicy-k8s-proxy", map[string]imageFile{
		strings.TrimPrefix(kubernetes.ProxyBinary, "/"): {file: mcpolicy, mode: 0o755},
		"etc/ssl/certs/ca-certificates.crt":             {data: pki.CAPEM, mode: 0o644},
	})
	serverImage := importImageFiles(ctx, t, "mcpolicy-k8s-hostile", map[string]imageFile{
		"opt/probe/hostile": {file: testbin.Build(t, hostilePkg), mode: 0o755},
	})

	var rnd [3]byte
	rand.Read(rnd[:])
	server := "cred" + hex.EncodeToString(rnd[:])
	root, home := t.TempDir(), t.TempDir()
	policy := fmt.Sprintf(`version: "v1"
servers: %q: {
	image:    %q
	command:  ["/opt/probe/hostile", "GITHUB_TOKEN", "https://%s/reflect", "https://%s/", "https://%s/"]
	backends: ["kubernetes"]
	network: allow: [%q, %q, %q]
	credentials: GITHUB_TOKEN: to: [%q]
}
`, server, serverImage, dest["api"], dest["mirror"], dest["attacker"], dest["api"], dest["mirror"], dest["attacker"], dest["api"])
	if err := os.WriteFile(filepath.Join(root, "mcpolicy.cue"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	value := "ghp_" + testpki.Alnum(36)

	// What mcpolicy credentials prints, as podman secrets and a ConfigMap.
	cmd := exec.CommandContext(ctx, mcpolicy, "credentials", server, "-p", root)
	cmd.Env = append(os.Environ(), "GITHUB_TOKEN="+value, "HOME="+home)
	printed, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcpolicy credentials: %v\n%s", err, stderrOf(err))
	}
	secrets, configMap := credentialObjects(t, printed)
	ph := string(secrets[kubernetes.PlaceholdersSecret(server)].Data["GITHUB_TOKEN"])
	podmanSecret(ctx, t, kubernetes.CredentialsSecret(server), secrets[kubernetes.CredentialsSecret(server)].Data, false)
	podmanSecret(ctx, t, kubernetes.PlaceholdersSecret(server), secrets[kubernetes.PlaceholdersSecret(server)].Data, true)
	t.Cleanup(func() { exec.Command("podman", "volume", "rm", "-f", kubernetes.SessionCAConfigMap(server)).Run() }) // podman's volume of it
	cmFile := filepath.Join(t.TempDir(), "configmap.yaml")
	cm, _ := yaml.Marshal(configMap)
	if err := os.WriteFile(cmFile, cm, 0o644); err != nil {
		t.Fatal(err)
	}

	// The egress-proxy Pod first: the server's HTTPS_PROXY is its address.
	objs, _ := manifestObjects(t, root, home, kubernetes.Options{ProxyImage: proxyImage})
	proxyPod := rolePod(t, objs, kubernetes.RoleEgressProxy)
	proxyIP, proxyCtr := playProxy(ctx, t, proxyPod)
	objs, _ = manifestObjects(t, root, home, kubernetes.Options{ProxyImage: proxyImage, EgressProxyIP: proxyIP})
	serverPod := rolePod(t, objs, kubernetes.RoleServer)
	for _, v := range serverPod.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("the server's Pod mounts Secret %s", v.Secret.SecretName)
		}
	}
	for _, e := range serverPod.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != kubernetes.PlaceholdersSecret(server) {
			t.Errorf("the server's Pod reads %s from Secret %s", e.Name, e.ValueFrom.SecretKeyRef.Name)
		}
	}

	check := func(t *testing.T, pod *corev1.Pod) []string {
		rep, inspect := playHostile(ctx, t, pod, cmFile)
		return leaks(rep, inspect, value, ph, stands)
	}
	if problems := check(t, serverPod); len(problems) > 0 {
		t.Errorf("%s\nproxy logs:\n%s", strings.Join(problems, "\n"), podman(ctx, t, "logs", proxyCtr))
	}
	got, auth := stands["api"].Received()
	if len(auth) != 2 || auth[0] != "Bearer "+value || auth[1] != "token "+ph || strings.Count(got, value) != 1 {
		t.Errorf("the bound upstream received the value %d times, want once, in the bound header; its Authorization headers %q", strings.Count(got, value), auth)
	}
	logs := string(podman(ctx, t, "logs", proxyCtr))
	if strings.Contains(logs, value) || strings.Contains(logs, ph) {
		t.Errorf("the proxy's log holds the value or the placeholder:\n%s", logs)
	}
	injects := 0
	for _, line := range strings.Split(logs, "\n") {
		var d struct{ Action, Host, Credential string }
		if json.Unmarshal([]byte(line), &d) == nil && d.Action == "inject" {
			injects++
			if d.Credential != "GITHUB_TOKEN" || d.Host != upstream.String() {
				t.Errorf("inject line: %s", line)
			}
		}
	}
	if injects != 1 {
		t.Errorf("%d inject lines, want 1:\n%s", injects, logs)
	}

	// The weakened wiring: the server's Pod given the value itself (an
	// env grant's Secret): the same checks find it.
	t.Run("control-value-in-pod", func(t *testing.T) {
		weak := serverPod.DeepCopy()
		weak.Name += "-weak"
		for i, e := range weak.Spec.Containers[0].Env {
			if e.Name == "GITHUB_TOKEN" {
				weak.Spec.Containers[0].Env[i] = corev1.EnvVar{Name: "GITHUB_TOKEN", Value: value}
			}
		}
		problems := check(t, weak)
		if !strings.Contains(strings.Join(problems, "\n"), "the server read the value") {
			t.Errorf("with the value in the Pod the checks found nothing: %q", problems)
		}
	})
}

// leaks are what the hostile server's report and its container's
// inspection say of the value.
func leaks(rep hostileReport, inspect []byte, value, ph string, stands map[string]*testupstream.Recorder) []string {
	var out []string
	if where, ok := rep.Tokens[value]; ok || rep.Env == value {
		out = append(out, fmt.Sprintf("the server read the value: %v", where))
	}
	if rep.Env != ph {
		out = append(out, fmt.Sprintf("the server's GITHUB_TOKEN is %q, not the placeholder", rep.Env))
	}
	where := strings.Join(rep.Tokens[rep.Env], " ")
	for _, want := range []string{"environ", "/mem", "bound body"} {
		if !strings.Contains(where, want) {
			out = append(out, fmt.Sprintf("the scan did not find what it holds in %s (found in %s): would it find the value there?", want, where))
		}
	}
	for _, a := range []string{"bound", "bound-elsewhere", "mirror", "attacker"} {
		if rep.HTTP[a] != "200" {
			out = append(out, fmt.Sprintf("%s: %s", a, rep.HTTP[a]))
		}
	}
	for k, v := range rep.Trust {
		if v == "" {
			out = append(out, k+" is not set in the Pod")
		}
	}
	if rep.Write == "" {
		out = append(out, "the server wrote the CA bundle")
	}
	if bytes.Contains(inspect, []byte(value)) {
		out = append(out, "podman inspect of the server's container shows the value")
	}
	for _, name := range []string{"mirror", "attacker"} {
		if got, _ := stands[name].Received(); strings.Contains(got, value) {
			out = append(out, name+" received the value")
		}
	}
	return out
}

// credentialObjects are the Secrets (by name) and the ConfigMap of
// mcpolicy credentials' output.
func credentialObjects(t *testing.T, printed []byte) (map[string]*corev1.Secret, *corev1.ConfigMap) {
	t.Helper()
	secrets := map[string]*corev1.Secret{}
	var cm *corev1.ConfigMap
	objs, err := decodeStrict(printed)
	if err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Secret:
			secrets[o.Name] = o
		case *corev1.ConfigMap:
			cm = o
		}
	}
	if len(secrets) != 2 || cm == nil {
		t.Fatalf("mcpolicy credentials printed %d Secrets and ConfigMap %v:\n%s", len(secrets), cm != nil, printed)
	}
	return secrets, cm
}

// podmanSecret makes a podman secret of data in the form podman 4.3's
// reader of it takes: for secretKeyRef (env) a flat object of base64
// values; for a secret volume a Secret whose data it writes as it is (no
// base64), into a volume named after the secret, removed at cleanup.
func podmanSecret(ctx context.Context, t *testing.T, name string, data map[string][]byte, env bool) {
	t.Helper()
	flat := map[string]string{}
	for k, v := range data {
		flat[k] = string(v)
		if env {
			flat[k] = base64.StdEncoding.EncodeToString(v)
		}
	}
	var b []byte
	if env {
		b, _ = json.Marshal(flat)
	} else {
		b, _ = json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]string{"name": name}, "data": flat})
		t.Cleanup(func() { exec.Command("podman", "volume", "rm", "-f", name).Run() })
	}
	f := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	podman(ctx, t, "secret", "create", name, f)
	t.Cleanup(func() { exec.Command("podman", "secret", "rm", name).Run() })
}

func rolePod(t *testing.T, objs []runtime.Object, role string) *corev1.Pod {
	t.Helper()
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Labels[kubernetes.LabelRole] == role {
			return p
		}
	}
	t.Fatalf("no %s Pod in the manifest", role)
	return nil
}

// playProxy plays the egress-proxy Pod on podman's bridge and returns its
// address once it listens, and its container.
func playProxy(ctx context.Context, t *testing.T, pod *corev1.Pod) (string, string) {
	t.Helper()
	f := writePod(t, pod)
	t.Cleanup(func() { podRm(t, pod) })
	podman(ctx, t, kubePlayArgs(pod, "podman", f)...)
	ctr := pod.Name + "-" + pod.Spec.Containers[0].Name
	infra := strings.TrimSpace(string(podman(ctx, t, "pod", "inspect", pod.Name, "--format", "{{.InfraContainerID}}")))
	ip := strings.TrimSpace(string(podman(ctx, t, "inspect", infra, "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}")))
	addr := net.JoinHostPort(ip, strconv.Itoa(int(pod.Spec.Containers[0].Ports[0].ContainerPort)))
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return ip, ctr
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the proxy does not listen at %s: %v\nstate: %s\nlogs:\n%s", addr, err,
				podman(ctx, t, "inspect", ctr, "--format", "{{.State.Status}} exit {{.State.ExitCode}} restarts {{.RestartCount}} {{.State.Error}}"),
				podman(ctx, t, "logs", ctr))
		}
	}
}

// playHostile plays the server's Pod on podman's bridge with the
// ConfigMap, waits for the hostile server to end, and returns its report
// and podman's inspection of its container.
func playHostile(ctx context.Context, t *testing.T, pod *corev1.Pod, configMap string) (hostileReport, []byte) {
	t.Helper()
	f := writePod(t, pod)
	t.Cleanup(func() { podRm(t, pod) })
	args := kubePlayArgs(pod, "podman", f)
	args = append(args[:len(args)-1], "--configmap", configMap, f)
	podman(ctx, t, args...)
	ctr := pod.Name + "-" + pod.Spec.Containers[0].Name
	podman(ctx, t, "wait", ctr)
	out := podman(ctx, t, "logs", ctr)
	var rep hostileReport
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &rep); err != nil {
		t.Fatalf("the hostile server's report: %v\n%s", err, out)
	}
	t.Logf("%s: tokens %v, http %v", pod.Name, rep.Tokens, rep.HTTP)
	return rep, podman(ctx, t, "inspect", ctr)
}

func writePod(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	manifest, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(f, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// imageFile is a file of an imported image: a file of this machine's, or data.
type imageFile struct {
	file string
	data []byte
	mode int64
}

// importImageFiles imports an image holding files (by path, no leading
// slash), root's, with their folders, under a tag unique to the run.
func importImageFiles(ctx context.Context, t *testing.T, tag string, files map[string]imageFile) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	dirs := map[string]bool{}
	var last string
	for name := range files {
		last = name
		for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(f imageFile) []byte {
		if f.file == "" {
			return f.data
		}
		b, err := os.ReadFile(f.file)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, f := range files {
		if name == last {
			continue
		}
		b := read(f)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: f.mode, Size: int64(len(b)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	return importTar(ctx, t, tag, &buf, tw, last, read(files[last]), mtime)
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// lastHost is the last address of p below its broadcast address.
func lastHost(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= 1<<(32-p.Bits()) - 1
	v--
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
