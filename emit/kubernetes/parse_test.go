package kubernetes_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
)

// wideDeployment is a hand-written Deployment with every widening lint
// must catch, each on a line of its own (the comments say which).
const wideDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: wide
spec:
  selector:
    matchLabels: {app: wide}
  template:
    metadata:
      labels: {app: wide}
    spec:
      hostNetwork: true
      hostPID: true
      containers:
      - name: server
        image: img:1
        securityContext:
          privileged: true
          allowPrivilegeEscalation: true
          capabilities:
            add: [SYS_ADMIN]
        env:
        - name: GITHUB_TOKEN
          value: ghp_0123456789abcdefghijklmnopqrstuvwxyzAB
        volumeMounts:
        - {name: home, mountPath: /home/me}
        - name: aws
          mountPath: /aws
          readOnly: true
      volumes:
      - name: home
        hostPath: {path: /home/alice}
      - name: aws
        hostPath:
          path: /root/.aws
`

// TestLintHandWrittenDeployment: lint catches each widening of a
// hand-written Deployment, at the line and column of the field that says
// it (or of the container, for a field left out).
func TestLintHandWrittenDeployment(t *testing.T) {
	secret := func(name, value string) bool {
		return strings.HasSuffix(name, "TOKEN") && !strings.HasPrefix(value, "$")
	}
	ts, err := kubernetes.ParseManifest("deployment.yaml", []byte(wideDeployment), secret)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Server != "Deployment/wide" || ts[0].Plan == nil || ts[0].Plan.Image != "img:1" {
		t.Fatalf("targets: %+v", ts)
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

	// The backend's own manifest, read back: none of these findings.
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
		!pl.Subtractions.NoNewPrivileges || !pl.Subtractions.NonRootUser || pl.User.UID != 1000 || len(pl.Mounts) != 0 ||
		!slices.Equal(pl.EnvNames(), p.EnvNames()) {
		t.Errorf("the emitted manifest read back: %+v", pl)
	}
	for _, f := range lint.Run(ts, lint.Options{}).Findings {
		if strings.HasPrefix(f.Rule, "K8S_") || strings.HasPrefix(f.Rule, "MOUNT_") || strings.HasPrefix(f.Rule, "NETWORK_") {
			t.Errorf("the emitted manifest is flagged: %s %s", f.Rule, f.Message)
		}
	}
}
