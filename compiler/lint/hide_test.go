package lint_test

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
)

// TestSecretsHidden (#42): SECRETS_WITH_EGRESS leaves out what a mount
// hides, in a policy and in a client entry's engine arguments (where
// mcpolicy-launch's --mcpolicy-hide is read as the bind's hidden path, not
// as an unknown flag); a secret not hidden is still found.
func TestSecretsHidden(t *testing.T) {
	policy := func(hide string) lint.Example {
		return withProjectFiles(lint.Example{Kind: "policy", Text: `version: "v1"
servers: s: {
	image: "x:1"
	mounts: [{source: ".", target: "/w"` + hide + `}]
	network: allow: ["api.github.com:443"]
}
`}, ".env", "TOKEN=x", "keys/a.pem", "k")
	}
	client := func(hide string) lint.Example {
		return withProjectFiles(lint.Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "docker", "args": ["run", "--rm", "-i",
	"--mount", "type=bind,source=${PROJECT_PARENT}/proj,target=/w,readonly"` + hide + `, "x:1"]}}}
`}, ".env", "TOKEN=x", "keys/a.pem", "k")
	}
	for _, c := range []struct {
		name string
		e    lint.Example
		want string
	}{
		{"policy", policy(""), ".env, keys/a.pem"},
		{"policy hiding .env*", policy(`, hide: [".env*"]`), "keys/a.pem"},
		{"policy hiding both", policy(`, hide: [".env*", "keys"]`), ""},
		{"client", client(""), ".env, keys/a.pem"},
		{"client hiding .env*", client(`, "--mcpolicy-hide", "source=${PROJECT_PARENT}/proj,target=/w,pattern=.env*"`), "keys/a.pem"},
	} {
		rep := lint.Run(targets(t, c.e), lint.Options{})
		var got []string
		for _, f := range rep.Findings {
			if f.Rule == "UNKNOWN_FLAG" {
				t.Errorf("%s: %s", c.name, f.Message)
			}
			if f.Rule == "SECRETS_WITH_EGRESS" {
				_, s, _ := strings.Cut(f.Message, "carry away: ")
				got = append(got, s)
			}
		}
		if c.want == "" && len(got) > 0 || c.want != "" && (len(got) != 1 || got[0] != c.want) {
			t.Errorf("%s: SECRETS_WITH_EGRESS %q, want %q", c.name, got, c.want)
		}
	}
}
