package lint_test

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
)

// TestEnvSecretNotCredential: a secret-named variable passed into a
// server with an allowlist is flagged at its env entry; a plain name, a
// server without network, and one that runs only where no proxy injects
// a credential (seatbelt) are not; kubernetes injects (its egress-proxy
// Pod), so it is flagged there too.
func TestEnvSecretNotCredential(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`image: "x:1"
	env: ["GITHUB_URL", "GITHUB_TOKEN"]
	network: allow: ["api.github.com:443"]`, "mcpolicy.cue:4:22 GITHUB_TOKEN is passed into a server with egress to api.github.com:443: use credentials: the value would enter the sandbox"},
		{`command: ["x"]
	backends: ["bwrap"]
	env: ["OPENAI_API_KEY"]
	network: allow: ["api.openai.com:443"]`, "mcpolicy.cue:5:8 OPENAI_API_KEY is passed into a server with egress to api.openai.com:443: use credentials: the value would enter the sandbox"},
		{`image: "x:1"
	env: ["GITHUB_URL", "REGION"]
	network: allow: ["api.github.com:443"]`, ""},
		{`image: "x:1"
	env: ["GITHUB_TOKEN"]`, ""},
		{`image: "x:1"
	backends: ["kubernetes"]
	env: ["GITHUB_TOKEN"]
	network: allow: ["api.github.com:443"]`, "mcpolicy.cue:5:8 GITHUB_TOKEN is passed into a server with egress to api.github.com:443: use credentials: the value would enter the sandbox"},
		{`command: ["x"]
	backends: ["seatbelt"]
	env: ["GITHUB_TOKEN"]
	network: allow: ["api.github.com:443"]`, ""},
	} {
		e := lint.Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {\n\t" + c.body + "\n}\n"}
		var got []string
		for _, f := range lint.Run(targets(t, e), lint.Options{}).Findings {
			if f.Rule == "ENV_SECRET_NOT_CREDENTIAL" {
				_, at, _ := strings.Cut(f.Pos.String(), "/mcpolicy.cue")
				got = append(got, "mcpolicy.cue"+at+" "+f.Message)
			}
		}
		if c.want == "" && len(got) > 0 || c.want != "" && (len(got) != 1 || got[0] != c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.body, got, c.want)
		}
	}
}
