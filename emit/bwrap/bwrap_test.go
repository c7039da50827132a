package bwrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
)

func plan() *compiler.Plan {
	root := compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}
	return &compiler.Plan{
		Server: "s", Command: []string{"/usr/bin/server", "--stdio"}, Workdir: "/w",
		User:      compiler.User{UID: 1000, GID: 1000},
		Network:   compiler.Network{Mode: "none"},
		Runtime:   compiler.Runtime{Name: "system", ReadOnly: []string{"/usr", "/etc/ld.so.cache"}},
		Mounts:    []compiler.Mount{{Source: root, Target: "/w", Mode: compiler.ReadWrite}},
		Protected: []compiler.Protected{{Source: root.Join(".git/config"), Target: "/w/.git/config", Name: ".git/config"}},
		Scratch:   &compiler.Scratch{Target: "/tmp", SizeBytes: 1 << 20},
		Env:       []compiler.EnvGrant{{Name: "TOKEN"}},
		Hash:      "sha256:00",
	}
}

func TestArgsOrder(t *testing.T) {
	a, err := Args(plan(), compiler.Placeholders{}, Merged, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s ...string) int {
		for i := range a {
			if slices.Equal(a[i:min(i+len(s), len(a))], s) {
				return i
			}
		}
		t.Fatalf("%q not in %q", s, a)
		return -1
	}
	steps := []int{
		at("--unshare-all"), at("--clearenv"), at("--proc", "/proc"),
		at("--ro-bind", "/usr", "/usr"), at("--symlink", "usr/lib", "/lib"),
		at("--size", "1048576", "--tmpfs", "/tmp"), at("--bind", "${PROJECT_ROOT}", "/w"),
		at("--ro-bind", "${PROJECT_ROOT}/.git/config", "/w/.git/config"),
		at("--remount-ro", "/"), at("--chdir", "/w"), at("--", "/usr/bin/server", "--stdio"),
	}
	if !slices.IsSorted(steps) {
		t.Errorf("out of order (%v):\n%q", steps, a)
	}
	for i := range a[:len(a)-1] {
		if (a[i] == "--bind" || a[i] == "--ro-bind") && a[i+1] == "/" {
			t.Errorf("binds the host's root: %q", a)
		}
	}
	if slices.Contains(a, "--share-net") || slices.Contains(a, "TOKEN") {
		t.Errorf("args share the network or carry an env name without the wrapper: %q", a)
	}
}

func TestNonMergedUsr(t *testing.T) {
	a, _ := Args(plan(), compiler.Placeholders{}, Layout{MergedUsr: false}, 0)
	line := strings.Join(a, " ")
	if strings.Contains(line, "--symlink") || !strings.Contains(line, "--ro-bind-try /lib64 /lib64") {
		t.Errorf("non-merged layout: %s", line)
	}
}

// TestWrapperRunsUnderSh runs the wrapper with a stand-in bwrap that records
// its argv, what arrived on --args' descriptor, and its stdin: paths with
// shell metacharacters arrive intact, env values never appear in argv, and
// stdin still reaches the server.
func TestWrapperRunsUnderSh(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	fake := `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done > "$OUT/argv"
cat <&4 > "$OUT/fd4"
cat > "$OUT/stdin"
`
	os.WriteFile(filepath.Join(bin, "bwrap"), []byte(fake), 0o755)
	script, err := Wrapper(plan(), "../..")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "s.sh")
	os.WriteFile(wrapper, script, 0o755)

	root := filepath.Join(dir, `my "proj" $HOME 'x'`)
	secret := `a b"c$d'e`
	cmd := exec.Command("/bin/sh", wrapper)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "OUT=" + dir, "PROJECT_ROOT=" + root, "TOKEN=" + secret, "HOME=/h"}
	cmd.Stdin = strings.NewReader("{\"jsonrpc\":\"2.0\"}\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wrapper: %v\n%s\n%s", err, out, script)
	}
	argv, _ := os.ReadFile(filepath.Join(dir, "argv"))
	fd4, _ := os.ReadFile(filepath.Join(dir, "fd4"))
	stdin, _ := os.ReadFile(filepath.Join(dir, "stdin"))
	if !strings.Contains(string(argv), "--bind\n"+root+"\n/w\n") || !strings.Contains(string(argv), root+"/.git/config\n") {
		t.Errorf("project path did not arrive intact:\n%s", argv)
	}
	if strings.Contains(string(argv), secret) {
		t.Errorf("an env value is in argv:\n%s", argv)
	}
	if string(fd4) != "--setenv\x00TOKEN\x00"+secret+"\x00" {
		t.Errorf("--args fd carried %q", fd4)
	}
	if string(stdin) != "{\"jsonrpc\":\"2.0\"}\n" {
		t.Errorf("stdin did not reach bwrap: %q", stdin)
	}
}
