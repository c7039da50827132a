package compiler

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/position"
)

// TestPlanJSONKeepsNames: list elements carry positions, but the plan's
// JSON (and so its hash) holds each as the string it always was, and
// reads back to the same plan.
func TestPlanJSONKeepsNames(t *testing.T) {
	at := position.Pos{File: "mcpolicy.cue", Line: 3, Col: 5}
	p := &Plan{
		Server: "s", Mounts: []Mount{}, Protected: []Protected{}, Backends: []string{},
		Env:         []EnvGrant{{Name: "TOKEN", Pos: at}},
		Network:     Network{Mode: "allowlist", Allow: MustDestinations("API.github.com.:443"), ProxyPort: 20001},
		Accept:      []Accepted{{Name: AcceptRWHoldsProject, Pos: at}},
		Unprotected: []Unprotection{{Name: ".env*", Pos: at}},
	}
	got := string(p.JSON())
	for _, want := range []string{
		`"env": [
    "TOKEN"
  ]`,
		`"allow": [
      "api.github.com:443"
    ]`,
		`"accept": [
    "rw-holds-project"
  ]`,
		`"unprotected": [
    ".env*"
  ]`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("plan JSON lacks %s:\n%s", want, got)
		}
	}
	var back Plan
	if err := json.Unmarshal(p.JSON(), &back); err != nil {
		t.Fatal(err)
	}
	if again := string(back.JSON()); again != got {
		t.Errorf("round trip changed the plan:\n%s\nwant\n%s", again, got)
	}
}
