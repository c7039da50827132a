package docs_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/cmd/mcpolicy/cli"
	"github.com/mcpolicy/mcpolicy/internal/exitcode"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// The statements below are of a kind that went stale before: a list of
// make targets, exit codes, a size. Each test holds one kind to what it
// states.

// readDoc is a repository file's text.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMakeTargetsListed: README's list of the targets `make help` prints
// is the Makefile's targets with a "##" description, in its order.
func TestMakeTargetsListed(t *testing.T) {
	var targets []string
	for _, l := range strings.Split(readDoc(t, "Makefile"), "\n") {
		if name, rest, ok := strings.Cut(l, ":"); ok && strings.Contains(rest, "## ") && !strings.ContainsAny(name, " \t$") {
			targets = append(targets, name)
		}
	}
	m := regexp.MustCompile("`make help` lists the targets \\(`([^`]*)`").FindStringSubmatch(readDoc(t, "README.md"))
	if m == nil {
		t.Fatal("README.md no longer says \"`make help` lists the targets (`...`\": update this test")
	}
	if listed := strings.Fields(m[1]); !slices.Equal(listed, targets) {
		t.Errorf("README.md lists the make targets %q; make help lists %q", listed, targets)
	}
}

// exitRe finds an exit code quoted in prose: "exit 8", "exits 3",
// "(exit 2, ...". "exit 0"-"exit 255" are codes; what follows a code is
// not read.
var exitRe = regexp.MustCompile(`\bexit(?:s| code| status)? (\d+)\b`)

// TestExitCodesQuoted: every exit code the docs quote is one of
// internal/exitcode's, or the server's own (128 + N for a signal is
// written so, not as a number).
func TestExitCodesQuoted(t *testing.T) {
	known := map[int]bool{}
	for _, c := range exitcode.Table {
		known[c.Code] = true
	}
	for _, f := range docFiles(t) {
		for i, l := range strings.Split(readDoc(t, f), "\n") {
			for _, m := range exitRe.FindAllStringSubmatch(l, -1) {
				if n, _ := strconv.Atoi(m[1]); !known[n] {
					t.Errorf("%s:%d: %q: exit %d is not a code of internal/exitcode (docs/exit-codes.md)", f, i+1, m[0], n)
				}
			}
		}
	}
}

// TestEnvFileExitCodes: docs/clients.md's table of the env files refused,
// each with the launcher's, run and exec's, and client's exit code: each
// file is made here, and handed to each.
func TestEnvFileExitCodes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: the row of a file of another user is made with chown, which only root may do")
	}
	doc := readDoc(t, "docs/clients.md")
	_, table, ok := strings.Cut(doc, "| the env file | `mcpolicy-launch` | `mcpolicy run`, `mcpolicy exec` | `mcpolicy client` |\n|---|---|---|---|\n")
	if !ok {
		t.Fatal("docs/clients.md has no table of the env files refused: update this test")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	dir, home := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	bin := t.TempDir() // client wants a launcher to name: any file will do, none runs
	if err := os.WriteFile(filepath.Join(bin, "mcpolicy-launch"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	policy := "version: \"v1\"\nservers: s1: {\n\timage: \"s1:1\"\n\tbackends: [\"docker\"]\n\tenv: [\"TOK\"]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := runCLI(t, "build", dir); code != 0 {
		t.Fatalf("build: exit %d", code)
	}
	good := filepath.Join(home, "real.env")
	if err := os.WriteFile(good, []byte("TOK=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// make returns an env file of the row's kind.
	makers := []struct {
		row  string
		make func(f string) (string, error)
	}{
		{"lies inside the project", func(string) (string, error) {
			f := filepath.Join(dir, "env")
			return f, os.WriteFile(f, []byte("TOK=x\n"), 0o600)
		}},
		{"symlink", func(f string) (string, error) { return f, os.Symlink(good, f) }},
		{"hard link", func(f string) (string, error) { return f, os.Link(good, f) }},
		{"another user", func(f string) (string, error) {
			if err := os.WriteFile(f, []byte("TOK=x\n"), 0o600); err != nil {
				return "", err
			}
			return f, os.Chown(f, 12345, 12345)
		}},
		{"group or others", func(f string) (string, error) {
			if err := os.WriteFile(f, []byte("TOK=x\n"), 0o600); err != nil {
				return "", err
			}
			return f, os.Chmod(f, 0o640)
		}},
	}
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			continue
		}
		rows++
		what := strings.TrimSpace(cells[0])
		i := slices.IndexFunc(makers, func(m struct {
			row  string
			make func(string) (string, error)
		}) bool {
			return strings.Contains(what, m.row)
		})
		if i < 0 {
			t.Errorf("docs/clients.md: the row %q: this test cannot make such a file; teach it", what)
			continue
		}
		if makers[i].row == "another user" && os.Geteuid() != 0 {
			continue
		}
		f, err := makers[i].make(filepath.Join(t.TempDir(), "env"))
		if err != nil {
			t.Fatal(err)
		}
		var want [3]int
		for j := range want {
			if want[j], err = strconv.Atoi(strings.TrimSpace(cells[j+1])); err != nil {
				t.Fatalf("docs/clients.md: the row %q: %v", what, err)
			}
		}
		got := [3]int{launcherCode(launch.EnvFile{Path: f, Grants: []string{dir}}), 0, 0}
		run, exec := runCLI(t, "run", "-p", dir, "--server", "s1", "--backend", "docker", "--env-file", f), runCLI(t, "exec", "-p", dir, "--server", "s1", "--env-file", f)
		if run != exec {
			t.Errorf("the env file that %s: run exits %d, exec %d: the table gives them one column", what, run, exec)
		}
		got[1] = run
		cfg := filepath.Join(t.TempDir(), "claude_desktop_config.json")
		os.WriteFile(cfg, []byte("{}\n"), 0o644)
		got[2] = runCLI(t, "client", "claude-desktop", "-p", dir, "--file", cfg, "--env-file", f, "--write")
		if got != want {
			t.Errorf("the env file that %s: the launcher, run and exec, client exit %v; docs/clients.md says %v", what, got, want)
		}
	}
	if rows != len(makers) {
		t.Errorf("docs/clients.md's table has %d rows, this test makes %d kinds of file", rows, len(makers))
	}
}

// launcherCode is the launcher's exit code for the env file:
// mcpolicy-launch exits 8 on a *launch.TamperError, 1 on another error.
func launcherCode(f launch.EnvFile) int {
	_, err := f.Load([]string{"TOK"})
	var te *launch.TamperError
	switch {
	case err == nil:
		return exitcode.OK
	case errors.As(err, &te):
		return exitcode.Tampered
	}
	return exitcode.Error
}

// runCLI runs mcpolicy in this process and returns its exit code.
func runCLI(t *testing.T, args ...string) int {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(args, &out, &errb)
	t.Logf("mcpolicy %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return code
}

// launcherSizeRe finds backends.md's sizes of the launcher and of
// mcpolicy: "the small launcher, a 6.3 MB executable, not mcpolicy
// twice, 40 MB".
var launcherSizeRe = regexp.MustCompile(strings.ReplaceAll(`the small launcher, a ([\d.]+) MB executable, not mcpolicy twice, ([\d.]+) MB`, " ", `\s+`))

// TestLauncherSizeQuoted: the sizes backends.md quotes for mcpolicy-launch
// and mcpolicy are within a tenth of what `make build` builds here (go
// build with CGO_ENABLED=0); with -short it is not built.
func TestLauncherSizeQuoted(t *testing.T) {
	m := launcherSizeRe.FindStringSubmatch(readDoc(t, "docs/backends.md"))
	if m == nil {
		t.Fatal("docs/backends.md no longer quotes the launcher's size as this test reads it: update the test")
	}
	if testing.Short() {
		t.Skip("-short: building the two executables takes a while")
	}
	out := t.TempDir()
	for i, pkg := range []string{"mcpolicy-launch", "mcpolicy"} {
		bin := filepath.Join(out, pkg)
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/"+pkg)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/%s: %v\n%s", pkg, err, b)
		}
		fi, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		quoted, _ := strconv.ParseFloat(m[i+1], 64)
		if got := float64(fi.Size()) / 1e6; got < quoted*0.9 || got > quoted*1.1 {
			t.Errorf("docs/backends.md quotes %s at %s MB; `CGO_ENABLED=0 go build` makes it %.1f MB here (%s/%s)", pkg, m[i+1], got, runtime.GOOS, runtime.GOARCH)
		}
	}
}
