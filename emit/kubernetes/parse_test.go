package kubernetes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
)

// wideDeployment is testdata/wide_deployment.yaml: a hand-written
// Deployment with every widening the reader must flag, each on a line of
// its own. clientcfg's TestLintManifest lints the same file as lint
// --manifest does.
func wideDeployment(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/wide_deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadHandWrittenDeployment: the reader flags each widening of a
// hand-written Deployment at the line and column of the field that says
// it (or of the container, for a field left out), and grants the plan its
// hostPath mounts; the backend's own manifest, read back, is the plan's
// confinement with no flag.
func TestReadHandWrittenDeployment(t *testing.T) {
	secret := func(name, value string) bool {
		return strings.HasSuffix(name, "TOKEN") && !strings.HasPrefix(value, "$")
	}
	ts, err := kubernetes.ParseManifest("deployment.yaml", wideDeployment(t), secret)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Server != "Deployment/wide" || ts[0].Plan == nil || ts[0].Plan.Image != "img:1" {
		t.Fatalf("targets: %+v", ts)
	}
	var got []string
	for _, f := range ts[0].Flags {
		got = append(got, fmt.Sprintf("%s %d:%d", f.Kind, f.Pos.Line, f.Pos.Col))
		if f.Pos.File != "deployment.yaml" || f.Pos.Line == 0 {
			t.Errorf("flag without a position: %+v", f)
		}
	}
	for _, want := range []string{
		"k8s-host-namespace 12:20", // hostNetwork: true
		"k8s-host-namespace 13:16", // hostPID: true
		"k8s-privileged 18:23",     // privileged: true
		"k8s-escalation 19:37",     // allowPrivilegeEscalation: true
		"k8s-capabilities 15:9",    // no drop ALL: at the container
		"k8s-capabilities 21:19",   // add: [SYS_ADMIN]
		"k8s-writable-root 15:9",   // no readOnlyRootFilesystem: the container
		"k8s-root 15:9",            // no runAsNonRoot: the container
		"k8s-secret-value 24:18",   // value: ghp_...
		"k8s-hostpath 32:26",       // hostPath of /home/alice
		"k8s-hostpath 35:17",       // hostPath of /root/.aws
		"k8s-hostpath-write 26:11", // the home mount, read-write
		"network 12:20",            // hostNetwork
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no flag %s; got:\n%s", want, strings.Join(got, "\n"))
		}
	}
	var mounts []string
	for _, m := range ts[0].Plan.Mounts {
		mounts = append(mounts, fmt.Sprintf("%s %s", m.Source, m.Mode))
	}
	for _, want := range []string{"/home/alice rw", "/root/.aws ro"} {
		if !slices.Contains(mounts, want) {
			t.Errorf("no mount %s; got:\n%s", want, strings.Join(mounts, "\n"))
		}
	}

	// The backend's own manifest, read back: the plan's confinement, no flag.
	p := plan()
	data, err := kubernetes.Manifest(p, compiler.Placeholders{}, kubernetes.Options{Kind: kubernetes.KindDeployment})
	if err != nil {
		t.Fatal(err)
	}
	ts, err = kubernetes.ParseManifest("s.yaml", data, secret)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 {
		t.Fatalf("%d targets from the emitted manifest", len(ts))
	}
	if pl := ts[0].Plan; pl.Network.Mode != "none" || !pl.Subtractions.ReadOnlyRoot || !pl.Subtractions.DropAllCaps ||
		!pl.Subtractions.NoNewPrivileges || !pl.Subtractions.NonRootUser || pl.User.UID != 1000 ||
		!slices.Equal(pl.EnvNames(), p.EnvNames()) || grantCounts(pl) != grantCounts(p) {
		t.Errorf("the emitted manifest read back: %+v, %s (the plan's: %s)", pl, grantCounts(pl), grantCounts(p))
	}
	for _, f := range ts[0].Flags {
		t.Errorf("the emitted manifest is flagged: %s %s", f.Kind, f.Value)
	}
}

// grantCounts is the plan's grants by kind, as lint counts them, but for
// what a manifest cannot say: unprotected names, accepted degradations, and
// the invoking user another backend of the plan (seatbelt) runs it as (a
// plan for the invoking user itself is refused by this backend).
func grantCounts(p *compiler.Plan) string {
	count := map[compiler.GrantKind]int{}
	for _, g := range p.Grants() {
		if g.Kind != compiler.GrantUnprotect && g.Kind != compiler.GrantDegrade && g.Kind != compiler.GrantInvoker {
			count[g.Kind]++
		}
	}
	if len(count) == 0 {
		return "0 grants"
	}
	var parts []string
	for k, n := range count {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// TestOwnManifestCounts: each manifest the backend emits, read back as
// lint --manifest reads it, counts the plan's grants, kind by kind (issue
// #39: the egress proxy's variables were counted as env grants, claims as
// nothing): the golden plans as emitted, as Deployments, with hostPath
// opted in and with an allowlist; the server's Pod has no flag but the
// network for an allowlist and its hostPath volumes when opted in, the
// egress proxy's none but the network, and counts no grant. (clientcfg's
// TestLintOwnManifests lints them.)
func TestOwnManifestCounts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	allow := plan()
	allow.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24001,
		Allow: compiler.MustDestinations("api.example.com:443", "*.example.org:443", "10.0.0.5:5432")}
	plans := []*compiler.Plan{plan(), allow}
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ps, _, _ := compileArchive(t, ar)
		plans = append(plans, ps...)
	}
	n := 0
	for _, p := range plans {
		for _, o := range []kubernetes.Options{{}, {Kind: kubernetes.KindDeployment}, {HostPath: true}} {
			data, err := kubernetes.Manifest(p, compiler.Placeholders{}, o)
			if err != nil {
				continue // a refused plan
			}
			n++
			what := fmt.Sprintf("%s %+v", p.Server, o)
			ts, err := kubernetes.ParseManifest("m.yaml", data, func(string, string) bool { return false })
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range ts {
				proxy := strings.HasSuffix(tg.Server, "-egress-proxy")
				want := grantCounts(p)
				if proxy {
					want = "0 grants"
				}
				if got := grantCounts(tg.Plan); got != want {
					t.Errorf("%s: %s read back: %s, want %s", what, tg.Server, got, want)
				}
				for _, f := range tg.Flags {
					switch {
					case f.Kind == readback.FlagNetwork && (proxy || p.Network.Mode == "allowlist"):
					case (f.Kind == readback.FlagK8sHostPath || f.Kind == readback.FlagK8sHostPathWrite) && o.HostPath && !proxy:
					default:
						t.Errorf("%s: %s read back: %s %s", what, tg.Server, f.Kind, f.Value)
					}
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d manifests read back", n)
	}
}

// TestEgressReadAsACNI: NetworkPolicies add up. A deny-all policy beside
// one that allows egress leaves the Pod on the network (it was read as
// none); a policy that cannot be read here (matchExpressions) denies
// nothing; egress only to a Pod that is no egress proxy is open.
func TestEgressReadAsACNI(t *testing.T) {
	const pod = `apiVersion: v1
kind: Pod
metadata: {name: s, labels: {app: s}}
spec:
  containers:
  - name: s
    image: img:1
`
	const denyAll = `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny}
spec: {podSelector: {matchLabels: {app: s}}, policyTypes: [Ingress, Egress]}
`
	const allowAll = `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: out}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress: [{to: [{ipBlock: {cidr: 0.0.0.0/0}}]}]
`
	const denyByExpression = `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny}
spec: {podSelector: {matchExpressions: [{key: app, operator: In, values: [s]}]}, policyTypes: [Egress]}
`
	const toOther = `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: to-db}
spec:
  podSelector: {matchLabels: {app: s}}
  policyTypes: [Egress]
  egress: [{to: [{podSelector: {matchLabels: {app: db}}}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: db, labels: {app: db}}
spec: {containers: [{name: db, image: "db:1", command: [/bin/db]}]}
`
	for _, c := range []struct {
		name, file, want string
	}{
		{"deny-all", pod + denyAll, "none"},
		{"deny-all and allow", pod + denyAll + allowAll, "open"},
		{"deny by expression", pod + denyByExpression, "open"},
		{"to a Pod that is no proxy", pod + toOther, "open"},
		{"none", pod, "open"},
	} {
		ts, err := kubernetes.ParseManifest("m.yaml", []byte(c.file), func(string, string) bool { return false })
		if err != nil {
			t.Fatal(err)
		}
		got := "open"
		if ts[0].Plan.Network.Mode == "none" {
			got = "none"
		}
		open := slices.ContainsFunc(ts[0].Flags, func(f readback.Flag) bool { return f.Kind == readback.FlagNetwork })
		if got != c.want || open != (c.want == "open") {
			t.Errorf("%s: network %q (flagged %v), want %s", c.name, ts[0].Plan.Network.Mode, open, c.want)
		}
	}
}
