package registry

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/schema"
)

// TestCredentialsBackends: a plan with a credential builds for every
// backend whose egress mcpolicy run supervises (bwrap, docker, podman)
// and for kubernetes (its egress-proxy Pod injects), and is refused, at
// the credential, by seatbelt, which has no way yet to keep the value out
// of the sandbox; landlock refuses the allowlist itself.
func TestCredentialsBackends(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "mcpolicy.cue")
	src := `version: "v1"
servers: gh: {
	image: "ghcr.io/x/gh:1"
	command: ["/usr/bin/gh-mcp"]
	backends: ["bwrap", "docker", "kubernetes", "landlock", "podman", "seatbelt"]
	accept: ["landlock-tcp-only", "kubernetes-host-users"]
	network: allow: ["api.github.com:443"]
	credentials: GITHUB_TOKEN: to: ["api.github.com:443"]
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := schema.Load(file, root)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := compiler.Compile([]*schema.Policy{pol}, compiler.Options{Root: root, Home: root, NoFS: true})
	if err != nil {
		t.Fatal(err)
	}
	p := plans[0]
	for _, b := range All() {
		// The table lint reads agrees with each backend's row.
		rows := b.Enforcement(p)
		row := rows[slices.IndexFunc(rows, func(r emit.Row) bool { return r.Restriction == emit.Credentials })]
		if (row.Support == emit.Enforced) != backendtraits.InjectsCredentials(b.Name()) {
			t.Errorf("%s: credentials %s, the table says it injects: %v", b.Name(), row.Support, backendtraits.InjectsCredentials(b.Name()))
		}
		err := b.Check(p)
		switch b.Name() {
		case "landlock":
			// No egress path at all: the allowlist a credential needs is refused first.
			if err == nil || !strings.Contains(err.Error(), "egress allowlist") {
				t.Errorf("landlock: %v; want the allowlist refused", err)
			}
			rows := b.Enforcement(p)
			if r := rows[slices.IndexFunc(rows, func(r emit.Row) bool { return r.Restriction == emit.Credentials })]; r.Support != emit.Missing {
				t.Errorf("landlock: credentials %+v", r)
			}
		case "seatbelt":
			var ne *emit.NotEnforceableError
			if !errors.As(err, &ne) || !strings.HasPrefix(ne.Restriction, "credentials (") {
				t.Errorf("%s: %v; want the credential refused", b.Name(), err)
				continue
			}
			if !strings.Contains(err.Error(), "mcpolicy.cue:8:15: servers.gh.credentials.GITHUB_TOKEN: ") || !strings.Contains(err.Error(), "hint: leave "+b.Name()+" out") {
				t.Errorf("%s: not at the credential, or no hint:\n%v", b.Name(), err)
			}
		default:
			if err != nil {
				t.Errorf("%s: %v", b.Name(), err)
			}
			if _, err := b.Artefacts(p, ".mcpolicy"); err != nil {
				t.Errorf("%s: artefacts: %v", b.Name(), err)
			}
		}
	}
}
