package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/findings/sariftest"
)

// TestSARIFCategoryFlag: each command that writes SARIF names its run's
// category (its own by default, --sarif-category's when given, with the
// trailing "/"), and a category with a space is refused as the flag is
// read.
func TestSARIFCategoryFlag(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), policy)
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "base")
	t.Chdir(dir) // diff reads the ref from the repository it runs in

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lint", "-p", dir}, "mcpolicy/lint/"},
		{[]string{"lint", "-p", dir, "--sarif-category", "ci/policies"}, "ci/policies/"},
		{[]string{"diff", "-p", dir, "--against", "HEAD"}, "mcpolicy/diff/"},
		{[]string{"diff", "-p", dir, "--against", "HEAD", "--sarif-category", "pr/diff/"}, "pr/diff/"},
		{[]string{"vet", "-p", dir}, "mcpolicy/vet/"},
		{[]string{"check", "-p", dir}, "mcpolicy/check/"},
	} {
		code, out, errs := run(t, append(c.args, "--format", "sarif")...)
		var log struct {
			Runs []struct{ AutomationDetails struct{ ID string } }
		}
		if err := json.Unmarshal([]byte(out), &log); err != nil || len(log.Runs) != 1 {
			t.Errorf("%v: exit %d, not one SARIF run (%v)\nstdout: %s\nstderr: %s", c.args, code, err, out, errs)
			continue
		}
		if got := log.Runs[0].AutomationDetails.ID; got != c.want {
			t.Errorf("%v: automationDetails.id %q, want %q", c.args, got, c.want)
		}
		if err := sariftest.Validate(t, []byte(out)); err != nil {
			t.Errorf("%v: not SARIF 2.1.0: %v", c.args, err)
		}
	}
	for _, bad := range []string{"my category", ""} {
		code, out, errs := run(t, "lint", "-p", dir, "--format", "sarif", "--sarif-category", bad)
		if code != ExitError || out != "" || !strings.Contains(errs, "sarif-category") {
			t.Errorf("--sarif-category %q: exit %d\nstdout: %s\nstderr: %s", bad, code, out, errs)
		}
	}
}
