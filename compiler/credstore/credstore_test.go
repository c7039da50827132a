package credstore

import (
	"slices"
	"testing"
)

// TestEnvFileFolder: the folder of the launcher's default env file
// (~/.config/mcpolicy/env, every server's env grant values) is a store: a
// grant that is, lies in or holds it is touching it, read-only or not.
func TestEnvFileFolder(t *testing.T) {
	for _, sub := range []string{".", ".config", ".config/mcpolicy", ".config/mcpolicy/env"} {
		if !slices.Contains(Touching(sub), ".config/mcpolicy") {
			t.Errorf("Touching(%q) = %q: no .config/mcpolicy", sub, Touching(sub))
		}
	}
	if got := Touching(".config/mcpolicyx"); slices.Contains(got, ".config/mcpolicy") {
		t.Errorf("Touching(.config/mcpolicyx) = %q", got)
	}
}
