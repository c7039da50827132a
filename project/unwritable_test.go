package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
)

// TestUnwritableGrants (#34): as root with the default user every
// read-write grant owned by root is unwritable, and nothing said so. The
// folder here is owned by whoever runs the test; the plan's user is
// someone else.
func TestUnwritableGrants(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"out", "shared", "open"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(root, "shared"), 0o775)
	os.Chmod(filepath.Join(root, "open"), 0o777)
	me, mygid := os.Getuid(), os.Getgid()
	other := compiler.User{UID: me + 4242, GID: mygid + 4242}
	rw := func(rel string) compiler.Mount {
		return compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: rel}, Target: "/" + rel, Mode: compiler.ReadWrite}
	}
	plans := []*compiler.Plan{
		{Server: "a", User: other, Mounts: []compiler.Mount{rw("out"), rw("open"), rw("missing"),
			{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "shared"}, Target: "/ro", Mode: compiler.ReadOnly}}},
		{Server: "b", User: compiler.User{UID: other.UID, GID: mygid}, Mounts: []compiler.Mount{rw("shared"), rw("out")}},
		{Server: "c", User: compiler.User{Invoker: true}, Mounts: []compiler.Mount{rw("out")}},
		{Server: "d", User: compiler.User{UID: me, GID: mygid}, Mounts: []compiler.Mount{rw("out")}},
	}
	var got []string
	for _, u := range UnwritableGrants(plans, compiler.Machine{ProjectRoot: root, Home: t.TempDir()}) {
		got = append(got, u.Server+" "+filepath.Base(u.Source))
		if !strings.Contains(u.String(), "chown -R") || !strings.Contains(u.String(), `user: "invoker"`) {
			t.Errorf("the message names no fix: %s", u)
		}
	}
	// a: out (0755, another owner); open is 0777; missing and read-only
	// are not its business. b: shared is group-writable for it, out not.
	if want := "a out,b out"; strings.Join(got, ",") != want {
		t.Errorf("unwritable %q, want %q", strings.Join(got, ","), want)
	}
}
