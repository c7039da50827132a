// Package testbin gives tests the commands of this module — mcpolicy,
// mcpolicy-launch, the canary — built once per `go test` run rather than
// once per test package (or per test).
//
// A binary is built static (CGO_ENABLED=0: tests bind it into sandboxes
// and container images, where no C library may be present) into a cache
// folder keyed by a hash of the module's source (every non-test .go, .s,
// .cue file, go.mod and go.sum) and the Go toolchain, under a lock file,
// so the test packages that `go test ./...` runs side by side build it
// once between them, and a second run with the source unchanged builds
// nothing. The same binary serves every caller: never modify it; copy it
// with Install where a test needs it in a folder of its own.
//
// $MCPOLICY_BIN and $MCPOLICY_LAUNCH_BIN, when set, name mcpolicy and
// mcpolicy-launch already built (`make build`; they must be static) and
// are used as they are. $MCPOLICY_TEST_CACHE moves the cache folder
// (default: $XDG_CACHE_HOME or ~/.cache, then mcpolicy-test).
package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The commands tests build, as packages relative to the module root.
const (
	McpolicyPkg = "./cmd/mcpolicy"
	LaunchPkg   = "./cmd/mcpolicy-launch"
	CanaryPkg   = "./examples/canary/_server"
)

// Mcpolicy returns a static mcpolicy built from the module's source.
func Mcpolicy(t testing.TB) string {
	t.Helper()
	return must(t)(Path(McpolicyPkg))
}

// Launch returns a static mcpolicy-launch built from the module's source.
func Launch(t testing.TB) string {
	t.Helper()
	return must(t)(Path(LaunchPkg))
}

// Canary returns a static examples/canary.
func Canary(t testing.TB) string {
	t.Helper()
	return must(t)(Path(CanaryPkg))
}

// Build returns the static build of the module's main package pkg
// ("./cmd/mcpolicy"), for this machine's GOOS and GOARCH.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	return must(t)(Path(pkg))
}

// Path is Build without a testing.TB, for TestMain and sync.Once.
func Path(pkg string) (string, error) {
	return PathFor(runtime.GOOS, pkg)
}

// PathFor builds pkg for goos (the container probe is always "linux").
func PathFor(goos, pkg string) (string, error) {
	pkg = "./" + strings.TrimPrefix(filepath.ToSlash(filepath.Clean(pkg)), "./")
	if goos == runtime.GOOS {
		if env := fromEnv[pkg]; env != "" {
			if p := os.Getenv(env); p != "" {
				return checkEnvBinary(env, p)
			}
		}
	}
	return once(goos+" "+pkg, func() (string, error) { return build(goos, pkg) })
}

// Install copies the binary src to dst (mode 0755, parent folders made),
// for a test that needs it inside a folder it binds or hands to another
// user. A copy, not a link: the cached binary is shared by every test.
func Install(t testing.TB, src, dst string) {
	t.Helper()
	if err := CopyFile(src, dst); err != nil {
		t.Fatal(err)
	}
}

// CopyFile is Install without a testing.TB.
func CopyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, 0o755)
}

// ModuleRoot is the folder holding this module's go.mod.
func ModuleRoot() (string, error) {
	return moduleRoot()
}

var fromEnv = map[string]string{
	McpolicyPkg: "MCPOLICY_BIN",
	LaunchPkg:   "MCPOLICY_LAUNCH_BIN",
}

type result struct {
	once sync.Once
	path string
	err  error
}

// once builds each key once per test binary; different keys build at the
// same time (the third-party servers of one test fetch and compile side by
// side instead of one after another).
func once(k string, build func() (string, error)) (string, error) {
	mu.Lock()
	r, ok := built[k]
	if !ok {
		r = &result{}
		built[k] = r
	}
	mu.Unlock()
	r.once.Do(func() { r.path, r.err = build() })
	return r.path, r.err
}

var (
	mu    sync.Mutex
	built = map[string]*result{}

	// cacheRoot is read once, before any test can change $HOME.
	cacheRoot = defaultCacheRoot()

	// moduleRoot is found once, from the folder the test binary starts
	// in (its package's), before any test changes the working directory.
	moduleDir, moduleErr = findModuleRoot()

	sourceHash = sync.OnceValues(func() (string, error) {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		return hashSource(root)
	})
)

func moduleRoot() (string, error) { return moduleDir, moduleErr }

func findModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testbin: no go.mod above the working directory")
		}
		dir = parent
	}
}

func defaultCacheRoot() string {
	if d := os.Getenv("MCPOLICY_TEST_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "mcpolicy-test")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("mcpolicy-test-%d", os.Getuid()))
}

func checkEnvBinary(env, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("$%s=%s is not an executable file (unset it, or run `make build`)", env, p)
	}
	return abs, nil
}

func must(t testing.TB) func(string, error) string {
	return func(p string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// hashSource hashes what a build of the module reads from it, plus the
// toolchain and the environment that changes a build.
func hashSource(root string) (string, error) {
	h := sha256.New()
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("testbin: go is not on PATH: %v", err)
	}
	fmt.Fprintf(h, "toolchain %s %s/%s %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, goBin)
	if fi, err := os.Stat(goBin); err == nil {
		fmt.Fprintf(h, "go binary %d %d\n", fi.Size(), fi.ModTime().UnixNano())
	}
	for _, env := range []string{"GOFLAGS", "GOEXPERIMENT", "GOAMD64", "GOARM64", "GOTOOLCHAIN", "GOROOT", "GOWORK"} {
		fmt.Fprintf(h, "%s=%s\n", env, os.Getenv(env))
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "bin" || name == "dist" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // a module of its own (tools/release): not in this module's builds
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(name, "_test.go") || !sourceFile(name) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("testbin: hashing the module's source: %v", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// hiddenHash is "" for a package the module's hash covers, and for one
// under a _ or testdata folder (which the go tool's ./... and that hash
// skip) "-" and a hash of that package's folder.
func hiddenHash(root, pkg string) (string, error) {
	hidden := false
	for _, el := range strings.Split(strings.TrimPrefix(pkg, "./"), "/") {
		if el == "testdata" || strings.HasPrefix(el, "_") {
			hidden = true
		}
	}
	if !hidden {
		return "", nil
	}
	h := sha256.New()
	dir := filepath.Join(root, filepath.FromSlash(pkg))
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || strings.HasSuffix(d.Name(), "_test.go") || !sourceFile(d.Name()) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("testbin: hashing %s: %v", pkg, err)
	}
	return "-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// sourceFile reports whether a file of this name can change a build: Go
// and assembly sources, cgo's C, go.mod/go.sum, and embedded CUE.
func sourceFile(name string) bool {
	switch name {
	case "go.mod", "go.sum", "go.work", "go.work.sum":
		return true
	}
	switch filepath.Ext(name) {
	case ".go", ".s", ".c", ".h", ".cue":
		return true
	}
	return false
}

// build builds pkg for goos into the cache, unless an earlier run did.
func build(goos, pkg string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	key, err := sourceHash()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cacheRoot, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testbin: %v", err)
	}
	name := filepath.Base(pkg)
	if goos != runtime.GOOS {
		name += "-" + goos
	}
	// The module's hash leaves out _ and testdata folders, where the
	// mains that are not products live (the canary, the escape suite's
	// helper): such a binary is keyed by its own folder's source too.
	hidden, err := hiddenHash(root, pkg)
	if err != nil {
		return "", err
	}
	name += hidden
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		touch(dir)
		return bin, nil
	}

	unlock, err := lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return "", fmt.Errorf("testbin: locking %s: %v", dir, err)
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil { // another test package built it while we waited
		touch(dir)
		return bin, nil
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", fmt.Errorf("testbin: %v", err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", filepath.Join(tmp, name), pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: go build %s (GOOS=%s CGO_ENABLED=0): %v\n%s", pkg, goos, err, out)
	}
	if now, err := hashSource(root); err != nil || now != key {
		// The source changed while it was built (an editor saved a
		// file): good for this run, not for the cache entry of the
		// source as it was. Prune removes the folder later.
		keepDir, err := os.MkdirTemp(cacheRoot, "uncached-")
		if err != nil {
			return "", fmt.Errorf("testbin: %v", err)
		}
		bin = filepath.Join(keepDir, name)
	}
	if err := os.Rename(filepath.Join(tmp, name), bin); err != nil {
		return "", fmt.Errorf("testbin: %v", err)
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "testbin: built %s in %s: %s\n", pkg, time.Since(start).Round(time.Millisecond), bin)
	}
	prune(dir)
	return bin, nil
}

// touch marks a cache entry as in use, so prune keeps it.
func touch(dir string) {
	now := time.Now()
	os.Chtimes(dir, now, now)
}

// prune removes the cache entries of other source states not used for an
// hour (each edit of the source makes a new one; a test run takes minutes),
// leaving any that another test run holds locked.
func prune(keep string) {
	entries, err := os.ReadDir(cacheRoot)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(cacheRoot, e.Name())
		if !e.IsDir() || dir == keep {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < time.Hour {
			continue
		}
		if unlock, ok := tryLock(filepath.Join(dir, ".lock")); ok {
			os.RemoveAll(dir)
			unlock()
		}
	}
}

// FetchError is External's error when the module could not be fetched
// (the module proxy is not reachable): a test may skip on it outside CI.
type FetchError struct{ Err error }

func (e *FetchError) Error() string { return e.Err.Error() }
func (e *FetchError) Unwrap() error { return e.Err }

// External returns a static build of the main package at the root of
// module mod at version (a third-party MCP server), fetched through the
// module proxy into a scratch module — once, then cached by mod@version
// and the toolchain like this module's commands.
func External(mod, version string) (string, error) {
	return ExternalPackage(mod, version, mod)
}

// ExternalPackage is External for a main package pkg (an import path)
// inside module mod that is not the module's root, e.g. a cmd/ folder or an
// example; the binary is named after pkg's last element.
func ExternalPackage(mod, version, pkg string) (string, error) {
	return once("external "+mod+"@"+version+" "+pkg, func() (string, error) { return buildExternal(mod, version, pkg) })
}

func buildExternal(mod, version, pkg string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "external %s@%s %s %s/%s GOEXPERIMENT=%s\n", mod, version, runtime.Version(), runtime.GOOS, runtime.GOARCH, os.Getenv("GOEXPERIMENT"))
	if pkg != mod { // the root package keeps the key it always had
		fmt.Fprintf(h, "package %s\n", pkg)
	}
	dir := filepath.Join(cacheRoot, "ext-"+hex.EncodeToString(h.Sum(nil))[:20])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testbin: %v", err)
	}
	name := filepath.Base(pkg)
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		touch(dir)
		return bin, nil
	}
	unlock, err := lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return "", fmt.Errorf("testbin: locking %s: %v", dir, err)
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		touch(dir)
		return bin, nil
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", fmt.Errorf("testbin: %v", err)
	}
	defer os.RemoveAll(tmp)
	// The scratch module is not this one: no workspace, modules fetched
	// as needed whatever GOFLAGS says.
	env := append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false")
	for i, args := range [][]string{
		{"mod", "init", "scratch"},
		{"get", mod + "@" + version},
		{"build", "-o", filepath.Join(tmp, name), pkg},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = tmp, env
		if out, err := cmd.CombinedOutput(); err != nil {
			err = fmt.Errorf("testbin: go %s: %v\n%s", strings.Join(args, " "), err, out)
			if i == 1 {
				return "", &FetchError{err}
			}
			return "", err
		}
	}
	if err := os.Rename(filepath.Join(tmp, name), bin); err != nil {
		return "", fmt.Errorf("testbin: %v", err)
	}
	return bin, nil
}

// SkipShort skips a slow test under -short — one that runs container
// engines, sandboxes under the kernel, pre-commit or the network — saying
// what it does. Under CI=true it skips nothing: CI runs every test.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skipf("%s: not under -short", what)
	}
}
