package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHashSource: the key changes with a source file, go.mod or an
// embedded .cue file, and not with a test, a doc or testdata.
func TestHashSource(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hash := func() string {
		t.Helper()
		h, err := hashSource(root)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	write("go.mod", "module m\n")
	write("cmd/x/main.go", "package main\nfunc main() {}\n")
	write("schema/policy.cue", "a: 1\n")
	h := hash()
	for _, f := range [][2]string{
		{"cmd/x/main_test.go", "package main\n"},
		{"README.md", "hi\n"},
		{"cmd/x/testdata/y.go", "package y\n"},
		{".git/HEAD", "ref\n"},
		{"bin/x", "binary"},
	} {
		write(f[0], f[1])
		if got := hash(); got != h {
			t.Errorf("writing %s changed the key", f[0])
		}
	}
	for _, f := range [][2]string{
		{"cmd/x/main.go", "package main\nfunc main() { println() }\n"},
		{"go.mod", "module m\n\ngo 1.26\n"},
		{"schema/policy.cue", "a: 2\n"},
		{"cmd/x/extra.go", "package main\n"},
	} {
		write(f[0], f[1])
		got := hash()
		if got == h {
			t.Errorf("writing %s left the key as it was", f[0])
		}
		h = got
	}
}

// TestPathOnce: a second call returns the same binary without building.
func TestPathOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpolicy-launch (when not cached): not under -short")
	}
	p1, err := Path(LaunchPkg)
	if err != nil {
		t.Fatal(err)
	}
	fi1, err := os.Stat(p1)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Path("cmd/mcpolicy-launch")
	if err != nil {
		t.Fatal(err)
	}
	fi2, err := os.Stat(p2)
	if err != nil {
		t.Fatal(err)
	}
	if p1 != p2 || !os.SameFile(fi1, fi2) {
		t.Errorf("two builds: %s, %s", p1, p2)
	}
}
