// Package golden runs the mcpolicy CLI end to end over the archives in
// testdata/ and compares everything it prints and writes with the archive.
//
// Each testdata/NAME.txtar is one case; its leading comment says what the case
// proves. Every file whose name does not start with want/ is an input: it is
// written into a fresh temp dir, the project root (files under home/ land in
// $HOME, another temp dir: a home inside the project would be held by every
// mount of the project, and ~/.config/mcpolicy with it). There the harness
// runs `mcpolicy build .` and, if that exits 0, `mcpolicy explain -p . --list-protected` (every
// absent protected name, not their count, so the list is held too). The want/ sections are the
// expected results:
//
//	want/exit      build's exit code
//	want/stdout    build's stdout
//	want/stderr    build's stderr
//	want/explain   explain's stdout (only when build exits 0)
//	want/out/PATH  each file build wrote under .mcpolicy/
//
// A missing or extra want/ section fails, as does any byte of difference.
// Every case also checks that a second build is identical, that
// `build --check .` exits 0 after a successful build, and that no output
// contains the temp dir's path.
//
// After a deliberate change, rewrite the want/ sections and review the diff:
//
//	MCPOLICY_UPDATE=1 go test ./golden/
package golden

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/cmd/mcpolicy/cli"
	"github.com/rogpeppe/go-internal/diff"
	"github.com/rogpeppe/go-internal/txtar"
)

const wantPrefix = "want/"

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.txtar archives")
	}
	for _, f := range files {
		abs, err := filepath.Abs(f) // the cases chdir
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) { runCase(t, abs) })
	}
}

func runCase(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir, home := t.TempDir(), t.TempDir()
	var inputs []txtar.File
	want := map[string][]byte{}
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, wantPrefix) {
			want[f.Name] = f.Data
			continue
		}
		if !filepath.IsLocal(f.Name) {
			t.Fatalf("input %q is not a local path", f.Name)
		}
		inputs = append(inputs, f)
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if rest, ok := strings.CutPrefix(f.Name, "home/"); ok {
			p = filepath.Join(home, filepath.FromSlash(rest))
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Chdir(dir)

	got := build(t)
	again := build(t)
	compare(t, "second build", got, again)
	if string(got["want/exit"]) == "0\n" {
		if code, stdout, stderr := run("build", "--check", "."); code != 0 {
			t.Errorf("build --check after build: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		code, stdout, stderr := run("explain", "-p", ".", "--list-protected")
		if code != 0 || stderr != "" {
			t.Errorf("explain after a successful build: exit %d\nstderr:\n%s", code, stderr)
		}
		got["want/explain"] = []byte(stdout)
	}
	noLeak(t, dir, got)
	noLeak(t, home, got)

	if os.Getenv("MCPOLICY_UPDATE") == "1" {
		for _, name := range sortedKeys(got) {
			if b := got[name]; len(b) > 0 && b[len(b)-1] != '\n' {
				t.Errorf("%s does not end in a newline; txtar cannot hold it exactly", name)
			}
			inputs = append(inputs, txtar.File{Name: name, Data: got[name]})
		}
		ar.Files = inputs
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	compare(t, "archive", want, got)
}

// build runs `mcpolicy build .` and returns its results as want/ sections.
func build(t *testing.T) map[string][]byte {
	code, stdout, stderr := run("build", ".")
	got := map[string][]byte{
		"want/exit":   fmt.Appendf(nil, "%d\n", code),
		"want/stdout": []byte(stdout),
		"want/stderr": []byte(stderr),
	}
	err := filepath.WalkDir(".mcpolicy", func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == ".mcpolicy" {
			return fs.SkipAll
		}
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		b, err := os.ReadFile(p)
		got[wantPrefix+"out/"+filepath.ToSlash(strings.TrimPrefix(p, ".mcpolicy"+string(filepath.Separator)))] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = cli.Run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// compare reports every section missing from, extra in or different in got.
func compare(t *testing.T, what string, want, got map[string][]byte) {
	t.Helper()
	names := map[string]bool{}
	for n := range want {
		names[n] = true
	}
	for n := range got {
		names[n] = true
	}
	for _, n := range sortedKeys(names) {
		w, inWant := want[n]
		g, inGot := got[n]
		switch {
		case !inGot:
			t.Errorf("%s: %s expected but not produced", what, n)
		case !inWant:
			t.Errorf("%s: %s produced but not expected:\n%s", what, n, g)
		case !bytes.Equal(w, g):
			t.Errorf("%s: %s differs:\n%s", what, n, diff.Diff("want", w, "got", g))
		}
	}
}

// noLeak fails when an output holds a path of this machine.
func noLeak(t *testing.T, dir string, got map[string][]byte) {
	t.Helper()
	paths := []string{dir}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		paths = append(paths, real)
	}
	for _, name := range sortedKeys(got) {
		for _, p := range paths {
			if bytes.Contains(got[name], []byte(p)) {
				t.Errorf("%s contains the machine path %s:\n%s", name, p, got[name])
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
