package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadLint: the policy's servers, a client config's entries and a
// manifest's containers are targets; a config that cannot be read and a
// manifest with no Pod are PARSE errors, listed as unread, and what could
// be read is still linted.
func TestReadLint(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(`version: "v1"
servers: s: {image: "x:1"}
`), 0o644))
	client := filepath.Join(dir, "client.json")
	must(t, os.WriteFile(client, []byte(`{"mcpServers": {"c": {"command": "docker", "args": ["run", "-i", "--rm", "x:1"]}}}`), 0o644))
	pod := filepath.Join(dir, "pod.yaml")
	must(t, os.WriteFile(pod, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: k, image: \"x:1\"}\n"), 0o644))
	noPod := filepath.Join(dir, "service.yaml")
	must(t, os.WriteFile(noPod, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: svc}\n"), 0o644))
	missing := filepath.Join(dir, "missing.json")

	proj, err := Discover(dir)
	must(t, err)
	plans, err := proj.Compile(dir)
	must(t, err)
	in := ReadLint(LintOptions{Project: proj, Plans: plans, Clients: []string{client, missing},
		Manifests: []string{pod, noPod}, Home: dir})

	var servers []string
	for _, tg := range in.Targets {
		servers = append(servers, tg.Server)
	}
	if got := strings.Join(servers, " "); got != "s c Pod/p" {
		t.Errorf("targets %q, want the policy's s, the client's c, the Pod p", got)
	}
	if len(in.Unread) != 2 || !strings.HasPrefix(in.Unread[0], missing) || !strings.HasPrefix(in.Unread[1], noPod) {
		t.Errorf("unread %q, want the missing config and the manifest with no Pod", in.Unread)
	}
	for _, n := range in.Notes {
		if n.Unread && !strings.HasSuffix(n.Msg, "; the file is not linted") {
			t.Errorf("note %q does not say the file is not linted", n.Msg)
		}
	}
}
