package entry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
)

// TestPortableEntries: a project's committed file (claude-code, vscode,
// cursor) holds no path of this machine on any backend — not the root,
// the home, the launcher, bwrap, the engine — nor a PATH or engine
// address; a program the entry pins is named relative to the root (or by
// the client's variable), and the entry reads back to the same plan.
// zed's project file, with no variable to name the root by, keeps them.
func TestPortableEntries(t *testing.T) {
	base := t.TempDir()
	root, home := filepath.Join(base, "work", "shop"), filepath.Join(base, "home")
	os.MkdirAll(filepath.Join(root, "shop", "bin"), 0o755)
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(root, "shop", "bin", "server"), []byte("#!/bin/sh\n"), 0o755)
	lookupEnv = func(k string) string { return map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}[k] }
	defer func() { lookupEnv = os.Getenv }()
	p := seedPlan()
	p.Command = []string{"/workspace/bin/server"}
	p.Mounts = append(p.Mounts, compiler.Mount{Source: compiler.HostPath{Base: compiler.Home, Rel: "notes"}, Target: "/notes", Mode: compiler.ReadOnly})
	p.ProgramPins = []compiler.HostPath{{Base: compiler.ProjectRoot, Rel: "shop/bin/server"}}
	out := filepath.Join(root, ".mcpolicy")
	spec, err := bwrap.Spec(p)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := landlock.Build(p, compiler.Placeholders{})
	if err != nil {
		t.Fatal(err)
	}
	dk, err := docker.Docker.Artefacts(p, "")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{filepath.Join(out, "bwrap", p.Server+".json"): spec, filepath.Join(out, "landlock", p.Server+".json"): rs.JSON(),
		filepath.Join(out, "docker", p.Server+".json"): dk[0].Data}
	prev := readArtefact
	readArtefact = func(path string) ([]byte, error) {
		if b, ok := files[path]; ok {
			return b, nil
		}
		return nil, os.ErrNotExist
	}
	defer func() { readArtefact = prev }()
	for _, name := range []string{"claude-code", "vscode", "cursor", "zed"} {
		c, _ := clientcfg.LookupClient(name)
		for _, backend := range []string{"bwrap", "landlock", "docker", "podman"} {
			l, err := launchForTest(c, p, backend, root, home, out)
			if err != nil {
				t.Fatalf("%s %s: %v", name, backend, err)
			}
			b, _ := json.Marshal(l)
			text := string(b)
			machine := strings.Contains(text, base) || strings.Contains(l.Command, "/") || strings.Contains(text, "/usr/") ||
				strings.Contains(text, "/run/user") || l.Env["PATH"] != ""
			if name == "zed" {
				if !machine {
					t.Errorf("zed: the project file has no variable for the root, yet the entry names none: %s", text)
				}
				continue
			}
			if machine {
				t.Errorf("%s %s: a committed entry holds a path of this machine: %s", name, backend, text)
			}
			pin := "./shop/bin/server="
			if c.Workspace != "" {
				pin = "${workspaceFolder}/shop/bin/server="
			}
			if !strings.Contains(text, pin) {
				t.Errorf("%s %s: the program pin is not the project's %s...: %s", name, backend, pin, text)
			}
			if !clientcfg.Managed(l.Command, l.Args) {
				t.Errorf("%s %s: not read as mcpolicy's own entry", name, backend)
			}
		}
	}
}

func launchForTest(c *clientcfg.Client, p *compiler.Plan, backend, root, home, out string) (*Launch, error) {
	return LaunchFor(c, p, backend, root, home, out, "/usr/local/bin/mcpolicy", "", true)
}
