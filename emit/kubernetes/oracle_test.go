package kubernetes_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
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
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes/internal/kube"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// The manifests are written from internal/kube, a projection of the
// k8s.io/api types; these tests hold it to the real types, which stay the
// source of truth (test dependencies only).

// apiObject converts a projection object into the real type T through
// JSON and the API machinery's strict decoder (case-sensitive, unlike
// encoding/json: a field the API spells otherwise is unknown).
func apiObject[T any](t testing.TB, obj any) *T {
	t.Helper()
	j, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if _, _, err := strict.Decode(j, nil, any(out).(runtime.Object)); err != nil {
		t.Fatalf("%T into %T: %v\n%s", obj, out, err, j)
	}
	return out
}

// renderedDocs splits a manifest into the header and each object's
// rendering, byte for byte as Manifest wrote them.
func renderedDocs(data []byte) []string {
	parts := strings.Split(string(data), "\n---\n")
	if len(parts) < 2 {
		return nil
	}
	docs := parts[1:]
	for i := range docs[:len(docs)-1] {
		docs[i] += "\n" // the separator took it
	}
	return docs
}

// sameAsAPI decodes every object of the manifest strictly into its real
// k8s.io/api type (an unknown, misnamed or duplicate field fails), renders
// that through the same render, and wants the same bytes: a field the
// projection writes with another type, format (a quantity not in
// canonical form) or omitempty rule than the API's reads back different.
func sameAsAPI(t testing.TB, what string, data []byte) {
	t.Helper()
	docs := renderedDocs(data)
	if len(docs) == 0 {
		t.Fatalf("%s: no object", what)
	}
	for i, doc := range docs {
		obj, _, err := strict.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Errorf("%s: document %d: strict decoding: %v", what, i, err)
			continue
		}
		switch obj.(type) {
		case *corev1.Pod, *appsv1.Deployment, *networkingv1.NetworkPolicy, *corev1.Service, *corev1.Secret, *corev1.ConfigMap:
		default:
			t.Fatalf("%s: document %d: %T, not a kind the emitter writes", what, i, obj)
		}
		again, err := kubernetes.Render(obj)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != doc {
			t.Errorf("%s: document %d: the real %T renders otherwise:\n%s", what, i, obj,
				diff.Diff("projection", []byte(doc), "k8s.io/api", again))
		}
	}
}

// TestCommittedManifestsAreAPI: every manifest committed as a golden
// (this package's and the CLI's) reads back identical through the real
// types.
func TestCommittedManifestsAreAPI(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := filepath.Glob("../../golden/testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range append(files, cli...) {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range ar.Files {
			inPackage := strings.HasPrefix(file.Name, "want/") && !strings.Contains(file.Name, "/out/")
			inCLI := strings.HasPrefix(file.Name, "want/out/kubernetes/")
			if strings.HasSuffix(file.Name, ".yaml") && (inPackage || inCLI) {
				sameAsAPI(t, f+": "+file.Name, file.Data)
				n++
			}
		}
	}
	if n < 5 {
		t.Errorf("%d committed manifests checked: the goldens moved?", n)
	}
	t.Logf("%d committed manifests", n)
}

// TestEveryShapeIsAPI renders plans that set every field the emitter can
// write (limits, scratch, masks, claims, hostPath, subPaths, ConfigMap
// and Secret env, namespace, DNS options, IPv4 and IPv6 proxies, both
// kinds), holds each to the real types, and checks that every field of
// the projection was among them.
func TestEveryShapeIsAPI(t *testing.T) {
	full := func() *compiler.Plan {
		p := plan()
		p.Subtractions.MemoryBytes = 512 << 20
		p.Subtractions.MilliCPUs = 1500
		p.Command = []string{"/bin/server", "--stdio"}
		p.Workdir = "/workspace"
		p.Mounts = append(p.Mounts, compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "src/gen"}, Target: "/gen", Mode: compiler.ReadOnly})
		p.Protected = append(p.Protected, compiler.Protected{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "src/.env"}, Target: "/workspace/.env", Name: ".env*"})
		p.Env = append(p.Env, compiler.EnvGrant{Name: "CFG"})
		return p
	}
	allow := func(p *compiler.Plan) *compiler.Plan {
		p.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24001, Allow: compiler.MustDestinations("api.example.com:443", "*.example.org:8443")}
		return p
	}
	scratch := func(size int64) func() *compiler.Plan {
		return func() *compiler.Plan {
			p := full()
			p.Scratch.SizeBytes = size
			p.Subtractions.MemoryBytes = size + 1
			p.Subtractions.MilliCPUs = size%100000 + 1
			return p
		}
	}
	plans := map[string]func() *compiler.Plan{
		"base":      plan,
		"full":      full,
		"allowlist": func() *compiler.Plan { return allow(full()) },
		"credentials": func() *compiler.Plan {
			p := allow(full())
			p.Credentials = []credential.Grant{
				{Name: "GITHUB_TOKEN", To: []string{"api.example.com:443"}, As: credential.Injection{Header: "Authorization", Format: "Bearer {}"}},
				{Name: "MAPS_KEY", To: []string{"api.example.com:443"}, As: credential.Injection{Query: "key"}},
			}
			return p
		},
		"minimal": func() *compiler.Plan {
			return &compiler.Plan{Server: "m", Image: "i", User: compiler.User{UID: 1, GID: 2}, Network: compiler.Network{Mode: "none"}}
		},
		"scratch 1000": scratch(1000),
		"scratch 1536": scratch(1536),
		"scratch 1Gi":  scratch(1 << 30),
	}
	opts := map[string]kubernetes.Options{
		"default": {},
		"deployment": {Kind: kubernetes.KindDeployment, Namespace: "tools",
			Env: map[string]kubernetes.EnvSource{"TOKEN": {Name: "sec", Key: "tok"}}},
		"hostPath": {HostPath: true, Env: map[string]kubernetes.EnvSource{"TOKEN": {ConfigMap: true, Name: "cfg", Key: "tok"}}},
		"deployment, hostPath": {Kind: kubernetes.KindDeployment, HostPath: true,
			Env: map[string]kubernetes.EnvSource{"TOKEN": {ConfigMap: true, Name: "cfg", Key: "tok"}}},
		"claims": {Claims: map[string]string{"/workspace": "ws", "/cache": "cache"}},
		"proxy v6": {Kind: kubernetes.KindDeployment, EgressProxyIP: "fd00::10", ProxyImage: "registry.example/mcpolicy:1",
			DNSNamespace: "dns", DNSLabels: map[string]string{"example.com/app": "dns"}},
		"proxy v4": {EgressProxyIP: "10.96.0.10", Namespace: "tools"},
	}
	written := map[string]bool{}
	for pn, p := range plans {
		for on, o := range opts {
			pl := p()
			if o.Env != nil && !slices.Contains(pl.EnvNames(), "TOKEN") || o.Claims != nil && len(pl.Mounts) == 0 {
				continue // options for grants the plan does not hold
			}
			data, err := kubernetes.Manifest(pl, compiler.Placeholders{}, o)
			if err != nil {
				t.Fatalf("%s, %s: %v", pn, on, err)
			}
			sameAsAPI(t, fmt.Sprintf("%s, %s", pn, on), data)
			if len(pl.Credentials) > 0 {
				d := kubernetes.Drawn{CACert: []byte("cert"), CAKey: []byte("key"), Bundle: []byte("bundle"),
					Values:       map[string]string{"GITHUB_TOKEN": "ghp_" + strings.Repeat("a", 36), "MAPS_KEY": strings.Repeat("b", 39)},
					Placeholders: map[string]string{"GITHUB_TOKEN": "ghp_" + strings.Repeat("c", 36), "MAPS_KEY": strings.Repeat("d", 39)}}
				creds, err := kubernetes.CredentialManifest(pl, o, d)
				if err != nil {
					t.Fatalf("%s, %s: %v", pn, on, err)
				}
				sameAsAPI(t, fmt.Sprintf("%s, %s: credentials", pn, on), creds)
				data = append(data, creds...)
			}
			for _, doc := range renderedDocs(data) {
				var m map[string]any
				if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
					t.Fatal(err)
				}
				keyPaths(m["kind"].(string), m, written)
			}
		}
	}
	// Every field of the projection is written by some shape above, and so
	// round-tripped, but those the emitter leaves zero there (the API
	// omits them too; the reflection test covers their types): host
	// namespaces and tty are false, a Pod template has no name or
	// namespace of its own, ingress comes from the server's Pod alone.
	zero := map[string]bool{
		"Deployment.spec.template.metadata.name":                        true,
		"Deployment.spec.template.metadata.namespace":                   true,
		"NetworkPolicy.spec.ingress.from.namespaceSelector.matchLabels": true,
		"NetworkPolicy.spec.ingress.from.ipBlock.cidr":                  true,
		"NetworkPolicy.spec.ingress.from.ipBlock.except":                true,
	}
	for _, f := range []string{"spec.hostNetwork", "spec.hostPID", "spec.hostIPC", "spec.containers.tty"} {
		zero["Pod."+f] = true
		zero["Deployment.spec.template."+f] = true
	}
	for _, root := range []any{kube.Pod{}, kube.Deployment{}, kube.NetworkPolicy{}, kube.Service{}, kube.Secret{}, kube.ConfigMap{}} {
		rt := reflect.TypeOf(root)
		for _, f := range fieldPaths(rt.Name(), rt) {
			if !written[f] && !zero[f] {
				t.Errorf("%s: written by no shape of this test, so never held to the API", f)
			}
			if written[f] && zero[f] {
				t.Errorf("%s: written now, drop it from the zero list", f)
			}
		}
	}
}

// keyPaths collects the dotted key paths of a decoded document (lists
// are transparent).
func keyPaths(prefix string, v any, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			out[prefix+"."+k] = true
			keyPaths(prefix+"."+k, e, out)
		}
	case []any:
		for _, e := range v {
			keyPaths(prefix, e, out)
		}
	}
}

// fieldPaths are the dotted JSON paths of t's leaf fields, through
// pointers, slices and embedded structs; a map is a leaf.
func fieldPaths(prefix string, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return []string{prefix}
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			out = append(out, fieldPaths(prefix, f.Type)...)
			continue
		}
		out = append(out, fieldPaths(prefix+"."+name, f.Type)...)
	}
	return out
}

// TestOracleCatches: the check refuses a manifest whose field the API
// names otherwise, or writes where the API would omit it.
func TestOracleCatches(t *testing.T) {
	data, err := kubernetes.Manifest(plan(), compiler.Placeholders{}, kubernetes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string][2]string{
		"misnamed": {"    readOnlyRootFilesystem: true\n", "    readOnlyRootFileSystem: true\n"},
		"zero":     {"  enableServiceLinks: false\n", "  enableServiceLinks: false\n  hostNetwork: false\n"},
		"quantity": {"sizeLimit: 64Mi\n", "sizeLimit: 65536Ki\n"},
	} {
		bad := strings.Replace(string(data), edit[0], edit[1], 1)
		if bad == string(data) {
			t.Fatalf("%s: %q not in the manifest", name, edit[0])
		}
		ft := &fakeT{}
		sameAsAPIOn(ft, bad)
		if !ft.failed {
			t.Errorf("%s: not caught", name)
		}
	}
}

// fakeT records a failure without failing the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true; panic(f) }
func (f *fakeT) Fatal(...any)          { f.failed = true; panic(f) }

func sameAsAPIOn(ft *fakeT, data string) {
	defer func() {
		if r := recover(); r != nil && r != ft {
			panic(r)
		}
	}()
	sameAsAPI(ft, "edited", []byte(data))
}
