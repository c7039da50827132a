package launch

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// TestNewerArtefactRefused: a field this launcher does not know is refused
// by name (an older launcher skipping a newer restriction would start the
// server with less taken away); the fields it knows decode as before.
func TestNewerArtefactRefused(t *testing.T) {
	var rs artefact.Ruleset
	if err := decodeArtefact([]byte(`{"server": "s", "command": ["/bin/true"], "maskEverything": [".env"]}`), &rs); err == nil || !strings.Contains(err.Error(), `"maskEverything"`) {
		t.Errorf("ruleset with an unknown field: %v, want a refusal naming it", err)
	}
	if _, err := DecodeBwrap([]byte(`{"backend": "bwrap", "server": "s", "args": ["--ro-bind", "/usr", "/usr"], "newThing": 1}`)); err == nil || !strings.Contains(err.Error(), `"newThing"`) {
		t.Errorf("bwrap spec with an unknown field: %v, want a refusal naming it", err)
	}
	if _, err := DecodeBwrap([]byte(`{"backend": "bwrap", "server": "s", "args": ["--ro-bind", "/usr", "/usr"]}`)); err != nil {
		t.Errorf("bwrap spec: %v", err)
	}
}
