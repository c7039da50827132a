package kubernetes_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
)

// exception is a finding an emitted manifest may carry, and why: what the
// policy or the cluster decides, not the backend. docs/kubernetes.md
// lists each (TestMisconfigExceptionsDocumented). Nothing else may be
// found, at any severity.
type exception struct {
	ids     []string
	applies func(f finding, p *compiler.Plan, o kubernetes.Options) bool
	why     string
}

// onServer and onProxy tell the two containers apart.
func onServer(f finding, p *compiler.Plan) bool {
	return f.Object == "Pod/"+p.Server || f.Object == "Deployment/"+p.Server
}

func onProxy(f finding, p *compiler.Plan) bool {
	return strings.HasSuffix(f.Object, "/"+p.Server+"-egress-proxy")
}

var misconfigExceptions = []exception{
	{[]string{"KSV-0011", "KSV-0015"}, func(f finding, p *compiler.Plan, _ kubernetes.Options) bool {
		return onServer(f, p) && p.Subtractions.MilliCPUs == 0
	}, "the server's CPU is the policy's limits.cpus: without it the container has no CPU limit or request"},
	{[]string{"KSV-0016", "KSV-0018"}, func(f finding, p *compiler.Plan, _ kubernetes.Options) bool {
		return onServer(f, p) && p.Subtractions.MemoryBytes == 0
	}, "the server's memory is the policy's limits.memory: without it the container has no memory limit or request"},
	{[]string{"KSV-0020"}, func(f finding, p *compiler.Plan, _ kubernetes.Options) bool {
		return onServer(f, p) && p.User.UID <= 10000
	}, "the server runs as the policy's user (1000 by default); with hostUsers: false that uid is none of the node's"},
	{[]string{"KSV-0021"}, func(f finding, p *compiler.Plan, _ kubernetes.Options) bool {
		return onServer(f, p) && p.User.GID <= 10000
	}, "the server's group is the policy's, as its user"},
	{[]string{"KSV-0110"}, func(_ finding, _ *compiler.Plan, o kubernetes.Options) bool {
		return o.Namespace == "" || o.Namespace == "default"
	}, "no namespace unless Options.Namespace names one: kubectl's context decides"},
	{[]string{"KSV-0013"}, func(f finding, p *compiler.Plan, o kubernetes.Options) bool {
		return onServer(f, p) && !imageTagged(p.Image) || onProxy(f, p) && !imageTagged(proxyImage(o))
	}, "the images are the policy's (image) and the cluster's (the egress proxy's ${MCPOLICY_IMAGE} until substituted: pin it by digest)"},
	{[]string{"KSV-0125"}, func(f finding, p *compiler.Plan, o kubernetes.Options) bool {
		return onServer(f, p) && !trustedImage(p.Image) || onProxy(f, p) && !trustedImage(proxyImage(o))
	}, "the images are the policy's and the cluster's; which registries are trusted is the scanner's configuration (its default trusts only Azure, ECR and GCR)"},
	{[]string{"KSV-0023", "KSV-0121", "KSV-0006"}, func(f finding, p *compiler.Plan, o kubernetes.Options) bool {
		return onServer(f, p) && o.HostPath
	}, "hostPath only on opt-in (Options.HostPath), which needs a privileged namespace"},
}

func proxyImage(o kubernetes.Options) string {
	if o.ProxyImage != "" {
		return o.ProxyImage
	}
	return kubernetes.ProxyImagePlaceholder
}

func exceptionFor(f finding, p *compiler.Plan, o kubernetes.Options) (exception, bool) {
	for _, e := range misconfigExceptions {
		if slices.Contains(e.ids, f.ID) && e.applies(f, p, o) {
			return e, true
		}
	}
	return exception{}, false
}

// checkMisconfig fails the test on every finding of the objects (a
// manifest emitted for p with o) that is not an exception.
func checkMisconfig(t *testing.T, what string, p *compiler.Plan, o kubernetes.Options, objs []runtime.Object) {
	t.Helper()
	for _, f := range misconfigurations(objs) {
		if _, ok := exceptionFor(f, p, o); !ok {
			t.Errorf("%s: %s", what, f)
		}
	}
}

// TestMisconfigCaught: the checks that pass the emitted Pods find each
// widening of them, under the check's ID; and each exception is found
// where it applies (a plan without limits, uid 1000, no namespace, a
// placeholder image), so that none of them is vacuous.
func TestMisconfigCaught(t *testing.T) {
	p := plan()
	p.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24001, Allow: compiler.MustDestinations("api.example.com:443")}
	o := kubernetes.Options{Claims: map[string]string{"/workspace": "src", "/cache": "cache"}}
	data, err := kubernetes.Manifest(p, compiler.Placeholders{}, o)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range misconfigurations(objs) {
		got = append(got, f.ID+" "+f.Object)
	}
	for _, want := range []string{"KSV-0011 Pod/s", "KSV-0015 Pod/s", "KSV-0016 Pod/s", "KSV-0018 Pod/s", "KSV-0020 Pod/s", "KSV-0021 Pod/s",
		"KSV-0110 Pod/s", "KSV-0110 Pod/s-egress-proxy", "KSV-0013 Pod/s-egress-proxy"} {
		if !slices.Contains(got, want) {
			t.Errorf("exception %s not found: %q", want, got)
		}
	}
	checkMisconfig(t, "the emitted manifest", p, o, objs)

	pod := objs[0].(*corev1.Pod)
	for _, w := range []struct {
		id    string
		widen func(*corev1.Pod)
	}{
		{"KSV-0001", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil }},
		{"KSV-0003", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Drop = []corev1.Capability{"NET_RAW"}
		}},
		{"KSV-0004", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Capabilities = nil }},
		{"KSV-0005", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}},
		{"KSV-0009", func(p *corev1.Pod) { p.Spec.HostNetwork = true }},
		{"KSV-0012", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.RunAsNonRoot, p.Spec.SecurityContext.RunAsNonRoot = nil, nil
		}},
		{"KSV-0014", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = nil }},
		{"KSV-0017", func(p *corev1.Pod) { t := true; p.Spec.Containers[0].SecurityContext.Privileged = &t }},
		{"KSV-0023", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}})
		}},
		{"KSV-0030", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.SeccompProfile, p.Spec.SecurityContext.SeccompProfile = nil, nil
		}},
		{"KSV-0036", func(p *corev1.Pod) { t := true; p.Spec.AutomountServiceAccountToken = &t }},
		{"KSV-0104", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}},
		{"KSV-0105", func(p *corev1.Pod) { z := int64(0); p.Spec.SecurityContext.RunAsUser = &z }},
		{"KSV-0116", func(p *corev1.Pod) { z := int64(0); p.Spec.SecurityContext.FSGroup = &z }},
		{"KSV-0118", func(p *corev1.Pod) { p.Spec.SecurityContext = nil; p.Spec.Containers[0].SecurityContext = nil }},
		{"KSV-0121", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}},
	} {
		wide := pod.DeepCopy()
		w.widen(wide)
		found := false
		for _, f := range misconfigurations([]runtime.Object{wide}) {
			if _, ok := exceptionFor(f, p, o); f.ID == w.id && !ok {
				found = true
			}
		}
		if !found {
			t.Errorf("widened for %s: not found", w.id)
		}
	}
}

// TestMisconfigExceptionsDocumented: docs/kubernetes.md names every
// exception's IDs.
func TestMisconfigExceptionsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Misconfiguration checks")
	if !ok {
		t.Fatal(`docs/kubernetes.md has no "## Misconfiguration checks" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, e := range misconfigExceptions {
		for _, id := range e.ids {
			if !strings.Contains(section, id) {
				t.Errorf("docs/kubernetes.md, Misconfiguration checks: %s (%s) not documented", id, e.why)
			}
		}
	}
	for _, k := range ksvChecks {
		if !strings.Contains(section, k.id) {
			t.Errorf("docs/kubernetes.md, Misconfiguration checks: check %s not listed", k.id)
		}
	}
}
