package e2e_test

// What the test needs before any client runs: the binaries, the server
// built from the module proxy, the empty image, which backends this machine
// runs, and a project.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	registry "github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
)

// ci: under CI=true a missing tool fails the test, never skips it.
var ci = os.Getenv("CI") == "true"

// unavailable skips the test, or fails it under CI=true.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if ci {
		t.Fatalf("CI=true, so not skipping: "+format, args...)
	}
	t.Skipf(format, args...)
}

func TestMain(m *testing.M) {
	flag.Parse()
	if run := flag.Lookup("test.run").Value.String(); !testing.Short() && (run == "" || strings.Contains(run, "RealServers") || strings.Contains(run, "ToolSurface")) {
		prefetchServers()
	}
	code := m.Run()
	for _, d := range cleanupDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// cleanupDirs are removed once every test has run (the cached builds).
var cleanupDirs []string

// built is one build, shared by every test of this binary.
type built struct {
	once sync.Once
	dir  string
	err  error
	skip bool // outside CI, a build that needs what is missing skips
}

var (
	toolsBuild  built // mcpolicy and mcpolicy-launch, side by side
	serverBuild built // the MCP server, from the module proxy
)

func (b *built) get(t *testing.T, do func(dir string) (skip bool, err error)) string {
	t.Helper()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "mcpolicy-e2e-build-")
		if b.err != nil {
			return
		}
		cleanupDirs = append(cleanupDirs, b.dir)
		os.Chmod(b.dir, 0o755)
		b.skip, b.err = do(b.dir)
	})
	switch {
	case b.err != nil && b.skip:
		unavailable(t, "%v", b.err)
	case b.err != nil:
		t.Fatal(b.err)
	}
	return b.dir
}

// tools builds mcpolicy and mcpolicy-launch (static) into one folder, once:
// `mcpolicy client` writes entries for the launcher beside it.
func tools(t *testing.T) (mcpolicy string) {
	t.Helper()
	dir := toolsBuild.get(t, func(dir string) (bool, error) {
		for _, pkg := range []string{testbin.McpolicyPkg, testbin.LaunchPkg} {
			bin, err := testbin.Path(pkg)
			if err != nil {
				return false, err
			}
			if err := testbin.CopyFile(bin, filepath.Join(dir, filepath.Base(pkg))); err != nil {
				return false, err
			}
		}
		return false, nil
	})
	return filepath.Join(dir, "mcpolicy")
}

// Server is the third-party MCP server under test, at a pinned version.
const (
	serverModule  = "github.com/mark3labs/mcp-filesystem-server"
	serverVersion = "v0.11.1"
)

// filesystemServer fetches the server through the module proxy into a
// scratch module and builds it static, once per test binary, and checks
// that the binary is the pinned version.
func filesystemServer(t *testing.T) string {
	t.Helper()
	dir := serverBuild.get(t, func(dir string) (bool, error) {
		src, err := testbin.External(serverModule, serverVersion)
		if err != nil {
			var fetch *testbin.FetchError
			return errors.As(err, &fetch), err // an unreachable proxy skips, outside CI
		}
		bin := filepath.Join(dir, "mcp-filesystem-server")
		if err := testbin.CopyFile(src, bin); err != nil {
			return false, err
		}
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			return false, err
		}
		for _, d := range append([]*debug.Module{&info.Main}, info.Deps...) {
			if d.Path == serverModule {
				if d.Version != serverVersion {
					return false, fmt.Errorf("built %s %s, want %s", serverModule, d.Version, serverVersion)
				}
				return false, nil
			}
		}
		return false, fmt.Errorf("%s: %s is not in its build info", bin, serverModule)
	})
	return filepath.Join(dir, "mcp-filesystem-server")
}

// requireBackend skips (fails under CI=true) when backend cannot run here.
func requireBackend(t *testing.T, backend string) {
	t.Helper()
	b, err := registry.Lookup(backend)
	if err != nil {
		t.Fatal(err)
	}
	if why := testenv.Unavailable(b.Runtime()); why != "" {
		unavailable(t, "%s: %s", backend, why)
	}
}

// importEmptyImage imports an image with no files into engine as image,
// without a registry, and removes it when t ends. The server's binary
// reaches the container through the project's mount, as on the host
// backends.
func importEmptyImage(t *testing.T, engine, image string) {
	t.Helper()
	var empty bytes.Buffer
	if err := tar.NewWriter(&empty).Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	testenv.Import(ctx, t, engine, image, empty.Bytes())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, engine, "rmi", "-f", image).CombinedOutput(); err != nil {
			t.Logf("%s rmi %s: %v\n%s", engine, image, err, out)
		}
	})
}

// snapshot is a tree's content: each regular file's sha256, each
// symlink's target, each folder, by path below the root.
type snapshot map[string]string

// snap records root's tree, leaving out the folders skip names (relative,
// slash-separated).
func snap(t *testing.T, root string, skip ...string) snapshot {
	t.Helper()
	s := snapshot{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		for _, k := range skip {
			if rel == k {
				return filepath.SkipDir
			}
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			s[rel] = "symlink " + target
		case d.IsDir():
			s[rel] = "dir"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			s[rel] = hex.EncodeToString(sum[:])
		default:
			s[rel] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// changes lists what differs from before to after.
func (before snapshot) changes(after snapshot) []string {
	var out []string
	for k, v := range before {
		switch w, ok := after[k]; {
		case !ok:
			out = append(out, "removed "+k)
		case w != v:
			out = append(out, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, "created "+k)
		}
	}
	slices.Sort(out)
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
