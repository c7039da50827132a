package kubernetes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
	"github.com/mcpolicy/mcpolicy/runtime/probe/probetable"
)

// TestPodmanPlaysEveryManifest plays every golden manifest the backend
// emits with claims (not the hostPath opt-in, which TestPodmanKubePlay
// plays), whole, with `podman kube play FILE` as an operator would, after
// the substitutions a cluster makes: the images (the probe's for the
// server, a static mcpolicy for the egress proxy), the proxy's address,
// the objects the cluster provides (a podman secret per Secret, the
// ConfigMaps in the file), and names unique to the run for what podman
// keeps engine-wide (Pods, claims' volumes, emptyDirs' volumes, secrets).
// A Deployment is played as the Pod its controller makes of the template.
//
// The server's probe finds the kernel's answers the plan asks for: the
// scratch writable (podman makes it a fresh volume of the engine, chowned
// to the Pod's user), the root and the masks read-only, each read-write
// claim writable and each read-only one not, the protected entries
// read-only; it ran in a user namespace of its own. The egress proxy, for
// an allowlist, runs. What podman does not do (NetworkPolicy, subPath, a
// memory-backed or bounded emptyDir) is held structurally by TestGolden,
// and said in docs/kubernetes.md.
//
// Without podman the test skips, except under CI=true, where it fails.
func TestPodmanPlaysEveryManifest(t *testing.T) {
	ctx := requireKubePlay(t, "podman kube play of every emitted manifest")
	mcpolicy := testbin.Mcpolicy(t)
	// No folder at any target: podman gives a fresh volume the owner and
	// mode of the image's folder at its target (docker's copy-up), where a
	// kubelet's emptyDir is anyone's and a claim holds what the cluster put
	// in it (the project, the server's uid's); without one, the volume is
	// the Pod's user's, as those are.
	image := importProbeImage(ctx, t, mcpolicy, []imageDir{{"bin/", 0o755}})
	proxyImage := importProxyImage(ctx, t, mcpolicy)
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	played := 0
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		plans, opts, _ := compileArchive(t, ar)
		if opts.HostPath {
			continue
		}
		for _, p := range plans {
			if kubernetes.Check(p) != nil {
				continue // refused: no manifest
			}
			t.Run(p.Server, func(t *testing.T) {
				playManifest(ctx, t, p, opts, image, proxyImage, run)
			})
			played++
		}
	}
	if played < 3 {
		t.Errorf("%d manifests played", played)
	}
}

// playManifest plays one plan's manifest and checks the server's probe.
func playManifest(ctx context.Context, t *testing.T, p *compiler.Plan, opts kubernetes.Options, image, proxyImage, run string) {
	suffix := "-" + run
	o := opts
	o.ProxyImage, o.EgressProxyIP = proxyImage, "10.96.0.39"
	o.Claims = map[string]string{}
	for _, m := range p.Mounts {
		name := opts.Claims[m.Target]
		if name == "" {
			name = kubernetes.ClaimName(p.Server, m.Target)
		}
		o.Claims[m.Target] = name + suffix
	}
	// Secrets are the engine's: a podman secret each, named for the run
	// (its data a Secret's, as JSON); ConfigMaps go in the file.
	o.Env = map[string]kubernetes.EnvSource{}
	configMaps := map[string]map[string]string{}
	secrets := map[string]map[string][]byte{}
	for _, name := range p.EnvNames() {
		src := opts.Env[name]
		obj, key := src.Name, src.Key
		if obj == "" {
			obj = p.Server + "-env"
		}
		if key == "" {
			key = name
		}
		if src.ConfigMap {
			if configMaps[obj] == nil {
				configMaps[obj] = map[string]string{}
			}
			configMaps[obj][key] = "value of " + name
		} else {
			obj += suffix
			if secrets[obj] == nil {
				secrets[obj] = map[string][]byte{}
			}
			secrets[obj][key] = []byte("not a secret")
		}
		o.Env[name] = kubernetes.EnvSource{ConfigMap: src.ConfigMap, Name: obj, Key: key}
	}
	data, err := kubernetes.Manifest(p, compiler.Placeholders{}, o)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeStrict(data)
	if err != nil {
		t.Fatal(err)
	}

	expect := podmanExpectations(p)
	var docs [][]byte
	var server, proxy *corev1.Pod
	for _, obj := range objs {
		pod := asPod(obj)
		if pod == nil {
			b, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, b)
			continue
		}
		pod.Name += suffix
		for i := range pod.Spec.Volumes { // emptyDirs are the engine's volumes too
			if pod.Spec.Volumes[i].EmptyDir != nil {
				renameVolume(pod, pod.Spec.Volumes[i].Name, pod.Spec.Volumes[i].Name+suffix)
			}
		}
		if pod.Labels[kubernetes.LabelRole] == kubernetes.RoleServer {
			c := &pod.Spec.Containers[0]
			c.Image, c.Args = image, []string{"/bin/mcpolicy", "probe"}
			// The probe answers once and exits; a Deployment's Pod would
			// run it again and again.
			pod.Spec.RestartPolicy = corev1.RestartPolicyNever
			for _, x := range expect {
				c.Args = append(c.Args, x.arg())
			}
			server = pod
		} else {
			proxy = pod
		}
		b, err := yaml.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	for name, kv := range configMaps {
		b, err := yaml.Marshal(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: kv})
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	for name, kv := range secrets {
		js, _ := json.Marshal(kv) // []byte values as base64, as a Secret's data
		cmd := exec.CommandContext(ctx, "podman", "secret", "create", name, "-")
		cmd.Stdin = strings.NewReader(string(js))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("podman secret create %s: %v\n%s", name, err, out)
		}
		t.Cleanup(func() { exec.Command("podman", "secret", "rm", name).Run() })
	}
	if server == nil {
		t.Fatalf("no server Pod in the manifest:\n%s", data)
	}
	f := filepath.Join(t.TempDir(), p.Server+".yaml")
	if err := os.WriteFile(f, []byte(strings.Join(stringsOf(docs), "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pod := range []*corev1.Pod{server, proxy} {
			if pod != nil {
				podRm(t, pod)
			}
		}
		for _, claim := range o.Claims {
			exec.Command("podman", "volume", "rm", "-f", claim).Run()
		}
	})
	// Both Pods on podman's bridge: podman 4 refuses a containerPort (the
	// proxy's) without one. The server's network is not what is checked
	// here: podman does not enforce NetworkPolicy (TestPodmanKubePlay plays
	// a server with --network none, its deny-all).
	podman(ctx, t, kubePlayArgs(server, "podman", f)...)
	ctr := server.Name + "-" + server.Spec.Containers[0].Name
	if code := strings.TrimSpace(string(podman(ctx, t, "wait", ctr))); code != "0" {
		t.Errorf("the probe exited %s\n%s", code, podman(ctx, t, "logs", ctr))
	}
	checkUserNamespace(ctx, t, server, ctr)
	out := podman(ctx, t, "logs", ctr)
	prs, err := probe.Decode(out)
	if err != nil {
		t.Fatalf("%v\nwhole output:\n%s", err, out)
	}
	probetable.Check(t, "podman kube play "+p.Server, expect, prs)

	if proxy != nil {
		pctr := proxy.Name + "-" + proxy.Spec.Containers[0].Name
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			state := strings.TrimSpace(string(podman(ctx, t, "inspect", pctr, "--format", "{{.State.Status}} {{.RestartCount}}")))
			if state == "running 0" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the egress proxy is %q, want running\n%s", state, podman(ctx, t, "logs", pctr))
			}
		}
		checkUserNamespace(ctx, t, proxy, pctr)
	}
}

// podmanExpectations are the probe's attempts for the plan's server and
// the answers the plan asks for.
func podmanExpectations(p *compiler.Plan) []expectation {
	x := []expectation{{"create", "/probe-root", "EROFS", "read-only root"}}
	for _, d := range []string{"/dev/shm", "/tmp", "/var/tmp"} {
		if !p.HoldsGrantAt(d) {
			x = append(x, expectation{"create", d + "/probe", "EROFS", "masked"})
		}
	}
	if s := p.Scratch; s != nil {
		x = append(x, expectation{"create", s.Target + "/probe", "ok", "scratch, writable by the server"})
	}
	for _, m := range p.Mounts {
		if m.Mode == compiler.ReadWrite {
			x = append(x, expectation{"create", m.Target + "/probe-rw", "ok", "read-write claim"})
		} else {
			x = append(x, expectation{"create", m.Target + "/probe-ro", "EROFS", "read-only claim"})
		}
	}
	for _, pr := range p.Protected {
		x = append(x, expectation{"create", pr.Target + "/probe", "EROFS", "protected entry (podman 4: the volume's root, read-only)"})
	}
	return x
}

// asPod is the Pod an object runs: a Pod, or the one a Deployment's
// controller makes of its template (named after it); nil for the others.
func asPod(obj runtime.Object) *corev1.Pod {
	switch v := obj.(type) {
	case *corev1.Pod:
		return v
	case *appsv1.Deployment:
		pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: v.Spec.Template.ObjectMeta, Spec: v.Spec.Template.Spec}
		pod.Name, pod.Namespace = v.Name, v.Namespace
		return pod
	}
	return nil
}

func renameVolume(pod *corev1.Pod, from, to string) {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == from {
			pod.Spec.Volumes[i].Name = to
		}
	}
	for ci := range pod.Spec.Containers {
		c := &pod.Spec.Containers[ci]
		for i := range c.VolumeMounts {
			if c.VolumeMounts[i].Name == from {
				c.VolumeMounts[i].Name = to
			}
		}
	}
}

func stringsOf(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}
