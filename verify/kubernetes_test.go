package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// The kubernetes backend, run by `podman kube play`: each case's emitted
// manifest (with Options.HostPath, so that the Pod sees this machine's
// case folders), its Pod renamed per case and played with --network none.
//
// What podman does not do, and how the harness stands in for it:
//   - NetworkPolicy: podman ignores it. The Pod is played with --network
//     none, which stands for the emitted deny-all policy, and every case's
//     NetworkPolicies are checked structurally (checkNetworkPolicies). A
//     case with an egress allowlist would need the cluster's egress-proxy
//     Pod and a CNI: it is checked structurally only, never played.
//   - subPath of a hostPath volume before podman 5: podman 4 mounts the
//     whole volume instead. There the harness resolves each subPath as the
//     kubelet does (the volume's path joined with the subPath, a bind of
//     that) before playing; kubePlayRewrites counts the cases.
//   - Annotations longer than 63 characters (podman 4.3 refuses them):
//     dropped; they confine nothing (the backend writes none any more).
//   - hostUsers: false: the Pod is played in the host's user namespace, as
//     the other backends run the same uid without one: what is compared
//     is the view of the files. podman 4.3 plays it as --userns=auto,
//     three Pods at a time slowly and flakily (a Pod's first removal fails
//     with EBUSY); emit/kubernetes' podman tests play it.

// kubeSubset is what the kubernetes backend plays: by default the first
// 40 cases without an allowlist (a kube play, wait, logs and pod rm take
// about 1.6 s a Pod on a 2-vCPU VM with podman 4.3, three Pods at a time,
// most of it podman's CPU, which CI shares); with MCPOLICY_VERIFY_CASES
// every one without one. The cases with an allowlist are all checked
// structurally.
func kubeSubset(cases []*testCase) []*testCase {
	plainMax := 40
	if os.Getenv("MCPOLICY_VERIFY_CASES") != "" {
		plainMax = len(cases)
	}
	var out []*testCase
	plain := 0
	for _, c := range cases {
		switch {
		case c.egress():
			out = append(out, c)
		case plain < plainMax:
			plain++
			out = append(out, c)
		}
	}
	return out
}

var kubeStats struct {
	sync.Mutex
	rewrites int
}

func kubernetesBackend(mutate func(*corev1.Pod)) backendRun {
	var once sync.Once
	var image string
	var imgErr error
	var major int
	return backendRun{name: "kubernetes", view: SandboxView,
		refuses: func(p *compiler.Plan) bool {
			var ne *emit.NotEnforceableError
			return errors.As(kubernetes.Check(p), &ne)
		},
		structural: checkNetworkPolicies,
		run: func(t *testing.T, c *testCase, attempts []probe.Attempt) ([]probe.Result, error) {
			once.Do(func() {
				image, imgErr = importImage("podman")
				if imgErr == nil {
					major, imgErr = podmanMajor()
				}
			})
			if imgErr != nil {
				return nil, imgErr
			}
			if err := checkNetworkPolicies(c); err != nil {
				return nil, err
			}
			p := withCommand(c.plan, probeInSandbox, attempts)
			p.Image = image
			data, err := kubernetes.Manifest(p, c.machine(), kubernetes.Options{HostPath: true})
			if err != nil {
				return nil, err
			}
			docs := strings.Split(string(data), "\n---\n")
			var pod corev1.Pod
			if len(docs) < 2 {
				return nil, fmt.Errorf("manifest without objects:\n%s", data)
			}
			if err := yaml.UnmarshalStrict([]byte(docs[1]), &pod); err != nil || pod.Kind != "Pod" {
				return nil, fmt.Errorf("the manifest's first object: %v (kind %q)", err, pod.Kind)
			}
			pod.Name = fmt.Sprintf("mcpolicy-verify-%d-%d", os.Getpid(), c.n)
			pod.Annotations = nil
			pod.Spec.HostUsers = nil
			uniqueVolumes(&pod, fmt.Sprintf("c%d-", c.n))
			if major < 5 && resolveSubPaths(&pod) {
				kubeStats.Lock()
				kubeStats.rewrites++
				kubeStats.Unlock()
			}
			if mutate != nil {
				mutate(&pod)
			}
			return kubePlay(&pod)
		}}
}

// uniqueVolumes prefixes the Pod's volume names: podman 4 kube play makes
// an emptyDir a named volume of the engine, shared by the Pods played at
// the same time under the same name (in a cluster a volume's name is the
// Pod's own).
func uniqueVolumes(pod *corev1.Pod, prefix string) {
	for i := range pod.Spec.Volumes {
		pod.Spec.Volumes[i].Name = prefix + pod.Spec.Volumes[i].Name
	}
	c := &pod.Spec.Containers[0]
	for i := range c.VolumeMounts {
		c.VolumeMounts[i].Name = prefix + c.VolumeMounts[i].Name
	}
}

func podmanMajor() (int, error) {
	out, err := exec.Command(tool("podman"), "version", "--format", "{{.Client.Version}}").Output()
	if err != nil {
		return 0, fmt.Errorf("podman version: %v", err)
	}
	major, _, _ := strings.Cut(strings.TrimSpace(string(out)), ".")
	return strconv.Atoi(major)
}

// resolveSubPaths does what the kubelet does for a subPath of a hostPath
// volume, for a podman that ignores subPath: a hostPath volume of the
// joined path, mounted with the same readOnly. It reports whether the Pod
// had any.
func resolveSubPaths(pod *corev1.Pod) bool {
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	any := false
	c := &pod.Spec.Containers[0]
	for i, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if m.SubPath == "" || !ok || v.HostPath == nil {
			continue
		}
		name := "subpath-" + strconv.Itoa(i)
		hp := *v.HostPath
		hp.Path = path.Join(hp.Path, m.SubPath)
		// The kubelet creates a missing subPath as a directory.
		hpType := corev1.HostPathDirectoryOrCreate
		if fi, err := os.Stat(hp.Path); err == nil && !fi.IsDir() {
			hpType = corev1.HostPathFile
		}
		hp.Type = &hpType
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &hp}})
		c.VolumeMounts[i].Name, c.VolumeMounts[i].SubPath = name, ""
		any = true
	}
	return any
}

// kubePlay plays the Pod with no network, waits for its container and
// returns the probe's answers; the Pod is removed.
func kubePlay(pod *corev1.Pod) ([]probe.Result, error) {
	manifest, err := yaml.Marshal(pod)
	if err != nil {
		return nil, err
	}
	f := filepath.Join(world.base, "kube", pod.Name+".yaml")
	os.MkdirAll(filepath.Dir(f), 0o755)
	if err := os.WriteFile(f, manifest, 0o644); err != nil {
		return nil, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		exec.CommandContext(ctx, tool("podman"), "pod", "rm", "-f", pod.Name).Run()
		for _, v := range pod.Spec.Volumes {
			if v.EmptyDir != nil { // a named volume under podman 4
				exec.CommandContext(ctx, tool("podman"), "volume", "rm", "-f", v.Name).Run()
			}
		}
		os.Remove(f)
	}()
	if _, err := runCmd(tool("podman"), []string{"kube", "play", "--network", "none", f}, os.Environ()); err != nil {
		return nil, err
	}
	ctr := pod.Name + "-" + pod.Spec.Containers[0].Name
	code, err := runCmd(tool("podman"), []string{"wait", ctr}, os.Environ())
	if err != nil {
		return nil, err
	}
	out, err := runCmd(tool("podman"), []string{"logs", ctr}, os.Environ())
	if err != nil {
		return nil, err
	}
	if c := strings.TrimSpace(string(code)); c != "0" {
		return nil, fmt.Errorf("the probe exited %s\n%s", c, out)
	}
	return probe.Decode(out)
}

// checkNetworkPolicies checks what podman does not enforce, on the
// emitted objects: a deny-all policy selects the server's Pod; with an
// allowlist, the server's only egress is the egress-proxy Pod on the
// proxy's port, and the proxy's egress is exactly the allowlist's ports
// (and DNS).
func checkNetworkPolicies(c *testCase) error {
	data, err := kubernetes.Manifest(c.plan, compiler.Placeholders{}, kubernetes.Options{})
	if err != nil {
		return err
	}
	var pod corev1.Pod
	var nps []networkingv1.NetworkPolicy
	for i, d := range strings.Split(string(data), "\n---\n")[1:] {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(d), &kind); err != nil {
			return err
		}
		switch kind.Kind {
		case "Pod": // the server's; for an allowlist, the egress proxy's too
			var p corev1.Pod
			if err = yaml.UnmarshalStrict([]byte(d), &p); err == nil && p.Labels[kubernetes.LabelRole] == kubernetes.RoleServer {
				pod = p
			}
		case "NetworkPolicy":
			var np networkingv1.NetworkPolicy
			err = yaml.UnmarshalStrict([]byte(d), &np)
			nps = append(nps, np)
		case "Service":
		default:
			err = fmt.Errorf("unexpected kind %q", kind.Kind)
		}
		if err != nil {
			return fmt.Errorf("manifest document %d: %v", i, err)
		}
	}
	selects := func(np networkingv1.NetworkPolicy, labels map[string]string) bool {
		for k, v := range np.Spec.PodSelector.MatchLabels {
			if labels[k] != v {
				return false
			}
		}
		return len(np.Spec.PodSelector.MatchExpressions) == 0
	}
	deny := false
	var egress []networkingv1.NetworkPolicyEgressRule
	var ingress []networkingv1.NetworkPolicyIngressRule
	for _, np := range nps {
		if !selects(np, pod.Labels) {
			continue
		}
		deny = deny || len(np.Spec.Ingress) == 0 && len(np.Spec.Egress) == 0 &&
			slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) && slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		egress = append(egress, np.Spec.Egress...)
		ingress = append(ingress, np.Spec.Ingress...)
	}
	if !deny {
		return fmt.Errorf("no deny-all NetworkPolicy selects the server's Pod")
	}
	if len(ingress) > 0 {
		return fmt.Errorf("a NetworkPolicy lets traffic into the server's Pod: %+v", ingress)
	}
	if !c.egress() {
		if len(egress) > 0 {
			return fmt.Errorf("network none, yet a NetworkPolicy allows egress: %+v", egress)
		}
		return nil
	}
	proxyLabels := kubernetes.EgressProxyLabels(c.plan.Server)
	if len(egress) != 1 || len(egress[0].To) != 1 || egress[0].To[0].PodSelector == nil || egress[0].To[0].IPBlock != nil ||
		egress[0].To[0].NamespaceSelector != nil || len(egress[0].Ports) != 1 ||
		egress[0].Ports[0].Port.IntValue() != c.plan.Network.ProxyPort {
		return fmt.Errorf("the server's egress is not exactly the proxy's port on the egress-proxy Pod: %+v", egress)
	}
	for k, v := range egress[0].To[0].PodSelector.MatchLabels {
		if proxyLabels[k] != v {
			return fmt.Errorf("the server's egress selects %v, not the egress-proxy Pod", egress[0].To[0].PodSelector.MatchLabels)
		}
	}
	var want, got []int
	for _, d := range c.plan.Network.Allow {
		if !slices.Contains(want, d.Port) {
			want = append(want, d.Port)
		}
	}
	for _, np := range nps {
		if !selects(np, proxyLabels) {
			continue
		}
		for _, r := range np.Spec.Egress {
			if len(r.To) > 0 && r.To[0].IPBlock != nil {
				for _, p := range r.Ports {
					got = append(got, p.Port.IntValue())
				}
			}
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		return fmt.Errorf("the egress proxy's NetworkPolicy allows ports %v, the allowlist %v", got, want)
	}
	return nil
}

// kubeReadOnlyMadeRW is the kubernetes mistake of TestWrongEmittersAreCaught:
// every read-only mount of the policy's (not the probe's) made read-write.
func kubeReadOnlyMadeRW(pod *corev1.Pod) {
	c := &pod.Spec.Containers[0]
	for i, m := range c.VolumeMounts {
		if m.ReadOnly && m.MountPath != "/opt/probe" {
			c.VolumeMounts[i].ReadOnly, c.VolumeMounts[i].RecursiveReadOnly = false, nil
		}
	}
}
