package kubernetes_test

import (
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
)

// TestCredentialObjectsBounded: a trust bundle (this machine's roots)
// past what a cluster stores in a ConfigMap is refused when drawn, not
// printed for kubectl apply to refuse; one within it is printed.
func TestCredentialObjectsBounded(t *testing.T) {
	plans, _, _ := compileArchive(t, txtar.Parse([]byte(`-- mcpolicy.cue --
version: "v1"
servers: gh: {
	image: "ghcr.io/x/gh:1"
	backends: ["kubernetes"]
	accept: ["kubernetes-host-users"]
	network: allow: ["api.github.com:443"]
	credentials: GITHUB_TOKEN: to: ["api.github.com:443"]
}
`)))
	d := kubernetes.Drawn{
		Values:       map[string]string{"GITHUB_TOKEN": "ghp_R3alT0kenValue0123456789abcdefABCD"},
		Placeholders: map[string]string{"GITHUB_TOKEN": "ghp_Pl4ceh0lderXyz9876543210zyxwvuZYXW"},
		CACert:       []byte("-----BEGIN CERTIFICATE-----\n"), CAKey: []byte("k"),
		Bundle: []byte(strings.Repeat("x", 900<<10)),
	}
	if _, err := kubernetes.CredentialObjects(plans[0], kubernetes.Options{}, d); err != nil {
		t.Fatalf("a bundle of 900 KiB: %v", err)
	}
	d.Bundle = []byte(strings.Repeat("x", 1<<20))
	if _, err := kubernetes.CredentialObjects(plans[0], kubernetes.Options{}, d); err == nil || !strings.Contains(err.Error(), "ConfigMap gh-session-ca would hold") {
		t.Errorf("a bundle of 1 MiB: %v", err)
	}
}
