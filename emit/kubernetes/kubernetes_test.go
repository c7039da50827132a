package kubernetes_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/diff"
	"github.com/rogpeppe/go-internal/txtar"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes/internal/kube"
	"github.com/mcpolicy/mcpolicy/project"
)

// TestGolden compiles each testdata/NAME.txtar (inputs: the policy and the
// project's files; options.json: kubernetes.Options) and compares the
// manifest of every server with want/SERVER.yaml, or its refusal with
// want/SERVER.error. Every manifest is also decoded strictly and its Pod
// template evaluated by Pod Security Admission (restricted): as emitted
// (claims: nothing may fail), as a Deployment, with named claims for
// every mount, and with hostPath opted in (which must fail on hostPath
// alone).
//
//	MCPOLICY_UPDATE=1 go test ./emit/kubernetes/
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.txtar")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) { runCase(t, f) })
	}
}

func compileArchive(t *testing.T, ar *txtar.Archive) (plans []*compiler.Plan, opts kubernetes.Options, root string) {
	t.Helper()
	// home/ files land in the home, outside the project: a home inside it
	// would be held by every mount of the project, and ~/.config/mcpolicy
	// with it (refused).
	root, home := t.TempDir(), t.TempDir()
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, "want/") {
			continue
		}
		if f.Name == "options.json" {
			dec := json.NewDecoder(strings.NewReader(string(f.Data)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&opts); err != nil {
				t.Fatalf("options.json: %v", err)
			}
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(f.Name))
		if rest, ok := strings.CutPrefix(f.Name, "home/"); ok {
			p = filepath.Join(home, filepath.FromSlash(rest))
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proj, err := project.Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	plans, err = proj.Compile(home)
	if err != nil {
		t.Fatal(err)
	}
	return plans, opts, root
}

func runCase(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	plans, opts, root := compileArchive(t, ar)
	got := map[string][]byte{}
	for _, p := range plans {
		data, err := kubernetes.Manifest(p, compiler.Placeholders{}, opts)
		if err != nil {
			msg := strings.ReplaceAll(err.Error(), root+string(filepath.Separator), "")
			got["want/"+p.Server+".error"] = []byte(msg + "\n")
			continue
		}
		if strings.Contains(string(data), root) {
			t.Errorf("%s: the manifest holds the temp dir's path:\n%s", p.Server, data)
		}
		again, _ := kubernetes.Manifest(p, compiler.Placeholders{}, opts)
		if string(again) != string(data) {
			t.Errorf("%s: a second rendering differs", p.Server)
		}
		got["want/"+p.Server+".yaml"] = data
		checkManifests(t, p, opts, data)
	}

	if os.Getenv("MCPOLICY_UPDATE") == "1" {
		var files []txtar.File
		for _, f := range ar.Files {
			if !strings.HasPrefix(f.Name, "want/") {
				files = append(files, f)
			}
		}
		var names []string
		for n := range got {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			files = append(files, txtar.File{Name: n, Data: got[n]})
		}
		ar.Files = files
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := map[string][]byte{}
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, "want/") {
			want[f.Name] = f.Data
		}
	}
	for n, w := range want {
		g, ok := got[n]
		if !ok {
			t.Errorf("%s: not produced", n)
			continue
		}
		if string(g) != string(w) {
			t.Errorf("%s differs (MCPOLICY_UPDATE=1 rewrites it; review the diff):\n%s", n, diff.Diff("want", w, "got", g))
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: produced but not in the archive", n)
		}
	}
}

// checkManifests validates the manifest as emitted, as a Deployment, and
// with a claim for every mount, and checks what every Pod must hold.
func checkManifests(t *testing.T, p *compiler.Plan, opts kubernetes.Options, data []byte) {
	t.Helper()
	objs := validate(t, p.Server+" as emitted", data, !opts.HostPath)
	checkObjects(t, p, objs)
	checkMisconfig(t, p.Server+" as emitted", p, opts, objs)

	dep := opts
	dep.Kind = kubernetes.KindDeployment
	d, err := kubernetes.Manifest(p, compiler.Placeholders{}, dep)
	if err != nil {
		t.Fatal(err)
	}
	objs = validate(t, p.Server+" as a Deployment", d, !opts.HostPath)
	checkObjects(t, p, objs)
	checkMisconfig(t, p.Server+" as a Deployment", p, dep, objs)

	hp := opts
	hp.HostPath = true
	h, err := kubernetes.Manifest(p, compiler.Placeholders{}, hp)
	if err != nil {
		t.Fatal(err)
	}
	objs = validate(t, p.Server+" with hostPath opted in", h, false)
	checkObjects(t, p, objs)
	checkMisconfig(t, p.Server+" with hostPath opted in", p, hp, objs)
	if len(p.Mounts) > 0 && !strings.Contains(string(h), "enforce=privileged") {
		t.Errorf("%s: hostPath opted in, and the header does not say it needs a privileged namespace", p.Server)
	}

	claimed := opts
	claimed.Claims = map[string]string{}
	for i, m := range p.Mounts {
		claimed.Claims[m.Target] = "claim-" + string(rune('a'+i))
	}
	c, err := kubernetes.Manifest(p, compiler.Placeholders{}, claimed)
	if err != nil {
		t.Fatal(err)
	}
	objs = validate(t, p.Server+" with claims", c, true)
	checkObjects(t, p, objs)
	checkMisconfig(t, p.Server+" with claims", p, claimed, objs)
}

// checkObjects checks, on the decoded objects, the subtractions every
// emitted Pod must carry whatever the plan, and the NetworkPolicies.
func checkObjects(t *testing.T, p *compiler.Plan, objs []runtime.Object) {
	t.Helper()
	var nps []*networkingv1.NetworkPolicy
	for _, o := range objs {
		if np, ok := o.(*networkingv1.NetworkPolicy); ok {
			nps = append(nps, np)
		}
	}
	proxies := 0
	for name, tpl := range podTemplates(objs) {
		if tpl.Labels[kubernetes.LabelRole] == kubernetes.RoleEgressProxy {
			proxies++
			checkProxy(t, p, name, tpl, objs, nps)
			continue
		}
		s := tpl.Spec
		if len(s.Containers) != 1 || len(s.InitContainers) > 0 || len(s.EphemeralContainers) > 0 {
			t.Fatalf("%s: want exactly one container", name)
		}
		c := s.Containers[0]
		sc := c.SecurityContext
		switch {
		case unhardened(t, p, name, s):
		case sc.RunAsUser == nil || *sc.RunAsUser != int64(p.User.UID) || sc.RunAsGroup == nil || *sc.RunAsGroup != int64(p.User.GID):
			t.Errorf("%s: user %v:%v, plan %s", name, sc.RunAsUser, sc.RunAsGroup, p.User)
		case !c.Stdin || c.TTY:
			t.Errorf("%s: stdin %v tty %v, want a stdio server's", name, c.Stdin, c.TTY)
		case tpl.Labels[kubernetes.LabelPlan] == "" || !strings.HasPrefix(strings.TrimPrefix(p.Hash, "sha256:"), tpl.Labels[kubernetes.LabelPlan]):
			t.Errorf("%s: plan label %q, plan %s", name, tpl.Labels[kubernetes.LabelPlan], p.Hash)
		}
		// Env: names the plan grants, never a value but the proxy's address.
		for _, e := range c.Env {
			granted := slices.Contains(p.EnvNames(), e.Name)
			if granted && (e.Value != "" || e.ValueFrom == nil) {
				t.Errorf("%s: env %s carries a value", name, e.Name)
			}
			if !granted && (p.Network.Mode != "allowlist" || !strings.Contains(strings.ToLower(e.Name), "proxy")) {
				t.Errorf("%s: env %s is not granted", name, e.Name)
			}
		}
		// Volumes: only emptyDirs, the plan's mounts, nothing else.
		hostPaths := 0
		for _, v := range s.Volumes {
			switch {
			case v.EmptyDir != nil:
				if v.EmptyDir.SizeLimit == nil {
					t.Errorf("%s: unbounded emptyDir %s", name, v.Name)
				}
			case v.HostPath != nil:
				hostPaths++
			case v.PersistentVolumeClaim != nil:
			default:
				t.Errorf("%s: volume %s of an unexpected type", name, v.Name)
			}
		}
		if hostPaths > len(p.Mounts) {
			t.Errorf("%s: %d hostPath volumes for %d mounts", name, hostPaths, len(p.Mounts))
		}
		// Every pod the deny-all policy selects.
		deny := false
		for _, np := range nps {
			if len(np.Spec.Ingress) == 0 && len(np.Spec.Egress) == 0 && len(np.Spec.PolicyTypes) == 2 && selects(np, tpl.Labels) {
				deny = true
			}
		}
		if !deny {
			t.Errorf("%s: no deny-all NetworkPolicy selects the Pod", name)
		}
	}
	if want := map[bool]int{true: 1}[p.Network.Mode == "allowlist"]; proxies != want {
		t.Errorf("%d egress-proxy Pod templates, want %d (network %q)", proxies, want, p.Network.Mode)
	}
}

// checkProxy checks the egress-proxy Pod: the server's subtractions (as
// its own non-root user), mcpolicy egress-proxy with the plan's allowlist
// on the plan's proxy port, selected by its Service and by a
// NetworkPolicy that lets in the server's Pod alone.
func checkProxy(t *testing.T, p *compiler.Plan, name string, tpl *corev1.PodTemplateSpec, objs []runtime.Object, nps []*networkingv1.NetworkPolicy) {
	t.Helper()
	s := tpl.Spec
	if len(s.Containers) != 1 || len(s.InitContainers) > 0 || len(s.EphemeralContainers) > 0 || len(s.Volumes) > 0 {
		t.Fatalf("%s: want exactly one container and no volume", name)
	}
	c := s.Containers[0]
	sc := c.SecurityContext
	switch {
	case unhardened(t, p, name, s):
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != kubernetes.ProxyUser:
		t.Errorf("%s: user %v, want %d, non-root", name, sc.RunAsUser, kubernetes.ProxyUser)
	case c.Stdin || len(c.Env) > 0:
		t.Errorf("%s: stdin or env", name)
	case c.Resources.Limits.Memory().IsZero() || c.Resources.Limits.Cpu().IsZero() ||
		c.Resources.Requests.Memory().Cmp(*c.Resources.Limits.Memory()) > 0 || c.Resources.Requests.Cpu().Cmp(*c.Resources.Limits.Cpu()) > 0:
		t.Errorf("%s: resources %+v, want memory and CPU limits, requests no higher", name, c.Resources)
	case tpl.Labels[kubernetes.LabelPlan] == "" || !strings.HasPrefix(strings.TrimPrefix(p.Hash, "sha256:"), tpl.Labels[kubernetes.LabelPlan]):
		t.Errorf("%s: plan label %q, plan %s", name, tpl.Labels[kubernetes.LabelPlan], p.Hash)
	}
	want := []string{kubernetes.ProxyBinary, "egress-proxy", "--listen", "0.0.0.0:" + strconv.Itoa(p.Network.ProxyPort)}
	for _, e := range p.Network.Entries() {
		want = append(want, "--allow", e)
	}
	if !slices.Equal(c.Command, want) || len(c.Args) > 0 {
		t.Errorf("%s: command %q args %q, want %q", name, c.Command, c.Args, want)
	}
	for k, v := range kubernetes.EgressProxyLabels(p.Server) {
		if tpl.Labels[k] != v {
			t.Errorf("%s: label %s=%q, want %q", name, k, tpl.Labels[k], v)
		}
	}
	var svc *corev1.Service
	for _, o := range objs {
		if s, ok := o.(*corev1.Service); ok {
			svc = s
		}
	}
	if svc == nil || !selectsLabels(svc.Spec.Selector, tpl.Labels) || svc.Spec.Ports[0].TargetPort.IntValue() != p.Network.ProxyPort {
		t.Errorf("%s: no Service selects it on the proxy port: %+v", name, svc)
	}
	// Ingress only from the server's Pod, on the proxy's port.
	checkProxyEgress(t, p, name, tpl, nps)
	guarded := false
	for _, np := range nps {
		if !selects(np, tpl.Labels) {
			continue
		}
		for _, r := range np.Spec.Ingress {
			if len(r.From) != 1 || r.From[0].PodSelector == nil || r.From[0].IPBlock != nil || r.From[0].NamespaceSelector != nil ||
				r.From[0].PodSelector.MatchLabels[kubernetes.LabelRole] != kubernetes.RoleServer ||
				r.From[0].PodSelector.MatchLabels[kubernetes.LabelServer] != p.Server ||
				len(r.Ports) != 1 || r.Ports[0].Port.IntValue() != p.Network.ProxyPort {
				t.Errorf("%s: NetworkPolicy %s lets in %+v", name, np.Name, r)
			}
		}
		guarded = guarded || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
	}
	if !guarded {
		t.Errorf("%s: no NetworkPolicy restricts who connects to the egress proxy", name)
	}
}

func selectsLabels(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

func selects(np *networkingv1.NetworkPolicy, labels map[string]string) bool {
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	return len(np.Spec.PodSelector.MatchExpressions) == 0
}

func plan() *compiler.Plan {
	return &compiler.Plan{
		Server: "s", Image: "img:1", User: compiler.User{UID: 1000, GID: 1000},
		Mounts: []compiler.Mount{
			{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "src"}, Target: "/workspace", Mode: compiler.ReadWrite},
			{Source: compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"}, Target: "/cache", Mode: compiler.ReadOnly},
		},
		Protected: []compiler.Protected{
			{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "src/.git"}, Target: "/workspace/.git", Name: ".git"},
		},
		Scratch: &compiler.Scratch{Target: "/tmp", SizeBytes: 64 << 20},
		Env:     []compiler.EnvGrant{{Name: "TOKEN"}},
		Network: compiler.Network{Mode: "none"}, Hash: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	}
}

// TestWidenedIsCaught: the checks that pass the emitted Pod must fail a
// deliberately widened one, each widening on its own; and the strict
// decoder must refuse a field the API does not have.
func TestWidenedIsCaught(t *testing.T) {
	p := plan()
	opts := kubernetes.Options{Claims: map[string]string{"/workspace": "src", "/cache": "cache"}}
	emitted, err := kubernetes.Pod(p, compiler.Placeholders{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	pod := apiObject[corev1.Pod](t, emitted)
	if vs := violations(&pod.ObjectMeta, &pod.Spec); len(vs) > 0 {
		t.Fatalf("the emitted Pod already fails: %q", vs)
	}
	for _, w := range []struct {
		name, reason string
		widen        func(*corev1.Pod)
	}{
		{"privileged", "privileged", func(p *corev1.Pod) { t := true; p.Spec.Containers[0].SecurityContext.Privileged = &t }},
		{"no drop ALL", "unrestricted capabilities", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Capabilities.Drop = nil }},
		{"cap add", "unrestricted capabilities", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}},
		{"privilege escalation", "allowPrivilegeEscalation != false", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}},
		{"host network", "host namespaces", func(p *corev1.Pod) { p.Spec.HostNetwork = true }},
		// Root in the node's user namespace: Pod Security lets uid 0 through
		// in a user namespace of the Pod's own (hostUsers: false), where it is
		// no uid of the node's (the backend refuses root all the same).
		{"root", "runAsUser=0", func(p *corev1.Pod) {
			z := int64(0)
			p.Spec.Containers[0].SecurityContext.RunAsUser = &z
			p.Spec.HostUsers = nil
		}},
		{"hostPath of home", "restricted volume types", func(p *corev1.Pod) {
			p.Spec.Volumes[len(p.Spec.Volumes)-1].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/root"}}
		}},
		{"unconfined seccomp", "seccompProfile", func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}},
	} {
		t.Run(w.name, func(t *testing.T) {
			wide := pod.DeepCopy()
			w.widen(wide)
			// Through YAML and the strict decoder, as a manifest would go.
			b, err := yaml.Marshal(wide)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decodeStrict(b)
			if err != nil {
				t.Fatal(err)
			}
			got := objs[0].(*corev1.Pod)
			vs := violations(&got.ObjectMeta, &got.Spec)
			if !slices.ContainsFunc(vs, func(v string) bool { return strings.HasPrefix(v, w.reason) }) {
				t.Errorf("widened (%s): Pod Security restricted says %q, want %q among them", w.name, vs, w.reason)
			}
		})
	}
	t.Run("unknown field", func(t *testing.T) {
		b, _ := yaml.Marshal(pod)
		bad := strings.Replace(string(b), "    securityContext:\n", "    securityContext:\n      privilegd: true\n", 1)
		if bad == string(b) {
			t.Fatal("no container securityContext to widen")
		}
		if _, err := decodeStrict([]byte(bad)); err == nil || !strings.Contains(err.Error(), "privilegd") {
			t.Errorf("strict decoding of an unknown field: %v", err)
		}
	})
}

func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*compiler.Plan)
		wants string
	}{
		{"invoker", func(p *compiler.Plan) { p.User = compiler.User{UID: -1, GID: -1, Invoker: true} }, "a cluster has no invoking user"},
		{"pids", func(p *compiler.Plan) { p.Subtractions.Pids = 64 }, "a Pod has no pids limit"},
		{"fixed top", func(p *compiler.Plan) { p.Mounts[0].Source.Rel = "." }, "fixed top level"},
		{"no image", func(p *compiler.Plan) { p.Image = "" }, "without an image"},
		{"name", func(p *compiler.Plan) { p.Server = "a_b" }, "names objects after the server"},
		{"newline", func(p *compiler.Plan) { p.Command = []string{"a\nb"} }, "control character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := plan()
			c.edit(p)
			_, err := kubernetes.Pod(p, compiler.Placeholders{}, kubernetes.Options{})
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("got %v, want an error saying %q", err, c.wants)
			}
			if _, err := kubernetes.Manifest(p, compiler.Placeholders{}, kubernetes.Options{}); err == nil {
				t.Fatal("Manifest emitted what Pod refused")
			}
			if err := kubernetes.Check(p); err == nil {
				t.Fatal("Check passed what Pod refused")
			}
		})
	}
	var ne *emit.NotEnforceableError
	p := plan()
	p.User = compiler.User{UID: -1, GID: -1, Invoker: true}
	if err := kubernetes.Check(p); !errors.As(err, &ne) {
		t.Errorf("invoker: %T, want a NotEnforceableError", err)
	}
}

// TestRoot: a plan that runs as root is refused with its position and a
// hint, as Pod Security restricted would refuse the Pod: every manifest
// this backend writes passes it.
func TestRoot(t *testing.T) {
	p := plan()
	p.User = compiler.User{UID: 0, GID: 0}
	var ne *emit.NotEnforceableError
	if err := kubernetes.Check(p); !errors.As(err, &ne) || !strings.Contains(ne.Alternative, "non-root") {
		t.Errorf("root plan: %v, want a NotEnforceableError with a hint", err)
	}
}

// TestMinimalPlan: a plan with nothing but an image (no hash, no mounts)
// renders, as a Pod and as a Deployment.
func TestMinimalPlan(t *testing.T) {
	p := &compiler.Plan{Server: "s", Image: "i", User: compiler.User{UID: 1000, GID: 1000}, Network: compiler.Network{Mode: "none"}}
	for _, kind := range []string{kubernetes.KindPod, kubernetes.KindDeployment} {
		b, err := kubernetes.Manifest(p, compiler.Placeholders{}, kubernetes.Options{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		o := kubernetes.Options{Kind: kind}
		checkMisconfig(t, "minimal "+kind, p, o, validate(t, "minimal "+kind, b, true))
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []kubernetes.Options{
		{Kind: "DaemonSet"},
		{Namespace: "Bad_NS"},
		{EgressProxyIP: "10.0.0.1:80"},
		{Claims: map[string]string{"/nowhere": "c"}},
		{Claims: map[string]string{"/workspace": "Bad Claim"}},
		{Env: map[string]kubernetes.EnvSource{"OTHER": {}}},
		{Env: map[string]kubernetes.EnvSource{"TOKEN": {Key: "a/b"}}},
		// The proxy's Secret, which holds credentials' values: never the server's.
		{Env: map[string]kubernetes.EnvSource{"TOKEN": {Name: kubernetes.CredentialsSecret("s"), Key: "GITHUB_TOKEN"}}},
		{Env: map[string]kubernetes.EnvSource{"TOKEN": {Name: kubernetes.CredentialsSecret("s"), Key: "session-ca.key"}}},
		{DNSLabels: map[string]string{"k": "bad value"}},
		{ProxyImage: "img\nkind: Secret"},
		{ClusterCIDRs: []string{"10.96.0.0/33"}},
	} {
		if _, err := kubernetes.Manifest(plan(), compiler.Placeholders{}, o); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
}

// TestPodShape checks what the golden files show, by field: masks, scratch,
// protected subPath, env by reference, limits.
func TestPodShape(t *testing.T) {
	p := plan()
	p.Subtractions.MemoryBytes = 512 << 20
	p.Subtractions.MilliCPUs = 1500
	// A source inside a rw mount: the server could plant a symlink there.
	p.Mounts = append(p.Mounts, compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "src/gen"}, Target: "/gen", Mode: compiler.ReadOnly})
	p.Protected = append(p.Protected, compiler.Protected{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "src/.env"}, Target: "/workspace/.env", Name: ".env*"})
	emitted, err := kubernetes.Pod(p, compiler.Placeholders{}, kubernetes.Options{
		HostPath: true,
		Env:      map[string]kubernetes.EnvSource{"TOKEN": {ConfigMap: true, Name: "cfg", Key: "tok"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := apiObject[corev1.Pod](t, emitted)
	c := pod.Spec.Containers[0]
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	if _, ok := mounts["/run"]; ok {
		t.Errorf("/run masked: runtimes mount /run/.containerenv there")
	}
	for _, d := range []string{"/dev/shm", "/var/tmp"} {
		if m, ok := mounts[d]; !ok || !m.ReadOnly || vols[m.Name].EmptyDir == nil {
			t.Errorf("%s: no read-only mask (%+v)", d, m)
		}
	}
	if m := mounts["/tmp"]; m.ReadOnly || vols[m.Name].EmptyDir == nil || vols[m.Name].EmptyDir.Medium != corev1.StorageMediumMemory ||
		vols[m.Name].EmptyDir.SizeLimit.Value() != 64<<20 {
		t.Errorf("/tmp scratch: %+v %+v", m, vols[m.Name])
	}
	ws, git := mounts["/workspace"], mounts["/workspace/.git"]
	if ws.ReadOnly || git.Name != ws.Name || git.SubPath != ".git" || !git.ReadOnly {
		t.Errorf("protected .git: %+v over %+v", git, ws)
	}
	if g := mounts["/gen"]; g.Name != ws.Name || g.SubPath != "gen" || !g.ReadOnly {
		t.Errorf("nested /gen: %+v, want the /workspace volume at subPath gen, read-only", g)
	}
	if env := mounts["/workspace/.env"]; env.Name != ws.Name || env.SubPath != ".env" || !env.ReadOnly {
		t.Errorf("protected .env: %+v", env)
	}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil && strings.Contains(v.HostPath.Path, "gen") {
			t.Errorf("a hostPath of a source inside a rw mount: %+v", v)
		}
	}
	if hp := vols[ws.Name].HostPath; hp == nil || hp.Path != "${PROJECT_ROOT}/src" || *hp.Type != corev1.HostPathDirectory {
		t.Errorf("/workspace volume: %+v", vols[ws.Name])
	}
	if m := mounts["/cache"]; !m.ReadOnly || m.RecursiveReadOnly == nil || *m.RecursiveReadOnly != corev1.RecursiveReadOnlyEnabled ||
		vols[m.Name].HostPath.Path != "${HOME}/.cache/x" {
		t.Errorf("/cache: %+v %+v", m, vols[m.Name])
	}
	if len(c.Env) != 1 || c.Env[0].ValueFrom.ConfigMapKeyRef == nil || c.Env[0].ValueFrom.ConfigMapKeyRef.Name != "cfg" || c.Env[0].ValueFrom.ConfigMapKeyRef.Key != "tok" {
		t.Errorf("env: %+v", c.Env)
	}
	if l := c.Resources.Limits; l.Memory().Value() != 512<<20 || l.Cpu().MilliValue() != 1500 {
		t.Errorf("limits: %v", l)
	}
	if !slices.Equal(c.Args, p.Command) || len(c.Command) > 0 {
		t.Errorf("command %q args %q: the image's entrypoint must stay, as under docker", c.Command, c.Args)
	}

	ed, err := kubernetes.Deployment(p, compiler.Placeholders{}, kubernetes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := apiObject[appsv1.Deployment](t, ed)
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("deployment: %+v", d.Spec)
	}
}

// TestEnforcement: the table answers every restriction, and refuses
// exactly where Pod refuses.
func TestEnforcement(t *testing.T) {
	p := plan()
	rows := kubernetes.Enforcement(p)
	if len(rows) != len(emit.Restrictions(p)) {
		t.Fatalf("%d rows for %d restrictions", len(rows), len(emit.Restrictions(p)))
	}
	for _, r := range rows {
		if r.Support != emit.Enforced || r.How == "" {
			t.Errorf("%s: %s %q", r.Restriction, r.Support, r.How)
		}
	}
	var b strings.Builder
	if err := emit.PrintTable(&b, kubernetes.Backend, rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
}

// TestClaimName: deterministic, a DNS subdomain, readable where the
// target reads back from it, and distinct for distinct targets.
func TestClaimName(t *testing.T) {
	for target, want := range map[string]string{
		"/workspace":   "s-workspace",
		"/m/a/inner":   "s-m-a-inner",
		"/":            "s-root-8a5edab2",
		"/a-b":         "s-a-b-",
		"/a/b":         "s-a-b",
		"/home/.cache": "s-home-cache-",
	} {
		got := kubernetes.ClaimName("s", target)
		if got != want && !(strings.HasSuffix(want, "-") && strings.HasPrefix(got, want) && len(got) == len(want)+8) {
			t.Errorf("ClaimName(s, %q) = %q, want %q", target, got, want)
		}
		if got != kubernetes.ClaimName("s", target) {
			t.Errorf("ClaimName(s, %q) is not deterministic", target)
		}
	}
	if kubernetes.ClaimName("s", "/a-b") == kubernetes.ClaimName("s", "/a/b") || kubernetes.ClaimName("s", "/A") == kubernetes.ClaimName("s", "/a") {
		t.Error("two targets share a claim")
	}
	long := "/" + strings.Repeat("x/", 200)
	if n := kubernetes.ClaimName("s", long); len(n) > 253 {
		t.Errorf("ClaimName of a long target: %d characters", len(n))
	}
	// The default: every mount a claim, none a hostPath.
	emitted, err := kubernetes.Pod(plan(), compiler.Placeholders{}, kubernetes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pod := apiObject[corev1.Pod](t, emitted)
	var names []string
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("default options: hostPath volume %s", v.Name)
		}
		if v.PersistentVolumeClaim != nil {
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		}
	}
	if !slices.Equal(names, []string{"s-workspace", "s-cache"}) {
		t.Errorf("default claims %q", names)
	}
}

// TestSeedIsTheExample: the seed golden case holds the committed example's
// files (examples/code-index), so the golden manifest is the example's.
func TestSeedIsTheExample(t *testing.T) {
	ar, err := txtar.ParseFile("testdata/code_index_seed.txtar")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, "want/") {
			continue
		}
		ex, err := os.ReadFile(filepath.Join("..", "..", "examples", "code-index", filepath.FromSlash(f.Name)))
		if err != nil || string(ex) != string(f.Data) {
			t.Errorf("%s differs from examples/code-index/%s (%v): copy the example into the case", f.Name, f.Name, err)
		}
		n++
	}
	if n == 0 {
		t.Error("the seed case holds no input")
	}
}

// TestEgressProxyOptions: the proxy workload follows Options: a
// Deployment with Kind, the image ProxyImage names, and a listener on
// every IPv6 address when the Service's address is IPv6; a plan without
// an allowlist has none.
func TestEgressProxyOptions(t *testing.T) {
	p := plan()
	p.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24001, Allow: compiler.MustDestinations("api.example.com:443")}
	const image = "registry.example/mcpolicy@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	obj, err := kubernetes.EgressProxy(p, kubernetes.Options{Kind: kubernetes.KindDeployment, ProxyImage: image, EgressProxyIP: "fd00::10"})
	if err != nil {
		t.Fatal(err)
	}
	ed, ok := obj.(*kube.Deployment)
	if !ok {
		t.Fatalf("%T, want a Deployment", obj)
	}
	d := apiObject[appsv1.Deployment](t, ed)
	c := d.Spec.Template.Spec.Containers[0]
	want := []string{kubernetes.ProxyBinary, "egress-proxy", "--listen", "[::]:24001", "--allow", "api.example.com:443"}
	if c.Image != image || !slices.Equal(c.Command, want) {
		t.Errorf("image %q command %q, want %q %q", c.Image, c.Command, image, want)
	}
	if !selectsLabels(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) || d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("deployment: selector %v, labels %v, restart %s", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels, d.Spec.Template.Spec.RestartPolicy)
	}
	if vs := violations(&d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec); len(vs) > 0 {
		t.Errorf("Pod Security restricted: %q", vs)
	}
	if _, err := kubernetes.EgressProxy(plan(), kubernetes.Options{}); err == nil {
		t.Error("an egress proxy for a plan without an allowlist")
	}
}

// TestNestedWritableRefused: a read-write mount inside a read-write mount
// would be the outer volume at a writable subPath, which the server can
// point at ../.git by a symlink before the next start (the escape suite's
// k8s-symlink-inside-volume): refused at its position. Read-only nested
// is emitted, as a read-only subPath.
func TestNestedWritableRefused(t *testing.T) {
	p := plan()
	p.Mounts = append(p.Mounts, compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "src/gen"}, Target: "/gen", Mode: compiler.ReadWrite})
	var ne *emit.NotEnforceableError
	if err := kubernetes.Check(p); !errors.As(err, &ne) || !strings.Contains(ne.Restriction, "/gen") || !strings.Contains(ne.Restriction, "/workspace") {
		t.Fatalf("a read-write /gen inside the read-write /workspace: %v, want it refused", err)
	}
	p.Mounts[len(p.Mounts)-1].Mode = compiler.ReadOnly
	emitted, err := kubernetes.Pod(p, compiler.Placeholders{}, kubernetes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pod := apiObject[corev1.Pod](t, emitted)
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.MountPath == "/gen" && (!m.ReadOnly || m.SubPath != "gen") {
			t.Errorf("read-only /gen: %+v, want the outer volume at a read-only subPath", m)
		}
	}
}

// unhardened reports (and fails the test with) the first of the
// hardening every emitted Pod carries that s lacks: no host namespace, a
// user namespace of its own (unless the plan accepts the node's), no
// service account token, no service links, and its one container with a
// read-only root, unprivileged, every capability dropped.
func unhardened(t *testing.T, p *compiler.Plan, name string, s corev1.PodSpec) bool {
	t.Helper()
	sc := s.Containers[0].SecurityContext
	switch {
	case s.HostNetwork || s.HostPID || s.HostIPC:
		t.Errorf("%s: host namespaces", name)
	case p.Accepts(kubernetes.AcceptHostUsers) != (s.HostUsers == nil) || s.HostUsers != nil && *s.HostUsers:
		t.Errorf("%s: hostUsers %v, accepted %s: %v", name, s.HostUsers, kubernetes.AcceptHostUsers, p.Accepts(kubernetes.AcceptHostUsers))
	case s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken:
		t.Errorf("%s: service account token mounted", name)
	case s.EnableServiceLinks == nil || *s.EnableServiceLinks:
		t.Errorf("%s: service links", name)
	case sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s: root filesystem writable", name)
	case sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s: privileged or privilege escalation", name)
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("%s: capabilities %+v", name, sc.Capabilities)
	default:
		return false
	}
	return true
}

// TestHostUsersAccepted: every Pod has a user namespace of its own
// (hostUsers: false) unless the policy accepts kubernetes-host-users: then
// neither Pod says it, the user row is partial (and passes Check), and the
// header does not promise it.
func TestHostUsersAccepted(t *testing.T) {
	p := plan()
	p.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24001, Allow: compiler.MustDestinations("api.example.com:443")}
	for _, accept := range []bool{false, true} {
		if accept {
			p.Accept = []compiler.Accepted{{Name: kubernetes.AcceptHostUsers}}
		}
		data, err := kubernetes.Manifest(p, compiler.Placeholders{}, kubernetes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeStrict(data)
		if err != nil {
			t.Fatal(err)
		}
		for name, tpl := range podTemplates(objs) {
			if hu := tpl.Spec.HostUsers; accept != (hu == nil) || hu != nil && *hu {
				t.Errorf("accepted %v: %s: hostUsers %v", accept, name, hu)
			}
		}
		if strings.Contains(string(data), "user namespace of its own") == accept {
			t.Errorf("accepted %v: the header says a user namespace of its own: %v", accept, !accept)
		}
		for _, r := range kubernetes.Enforcement(p) {
			if r.Restriction == emit.User && (r.Support == emit.Partial) != accept {
				t.Errorf("accepted %v: user row %s %q", accept, r.Support, r.How)
			}
		}
		if err := kubernetes.Check(p); err != nil {
			t.Errorf("accepted %v: %v", accept, err)
		}
	}
}
