package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestMissingPolicyPath: every command that takes a policy says, for a
// path that does not exist, that no policy is there and where it looked,
// with a hint, not Go's raw stat error.
func TestMissingPolicyPath(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	missing := filepath.Join(t.TempDir(), "nowhere")
	// Each command that takes -p, with what else it needs to reach the policy.
	calls := map[string][]string{
		"build": nil, "vet": nil, "explain": nil, "args": {"s"}, "lint": nil, "diff": nil,
		"check": nil, "client": {"vscode"}, "exec": {"--server", "s"}, "prove": nil,
		"run": {"--server", "s"}, "sessions": nil, "suggest": nil, "why": {"s"},
		"hook install": nil, "egress-proxy": {"--listen", "127.0.0.1:0", "--server", "s"},
		"doctor": {"--server", "s"},
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		name := strings.TrimPrefix(c.CommandPath(), "mcpolicy ")
		if c.Flags().ShorthandLookup("p") == nil {
			return
		}
		extra, ok := calls[name]
		if !ok {
			t.Errorf("%s takes -p: add it to this test", name)
			return
		}
		args := append(append(strings.Fields(name), "-p", missing), extra...)
		code, out, errs := run(t, args...)
		want := "mcpolicy: no policy at " + missing + ": it does not exist (looked for mcpolicy.cue|json|yaml|yml|jsonnet, mcpolicy.d/*); hint: "
		if code != ExitError || !strings.HasPrefix(errs, want) || strings.Contains(errs, "stat ") || out != "" {
			t.Errorf("%s -p MISSING: exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q...", name, code, out, errs, ExitError, want)
		}
	}
	walk(newRootCmd())
}
