package bwrap

import (
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
