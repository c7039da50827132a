package clientcfg

import (
	"slices"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	cred "github.com/mcpolicy/mcpolicy/internal/credential"
)

// TestDriftCredentials: an entry whose command gives the server the
// credential's variable itself (the credential turned into an env grant)
// drifts: the value is inside, the credential gone. The same entry
// against the same plan without the credential is only the env grant.
func TestDriftCredentials(t *testing.T) {
	policy := &compiler.Plan{Server: "gh", Hash: "sha256:01", Network: compiler.Network{Mode: "allowlist", Allow: compiler.MustDestinations("api.github.com:443")},
		Credentials: []cred.Grant{{Name: "GITHUB_TOKEN", From: cred.Source{Env: "GITHUB_TOKEN"}, To: []string{"api.github.com:443"},
			As: cred.Injection{Header: "Authorization", Format: "Bearer {}"}}}}
	entry := &compiler.Plan{Server: "gh", Hash: "sha256:02", Network: policy.Network, Env: []compiler.EnvGrant{{Name: "GITHUB_TOKEN"}}}
	kinds := func(p *compiler.Plan) []string {
		var out []string
		for _, d := range Drift([]*compiler.Plan{p}, []*readback.Target{{Server: "gh", Plan: entry}}, "/p") {
			out = append(out, d.Change.Kind)
		}
		slices.Sort(out)
		return out
	}
	if got := kinds(policy); !slices.Contains(got, "CREDENTIAL_REMOVED") || !slices.Contains(got, "ENV_ADDED") {
		t.Errorf("the credential as an env grant: %v, want CREDENTIAL_REMOVED and ENV_ADDED", got)
	}
	entry.Env = nil
	entry.Credentials = policy.Credentials
	if got := kinds(policy); len(got) != 0 {
		t.Errorf("the same credential: %v", got)
	}
}
