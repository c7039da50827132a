package diff

import (
	"strings"
	"testing"
)

// TestCredentialChanges: each change of a credential, with its verdict,
// its words and the new policy's position; reordering changes nothing.
func TestCredentialChanges(t *testing.T) {
	const pre = `servers: s: {image: "x", network: allow: ["a.com:443", "b.com:443"], credentials: `
	for _, c := range []struct{ old, new, kind, what string }{
		{`{}`, `{T: to: ["a.com:443"]}`, "CREDENTIAL_ADDED", "credential T added: Authorization: Bearer {} (from the launch's T, or the env file's) for a.com:443"},
		{`{T: to: ["a.com:443"]}`, `{}`, "CREDENTIAL_REMOVED", "credential T removed"},
		{`{T: to: ["a.com:443"]}`, `{T: to: ["a.com:443", "b.com:443"]}`, "CREDENTIAL_DESTINATION_ADDED", "credential T now also sent to b.com:443"},
		{`{T: to: ["a.com:443", "b.com:443"]}`, `{T: to: ["b.com:443"]}`, "CREDENTIAL_DESTINATION_REMOVED", "credential T no longer sent to a.com:443"},
		{`{T: to: ["a.com:443"]}`, `{T: {to: ["a.com:443"], from: env: "U"}}`, "CREDENTIAL_SOURCE_CHANGED", "credential T: the launch's T, or the env file's -> the launch's U, or the env file's"},
		{`{T: {to: ["a.com:443"], from: command: ["op", "read", "x"]}}`, `{T: {to: ["a.com:443"], from: command: ["op", "read", "y"]}}`, "CREDENTIAL_SOURCE_CHANGED", "`op read x` run on the host at spawn -> the output of `op read y`"},
		{`{T: to: ["a.com:443"]}`, `{T: {to: ["a.com:443"], as: header: "X-Key"}}`, "CREDENTIAL_INJECTION_CHANGED", "credential T: sent as Authorization: Bearer {} -> X-Key: {}"},
		{`{T: to: ["a.com:443"]}`, `{T: {to: ["a.com:443"], as: format: "token {}"}}`, "CREDENTIAL_INJECTION_CHANGED", "Authorization: Bearer {} -> Authorization: token {}"},
	} {
		cs := Plans(compilePolicy(t, pre+c.old+"}"), compilePolicy(t, pre+c.new+"}"))
		if len(cs) != 1 || cs[0].Kind != c.kind || !strings.Contains(cs[0].What, c.what) || cs[0].Pos.Line == 0 {
			t.Errorf("%s -> %s: got %+v, want %s %q", c.old, c.new, cs, c.kind, c.what)
		}
	}
	a := pre + `{T: to: ["a.com:443", "b.com:443"], U: to: ["b.com:443"]}}`
	b := pre + `{U: to: ["b.com:443"], T: {as: {header: "authorization"}, to: ["b.com:443", "A.com:443"]}}}`
	if cs := Plans(compilePolicy(t, a), compilePolicy(t, b)); len(cs) != 0 {
		t.Errorf("reordered, the header's case and the host's changed: %+v", cs)
	}
}
