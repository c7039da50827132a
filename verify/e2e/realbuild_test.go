package e2e_test

// The third-party servers of the real-server test, each built from the Go
// module proxy at a pinned version in a scratch module (testbin), once per
// test binary, and checked against its build info.

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
)

// goServer is a Go MCP server from the module proxy: module mod at
// version, main package pkg, installed as `go install pkg@version` names it.
type goServer struct {
	mod, version, pkg string
	build             built
}

var (
	// gopls's MCP server is its `mcp` subcommand.
	goplsServer = &goServer{mod: "golang.org/x/tools/gopls", version: "v0.23.0", pkg: "golang.org/x/tools/gopls"}
	// grafana's needs GRAFANA_URL to start; no Grafana to answer.
	grafanaServer = &goServer{mod: "github.com/grafana/mcp-grafana", version: "v1.6.3", pkg: "github.com/grafana/mcp-grafana/cmd/mcp-grafana"}
	// The go-sdk's memory example: a knowledge graph kept in the file -memory names.
	memoryServer = &goServer{mod: "github.com/modelcontextprotocol/go-sdk", version: "v1.8.0", pkg: "github.com/modelcontextprotocol/go-sdk/examples/server/memory"}
)

// prefetchServers starts building the third-party servers, side by side,
// while the package's other tests run: fetching one overlaps compiling
// another. TestRealServers then finds them built (testbin builds each once).
func prefetchServers() {
	for _, g := range []*goServer{goplsServer, grafanaServer, memoryServer} {
		go testbin.ExternalPackage(g.mod, g.version, g.pkg)
	}
}

// name is the binary's name, as go install names it.
func (g *goServer) name() string { return path.Base(g.pkg) }

// path returns the static build of g, built once per test binary.
func (g *goServer) path(t *testing.T) string {
	t.Helper()
	dir := g.build.get(t, func(dir string) (bool, error) {
		src, err := testbin.ExternalPackage(g.mod, g.version, g.pkg)
		if err != nil {
			var fetch *testbin.FetchError
			return errors.As(err, &fetch), err // an unreachable proxy skips, outside CI
		}
		bin := filepath.Join(dir, g.name())
		if err := testbin.CopyFile(src, bin); err != nil {
			return false, err
		}
		return false, checkBuildInfo(bin, g.mod, g.version)
	})
	return filepath.Join(dir, g.name())
}

// checkBuildInfo fails unless bin holds module mod at version.
func checkBuildInfo(bin, mod, version string) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return err
	}
	for _, d := range append([]*debug.Module{&info.Main}, info.Deps...) {
		if d.Path == mod {
			if d.Version != version {
				return fmt.Errorf("built %s %s, want %s", mod, d.Version, version)
			}
			return nil
		}
	}
	return fmt.Errorf("%s: %s is not in its build info", bin, mod)
}
