//go:build linux

package launch

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// engineTools: arguments without the label have no relay; with one, the
// surface is read (here: missing, refused); with two, the launch is
// refused whatever they say.
func TestEngineTools(t *testing.T) {
	d := "sha256:" + strings.Repeat("a", 64)
	if p, err := engineTools([]string{"run", "--label", artefact.LabelProgramPin + "=x", "img"}, t.TempDir(), "s"); p != nil || err != nil {
		t.Errorf("no label: %v, %v", p, err)
	}
	var te *TamperError
	if _, err := engineTools([]string{"run", "--label", artefact.LabelTools + "=" + d, "img"}, t.TempDir(), "s"); !errors.As(err, &te) || !strings.Contains(err.Error(), "is missing") {
		t.Errorf("one label, no surface: %v", err)
	}
	two := []string{"run", "--label", artefact.LabelTools + "=" + d, "--label", artefact.LabelTools + "=" + d, "img"}
	if _, err := engineTools(two, t.TempDir(), "s"); !errors.As(err, &te) || !strings.Contains(err.Error(), "2 "+artefact.LabelTools) {
		t.Errorf("two labels: %v", err)
	}
}
