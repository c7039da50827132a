package kubernetes_test

import (
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/project"
)

// TestCheckAcross: servers whose object names meet (a server named after
// another's proxy Pod, one whose proxy NetworkPolicy is another's server
// NetworkPolicy, two mounts named to one claim) are refused, each at its
// server with the other named; servers whose names do not meet are not.
func TestCheckAcross(t *testing.T) {
	const server = `image: "x:1", backends: ["kubernetes"], accept: ["kubernetes-host-users"]`
	plans, _, _ := compileArchive(t, txtar.Parse([]byte(`-- mcpolicy.cue --
version: "v1"
servers: {
	a: {`+server+`, network: allow: ["api.github.com:443"], mounts: [{source: "ws", target: "/b/workspace"}]
		credentials: GITHUB_TOKEN: to: ["api.github.com:443"]}
	"a-to": {`+server+`, network: allow: ["api.github.com:443"]}
	"a-b": {`+server+`, mounts: [{source: "ws", target: "/workspace"}]}
	"a-egress-proxy": {`+server+`}
	"a-credentials": {`+server+`, network: allow: ["api.github.com:443"], credentials: GITHUB_TOKEN: to: ["api.github.com:443"]}
	b: {`+server+`, network: allow: ["api.github.com:443"], mounts: [{source: "ws", target: "/workspace"}]}
}
-- ws/f --
`)))
	err := kubernetes.CheckAcross(plans)
	if err == nil {
		t.Fatal("no refusal")
	}
	got := err.Error()
	for _, want := range []string{
		`mcpolicy.cue:5:2: servers."a-to": a manifest that makes NetworkPolicy a-to-egress-proxy, which server "a" (`,
		`mcpolicy.cue:6:2: servers."a-b": a manifest that reads PersistentVolumeClaim a-b-workspace, which server "a" (`,
		`mcpolicy.cue:7:2: servers."a-egress-proxy": a manifest that makes Pod a-egress-proxy, which server "a" (`,
		`mcpolicy.cue:3:2) makes too (applied in one namespace`,
		"hint: rename one of the servers",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "hint:"); n != 3 {
		t.Errorf("%d refusals, want 3 (a-credentials and b meet no other):\n%s", n, got)
	}
	var apart []*compiler.Plan
	for _, p := range plans {
		if p.Server == "a" || p.Server == "b" || p.Server == "a-credentials" {
			apart = append(apart, p)
		}
	}
	if err := kubernetes.CheckAcross(apart); err != nil {
		t.Errorf("servers whose names do not meet: %v", err)
	}
	// build refuses them too.
	if _, err := project.Artefacts(plans); err == nil || !strings.Contains(err.Error(), "makes Pod a-egress-proxy") {
		t.Errorf("build: %v", err)
	}
}
