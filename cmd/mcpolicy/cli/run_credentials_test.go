package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// TestServerEnvironCredentials: a credential read from the environment
// may come from the env file, like an env grant's value (run hands it to
// the proxy, the server gets a placeholder); one read by a command is
// not looked up.
func TestServerEnvironCredentials(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	env := filepath.Join(home, "mcp.env")
	writeFile(t, env, "GITHUB_TOKEN=from-the-file\nGH_PAT=pat-from-the-file\nOP=never\n")
	os.Chmod(env, 0o600)
	t.Setenv("GITHUB_TOKEN", "")
	os.Unsetenv("GITHUB_TOKEN")
	plan := &compiler.Plan{Server: "gh", Credentials: []credential.Grant{
		{Name: "GITHUB_TOKEN", From: credential.Source{Env: "GITHUB_TOKEN"}},
		{Name: "OTHER", From: credential.Source{Env: "GH_PAT"}},
		{Name: "OP", From: credential.Source{Command: []string{"op", "read", "x"}}},
	}}
	got, err := serverEnviron([]*compiler.Plan{plan}, plan, compiler.Machine{ProjectRoot: root, Home: home}, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GITHUB_TOKEN=from-the-file", "GH_PAT=pat-from-the-file"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %s", want)
		}
	}
	if slices.Contains(got, "OP=never") {
		t.Error("a command's credential was read from the env file")
	}
}
