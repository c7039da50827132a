package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunDispatch: what mcpolicy-launch's flags ask for reaches the right
// start, and each refusal comes before anything starts (nothing here
// execs: every request is refused on the way).
func TestRunDispatch(t *testing.T) {
	dir := t.TempDir()
	artefact := filepath.Join(dir, ".mcpolicy", "landlock", "s.json")
	os.MkdirAll(filepath.Dir(artefact), 0o755)
	os.WriteFile(artefact, []byte(`{"server": "s"}`), 0o644) // a ruleset names no backend
	notJSON := filepath.Join(dir, "x.json")
	os.WriteFile(notJSON, []byte("not json"), 0o644)
	for _, tc := range []struct {
		name     string
		r        Request
		tampered bool
		want     string
	}{
		{"--unprotect is refused", Request{Unprotected: []string{".git"}, Args: []string{artefact}}, true, "--unprotect .git"},
		{"no artefact", Request{}, false, ErrUsage.Error()},
		{"two artefacts", Request{Args: []string{artefact, artefact}}, false, ErrUsage.Error()},
		{"an engine entry that pins nothing", Request{Engine: "docker", Args: []string{"run", "img"}}, true, "pins no artefact"},
		{"an engine entry, another artefact's digest", Request{Engine: "docker", Digest: "sha256:" + strings.Repeat("0", 64), ProjectRoot: dir,
			Args: []string{artefact, "--", "run", "img"}}, true, ""},
		{"an artefact, another digest", Request{Digest: "sha256:" + strings.Repeat("0", 64), Args: []string{artefact}}, true, ""},
		{"not an artefact", Request{Args: []string{notJSON}}, false, "not an artefact"},
		{"a ruleset with no command", Request{Args: []string{artefact}}, false, "no command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(tc.r)
			var te *TamperError
			if err == nil || errors.As(err, &te) != tc.tampered || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v (tampered %v), want %q (tampered %v)", err, errors.As(err, &te), tc.want, tc.tampered)
			}
		})
	}
}
