package lint

import (
	"strings"
	"testing"
)

// TestOfficialImages: the table is canonical (each publisher's repository
// has its registry and is named as the row), and each row's images are
// judged as the rule says.
func TestOfficialImages(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range officialImages {
		if o.Name != strings.ToLower(o.Name) || seen[o.Name] || len(o.Publisher) == 0 {
			t.Errorf("row %q: not lower case, twice, or no publisher", o.Name)
		}
		seen[o.Name] = true
		for _, p := range o.Publisher {
			if canonicalImage(p) != p {
				t.Errorf("row %q: publisher %q is not canonical (%s)", o.Name, p, canonicalImage(p))
			}
			if got := mirrorOf(p + ":1"); got != "" {
				t.Errorf("the publisher's own %s is flagged as a copy of %s", p, got)
			}
		}
	}
	for image, want := range map[string]string{
		"someone/github-mcp-server:latest":                                  "ghcr.io/github/github-mcp-server",
		"docker.io/someone/github-mcp-server@sha256:0":                      "ghcr.io/github/github-mcp-server",
		"ghcr.io/someone/github-mcp-server:v1":                              "ghcr.io/github/github-mcp-server",
		"quay.io/someone/mcp-server-filesystem:1":                           "mcp/filesystem",
		"index.docker.io/someone/mcp-server-git":                            "mcp/git",
		"ghcr.io/github/github-mcp-server:v0.9.1":                           "",
		"GHCR.IO/GitHub/github-mcp-server:v0.9.1":                           "",
		"mcp/github-mcp-server:latest":                                      "",
		"docker.io/mcp/filesystem:latest":                                   "",
		"ghcr.io/modelcontextprotocol/server-filesystem:1":                  "",
		"registry.acme.internal/mirror/github-mcp-server:v1":                "",
		"123456789012.dkr.ecr.us-east-1.amazonaws.com/github-mcp-server:v1": "",
		"someone/my-own-mcp:1":                                              "",
		"github-mcp-server:1":                                               "", // built here
	} {
		if got := mirrorOf(image); got != want {
			t.Errorf("mirrorOf(%q) = %q, want %q", image, got, want)
		}
	}
}
