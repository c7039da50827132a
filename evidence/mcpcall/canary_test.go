package mcpcall_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/evidence/mcpcall"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/project"
)

// The seed's demonstration, as a test: the canary's tool-level negative
// matrix is green both unconfined and under bwrap, while its startup read
// of a credentials file succeeds unconfined and fails with ENOENT confined.
// Two instruments, one binary, different subjects.

const (
	secret = "[default]\naws_access_key_id = AKIACANARYCANARY\naws_secret_access_key = canary\n"
	hello  = "hello from the canary workspace\n"
)

// world is one canary set-up: a home holding planted credentials, and a
// project (policy, bin/canary, workspace/) that does not contain the home.
type world struct {
	home, creds string // $HOME and $HOME/.aws/credentials
	proj        string // the policy's folder
	bin         string // proj/bin/canary
	workspace   string // proj/workspace, the canary's root when unconfined
}

func newWorld(t *testing.T) *world {
	t.Helper()
	base := t.TempDir()
	w := &world{home: filepath.Join(base, "home"), proj: filepath.Join(base, "proj")}
	w.creds = filepath.Join(w.home, ".aws", "credentials")
	w.bin = filepath.Join(w.proj, "bin", "canary")
	w.workspace = filepath.Join(w.proj, "workspace")
	for _, d := range []string{filepath.Dir(w.creds), filepath.Dir(w.bin), filepath.Join(w.workspace, "sub")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	// t.TempDir is 0700; the confined user is not the owner everywhere.
	must(t, os.Chmod(base, 0o755))
	must(t, os.WriteFile(w.creds, []byte(secret), 0o644))
	must(t, os.WriteFile(filepath.Join(w.workspace, "hello.txt"), []byte(hello), 0o644))
	must(t, os.Symlink(w.creds, filepath.Join(w.workspace, "creds-link")))                              // absolute, escaping
	must(t, os.Symlink("../../../home/.aws/credentials", filepath.Join(w.workspace, "sub", "up-link"))) // relative, escaping
	testbin.Install(t, testbin.Canary(t), w.bin)
	return w
}

// matrixCase is one tool call; path may hold {root} and {creds}.
type matrixCase struct {
	name, tool, path string
	wantError        bool
	wantText         string // exact, after {root} is substituted; "" to skip
}

// matrix is the tool-level negative matrix: every escape is refused by the
// tool itself, with the OS-style error as text.
var matrix = []matrixCase{
	{"relative file", "read_file", "hello.txt", false, hello},
	{"absolute file in root", "read_file", "{root}/hello.txt", false, hello},
	{"list root", "list_dir", "", false, "creds-link\nhello.txt\nsub/"},
	{"missing file", "read_file", "missing.txt", true, "open {root}/missing.txt: no such file or directory"},
	{"absolute credentials path", "read_file", "{creds}", true, "open {creds}: path escapes from parent"},
	{"dot-dot traversal", "read_file", "../../home/.aws/credentials", true, "open ../../home/.aws/credentials: path escapes from parent"},
	{"dot-dot inside then out", "read_file", "sub/../../x", true, "open sub/../../x: path escapes from parent"},
	{"absolute symlink escape", "read_file", "creds-link", true, "open {root}/creds-link: path escapes from parent"},
	{"relative symlink escape", "read_file", "sub/up-link", true, "open {root}/sub/up-link: path escapes from parent"},
	{"list outside root", "list_dir", "/", true, "open /: path escapes from parent"},
	{"list parent", "list_dir", "..", true, "open ..: path escapes from parent"},
}

// runMatrix calls every case through argv (one process per call) and
// returns each call's stderr.
func runMatrix(t *testing.T, argv, env []string, root, creds string) []string {
	t.Helper()
	sub := strings.NewReplacer("{root}", root, "{creds}", creds)
	var stderrs []string
	for _, c := range matrix {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		args := map[string]any{}
		if c.path != "" {
			args["path"] = sub.Replace(c.path)
		}
		res, err := mcpcall.Call(ctx, argv, env, c.tool, args)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.IsError != c.wantError {
			t.Errorf("%s: %s %v: isError = %v, want %v (text %q)", c.name, c.tool, args, res.IsError, c.wantError, res.Text)
		}
		if want := sub.Replace(c.wantText); c.wantText != "" && res.Text != want {
			t.Errorf("%s: %s %v: text %q, want %q", c.name, c.tool, args, res.Text, want)
		}
		if strings.Contains(res.Text, "AKIACANARY") {
			t.Errorf("%s: the tool returned the credentials: %q", c.name, res.Text)
		}
		stderrs = append(stderrs, res.Stderr)
	}
	return stderrs
}

// startupLine is the canary's one line about its startup read.
func startupLine(t *testing.T, stderr string) string {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "canary: startup read ") {
			return l
		}
	}
	t.Fatalf("no startup line in stderr:\n%s", stderr)
	return ""
}

// TestCanaryUnconfined: the matrix is green, and the process read the file.
func TestCanaryUnconfined(t *testing.T) {
	w := newWorld(t)
	argv := []string{w.bin, w.workspace}
	env := []string{"HOME=" + w.home, "PATH=/usr/bin:/bin"}

	want := fmt.Sprintf("canary: startup read %s: ok %d bytes", w.creds, len(secret))
	stderrs := runMatrix(t, argv, env, w.workspace, w.creds)
	t.Logf("%d tool calls as the matrix expects; %s", len(matrix), startupLine(t, stderrs[0]))
	for _, stderr := range stderrs {
		if got := startupLine(t, stderr); got != want {
			t.Errorf("startup line %q, want %q", got, want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, stderr, err := mcpcall.ListTools(ctx, argv, env)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "list_dir,read_file" {
		t.Errorf("tools %q, want list_dir,read_file", got)
	}
	if got := startupLine(t, stderr); got != want {
		t.Errorf("ListTools: startup line %q, want %q", got, want)
	}
}

// canaryPolicy confines the canary with bwrap: its binary and its
// workspace, read-only, and CANARY_TARGET passed by name so the confined
// read aims at the same host path the unconfined one read.
const canaryPolicy = `version: "v1"
servers: canary: {
	command: ["/opt/canary/canary", "/workspace"]
	runtime: "static"
	backends: ["bwrap"]
	mounts: [
		{source: "bin", target: "/opt/canary"},
		{source: "workspace", target: "/workspace"},
	]
	env: ["CANARY_TARGET"]
}
`

// TestCanaryBwrap: the same binary, the same matrix, the same target path;
// the startup read now fails with ENOENT, and the tools answer the same.
func TestCanaryBwrap(t *testing.T) {
	testbin.SkipShort(t, "runs the canary under bwrap")
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bwrap is not installed (%v); CI must install it", err)
		}
		t.Skipf("bwrap is not installed: %v", err)
	}
	w := newWorld(t)
	must(t, os.WriteFile(filepath.Join(w.proj, "mcpolicy.cue"), []byte(canaryPolicy), 0o644))
	proj, err := project.Discover(w.proj)
	must(t, err)
	plans, err := proj.Compile(w.home)
	must(t, err)
	if len(plans) != 1 {
		t.Fatalf("%d plans, want 1", len(plans))
	}
	p := plans[0]

	// The emitted argv with the environment where the wrapper's --args
	// descriptor would put it: the plan's names, values from lookup.
	const fd = 3
	args, err := bwrap.Args(p, compiler.Machine{ProjectRoot: proj.Root, Home: w.home}, bwrap.DetectLayout(), fd)
	must(t, err)
	lookup := func(name string) (string, bool) {
		if name == "CANARY_TARGET" {
			return w.creds, true
		}
		return "", false
	}
	argv := []string{"bwrap"}
	for i := 0; i < len(args); i++ {
		if args[i] == "--args" && i+1 < len(args) && args[i+1] == fmt.Sprint(fd) {
			argv = append(argv, bwrap.EnvArgs(p, lookup)...)
			i++
			continue
		}
		argv = append(argv, args[i])
	}
	env := []string{"HOME=" + w.home, "PATH=" + os.Getenv("PATH")}

	want := fmt.Sprintf("canary: startup read %s: ENOENT", w.creds)
	stderrs := runMatrix(t, argv, env, "/workspace", w.creds)
	t.Logf("%d tool calls as the matrix expects; %s", len(matrix), startupLine(t, stderrs[0]))
	for _, stderr := range stderrs {
		if got := startupLine(t, stderr); got != want {
			t.Errorf("startup line %q, want %q\nstderr:\n%s", got, want, stderr)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
