package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
)

// TestBuildSaysProcNeedsNamespaces: build writes a Landlock plan with proc
// everywhere (its artefacts are every machine's), but on a machine without
// user namespaces it says that the launcher will refuse it there, and why,
// as check does; with them it says nothing.
func TestBuildSaysProcNeedsNamespaces(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: gopls: {
	command: ["/usr/bin/true"]
	backends: ["landlock"]
	proc: true
}
`)
	defer func(h func() hostcaps.Host) { landlockHost = h }(landlockHost)
	landlockHost = func() hostcaps.Host { return hostcaps.Host{ABI: 7, UserNS: true} }
	if code, _, stderr := run(t, "build", dir); code != ExitOK || strings.Contains(stderr, "note") {
		t.Fatalf("build with user namespaces: exit %d: %s", code, stderr)
	}
	landlockHost = func() hostcaps.Host { return hostcaps.Host{ABI: 7} }
	code, _, stderr := run(t, "build", dir)
	if code != ExitOK || !strings.Contains(stderr, "mcpolicy.cue:5:2: servers.gopls.proc: proc") || !strings.Contains(stderr, `the launcher will refuse server "gopls" on landlock`) {
		t.Errorf("build without user namespaces: exit %d, stderr:\n%s", code, stderr)
	}
	t.Log(stderr)
	if _, _, stderr := run(t, "check", "-p", dir); !strings.Contains(stderr, `the launcher will refuse server "gopls" on landlock`) {
		t.Errorf("check without user namespaces says nothing of proc:\n%s", stderr)
	}
}
