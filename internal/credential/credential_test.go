package credential

import (
	"encoding/json"
	"testing"
)

// TestGrantJSON: the plan's spelling of a grant, the hash's input, is
// stable: field names and omitted empties.
func TestGrantJSON(t *testing.T) {
	g := Grant{Name: "GITHUB_TOKEN", Field: "servers.gh.credentials.GITHUB_TOKEN", From: Source{Env: "GITHUB_TOKEN"},
		To: []string{"api.github.com:443"}, As: Injection{Header: "Authorization", Format: "Bearer {}"}}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"GITHUB_TOKEN","field":"servers.gh.credentials.GITHUB_TOKEN","from":{"env":"GITHUB_TOKEN"},"to":["api.github.com:443"],"as":{"header":"Authorization","format":"Bearer {}"}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}
