package clientcfg_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/project"
)

// wideDeployment is the kubernetes reader's hand-written Deployment
// with every widening lint must catch, each on a line of its own.
func wideDeployment(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../emit/kubernetes/testdata/wide_deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLintManifest: lint --manifest catches each widening of a
// hand-written Deployment, at the line and column of the field that says
// it (or of the container, for a field left out); the kubernetes
// backend's own manifest raises none of them.
func TestLintManifest(t *testing.T) {
	ts, err := clientcfg.ReadManifest("deployment.yaml", wideDeployment(t))
	if err != nil {
		t.Fatal(err)
	}
	rep := lint.Run(ts, lint.Options{})
	var got []string
	for _, f := range rep.Findings {
		got = append(got, fmt.Sprintf("%s %d:%d", f.Rule, f.Pos.Line, f.Pos.Col))
	}
	for _, want := range []string{
		"K8S_HOST_NAMESPACE 12:20",       // hostNetwork: true
		"K8S_HOST_NAMESPACE 13:16",       // hostPID: true
		"K8S_PRIVILEGED 18:23",           // privileged: true
		"K8S_PRIVILEGE_ESCALATION 19:37", // allowPrivilegeEscalation: true
		"K8S_CAPABILITIES 15:9",          // no drop ALL: at the container
		"K8S_CAPABILITIES 21:19",         // add: [SYS_ADMIN]
		"K8S_WRITABLE_ROOT 15:9",         // no readOnlyRootFilesystem: the container
		"K8S_RUN_AS_ROOT 15:9",           // no runAsNonRoot: the container
		"K8S_SECRET_VALUE 24:18",         // value: ghp_...
		"K8S_HOSTPATH 32:26",             // hostPath of /home/alice
		"K8S_HOSTPATH 35:17",             // hostPath of /root/.aws
		"K8S_HOSTPATH_WRITABLE 26:11",    // the home mount, read-write
		"MOUNT_HOME 32:26",               // /home/alice is a home folder
		"MOUNT_CREDENTIALS 35:17",        // /root/.aws is a credential store
		"MOUNT_CREDENTIALS 32:26",        // a home holds them all
		"NETWORK_HOST 12:20",             // hostNetwork
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no finding %s; got:\n%s", want, strings.Join(got, "\n"))
		}
	}
	for _, f := range rep.Findings {
		if f.Pos.File != "deployment.yaml" || f.Pos.Line == 0 {
			t.Errorf("finding without a position: %+v", f)
		}
	}

	data, err := kubernetes.Manifest(manifestPlan(), compiler.Placeholders{}, kubernetes.Options{Kind: kubernetes.KindDeployment})
	if err != nil {
		t.Fatal(err)
	}
	ts, err = clientcfg.ReadManifest("s.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range lint.Run(ts, lint.Options{}).Findings {
		if strings.HasPrefix(f.Rule, "K8S_") || strings.HasPrefix(f.Rule, "MOUNT_") || strings.HasPrefix(f.Rule, "NETWORK_") {
			t.Errorf("the emitted manifest is flagged: %s %s", f.Rule, f.Message)
		}
	}
}

// manifestPlan is a plan the kubernetes backend builds: a project
// mount, a home one read-only, a protected name, scratch and a variable.
func manifestPlan() *compiler.Plan {
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

// TestLintOwnManifests: each manifest the kubernetes backend emits, linted
// as lint --manifest lints it (the backend's golden plans as emitted, as
// Deployments, with hostPath opted in and with an allowlist): the server's
// Pod raises no finding the policy does not (NETWORK_OPEN for an
// allowlist, BIND_RW and K8S_HOSTPATH* for an opted-in hostPath), the
// egress proxy's none but NETWORK_OPEN. (emit/kubernetes's
// TestOwnManifestCounts counts their grants.)
func TestLintOwnManifests(t *testing.T) {
	files, err := filepath.Glob("../emit/kubernetes/testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("the kubernetes backend's golden cases: %v %v", files, err)
	}
	allow := manifestPlan()
	allow.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24001,
		Allow: compiler.MustDestinations("api.example.com:443", "*.example.org:443", "10.0.0.5:5432")}
	plans := []*compiler.Plan{manifestPlan(), allow}
	for _, f := range files {
		plans = append(plans, compileCase(t, f)...)
	}
	n := 0
	for _, p := range plans {
		for _, o := range []kubernetes.Options{{}, {Kind: kubernetes.KindDeployment}, {HostPath: true}} {
			data, err := kubernetes.Manifest(p, compiler.Placeholders{}, o)
			if err != nil {
				continue // a refused plan
			}
			n++
			ts, err := clientcfg.ReadManifest("m.yaml", data)
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range ts {
				proxy := strings.HasSuffix(tg.Server, "-egress-proxy")
				for _, f := range lint.Run([]*readback.Target{tg}, lint.Options{}).Findings {
					switch {
					case f.Rule == "NETWORK_OPEN" && (proxy || p.Network.Mode == "allowlist"):
					case f.Rule == "BIND_RW" && o.HostPath && !proxy:
					case strings.HasPrefix(f.Rule, "EGRESS_") || strings.HasPrefix(f.Rule, "IMAGE_") || f.Rule == "GRANT_COUNT":
						// as the policy's own lint says
					case strings.HasPrefix(f.Rule, "K8S_HOSTPATH") && o.HostPath && !proxy:
					default:
						t.Errorf("%s %+v: %s read back: %s %s", p.Server, o, tg.Server, f.Rule, f.Message)
					}
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d manifests linted", n)
	}
}

// compileCase compiles the policy of one of the kubernetes backend's
// golden cases: its files (home/ in a home folder of its own; options.json
// and want/ are the backend's) in a project of their own.
func compileCase(t *testing.T, file string) []*compiler.Plan {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	root, home := t.TempDir(), t.TempDir()
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, "want/") || f.Name == "options.json" {
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
	plans, err := proj.Compile(home)
	if err != nil {
		t.Fatal(err)
	}
	return plans
}
