package entry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
)

// Tests render entries for a mcpolicy at a fixed path (/usr/local/bin):
// the launcher is taken to be installed beside it.
func init() { installed = func(string) bool { return true } }

// TestHostEntriesPinTheArtefact: a bwrap or Landlock entry starts the
// committed artefact through mcpolicy-launch with the artefact's digest; a
// stale artefact, or no launcher beside mcpolicy, writes no entry.
func TestHostEntriesPinTheArtefact(t *testing.T) {
	c, _ := clientcfg.LookupClient("claude-desktop")
	p := seedPlan()
	p.Command = []string{"/usr/bin/node", "/workspace/server.js"}
	p.Scratch = nil
	p.Mounts = []compiler.Mount{{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "src"}, Target: "/workspace", Mode: compiler.ReadOnly}}
	out := t.TempDir()
	spec, err := bwrap.Spec(p)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := landlock.Build(p, compiler.Placeholders{})
	if err != nil {
		t.Fatal(err)
	}
	for backend, data := range map[string][]byte{"bwrap": spec, "landlock": rs.JSON()} {
		file := filepath.Join(out, backend, p.Server+".json")
		os.MkdirAll(filepath.Dir(file), 0o755)
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := LaunchFor(c, p, backend, "/p", "/home/dev", out, "/usr/local/bin/mcpolicy", "", false)
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		n := len(l.Args)
		// Claude Desktop passes no environment: the grant's value comes
		// from the env file.
		if n < 2 || l.Args[0] != "--env-file" || l.Args[1] != "/home/dev/.config/mcpolicy/env" {
			t.Errorf("%s: no --env-file for claude-desktop: %q", backend, l.Args)
		} else {
			l.Args, n = l.Args[2:], n-2
		}
		if l.Command != "/usr/local/bin/mcpolicy-launch" || n < 5 || l.Args[0] != "--project-root" || l.Args[1] != "/p" || l.Args[n-3] != "--sha256" || l.Args[n-1] != file {
			t.Errorf("%s: %s %q %v", backend, l.Command, l.Args, l.Env)
		}
		if !clientcfg.Managed(l.Command, l.Args) {
			t.Errorf("%s: the entry is not recognised as mcpolicy's", backend)
		}
		os.WriteFile(file, append(data, ' '), 0o644)
		if _, err := LaunchFor(c, p, backend, "/p", "/home/dev", out, "/usr/local/bin/mcpolicy", "", false); err == nil || !strings.Contains(err.Error(), "stale") {
			t.Errorf("%s: a stale artefact: %v", backend, err)
		}
	}
	installed = func(string) bool { return false }
	defer func() { installed = func(string) bool { return true } }()
	if _, err := LaunchFor(c, p, "docker", "/p", "/home/dev", out, "/usr/local/bin/mcpolicy", "", false); err == nil || !strings.Contains(err.Error(), "go install ./cmd/...") {
		t.Errorf("no launcher: %v", err)
	}
}

// TestEntryFilesOutsideGrants: an entry is not written where the server
// could rewrite it, or into a launcher it could replace; a protected name
// inside the grant (a project's .mcp.json) is fine.
func TestEntryFilesOutsideGrants(t *testing.T) {
	root := t.TempDir()
	home := t.TempDir()
	m := compiler.Machine{ProjectRoot: root, Home: home}
	p := seedPlan()
	p.Mounts = []compiler.Mount{
		{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/workspace", Mode: compiler.ReadWrite},
		{Source: compiler.HostPath{Base: compiler.Home, Rel: "tools"}, Target: "/tools", Mode: compiler.ReadWrite},
	}
	for f, bad := range map[string]bool{
		filepath.Join(root, ".mcp.json"):                false,
		filepath.Join(root, ".vscode", "mcp.json"):      false,
		filepath.Join(root, "cfg", "mcp.json"):          true,
		filepath.Join(home, "tools", "mcpolicy-launch"): true,
		filepath.Join(home, ".claude.json"):             false,
	} {
		err := CheckOutsideGrants(p, m, map[string]string{"file": f})
		if (err != nil) != bad {
			t.Errorf("%s: got %v, want refused=%v", f, err, bad)
		}
	}
}

// TestPortableHostEntries: in a committed project file (VS Code's
// .vscode/mcp.json) a bwrap or Landlock entry names the project and its
// artefact through ${workspaceFolder}, never this machine's path; check
// reads the artefact back through it.
func TestPortableHostEntries(t *testing.T) {
	c, _ := clientcfg.LookupClient("vscode")
	root := t.TempDir()
	p := seedPlan()
	p.Command = []string{"/usr/bin/node", "/workspace/server.js"}
	p.Scratch = nil
	p.Mounts = []compiler.Mount{{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "src"}, Target: "/workspace", Mode: compiler.ReadOnly}}
	spec, err := bwrap.Spec(p)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, ".mcpolicy")
	file := filepath.Join(out, "bwrap", p.Server+".json")
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, spec, 0o644)
	l, err := LaunchFor(c, p, "bwrap", root, "/home/dev", out, "/usr/local/bin/mcpolicy", "", true)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(l.Args, " ")
	if strings.Contains(joined, root) || !strings.Contains(joined, "--project-root ${workspaceFolder} ") || !strings.HasSuffix(joined, " ${workspaceFolder}/.mcpolicy/bwrap/code-index.json") {
		t.Fatalf("a committed entry names this machine's project: %q", l.Args)
	}
	cfg := filepath.Join(root, ".vscode", "mcp.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	b, err := Merge(cfg, nil, c, p.Server, l, false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfg, b, 0o644)
	ts, err := clientcfg.Read(cfg, "/home/dev")
	if err != nil || len(ts) != 1 || ts[0].Artefact != file {
		t.Fatalf("read back: %v %+v", err, ts)
	}
	if pins := clientcfg.Pins([]*compiler.Plan{p}, ts); len(pins) != 0 {
		t.Errorf("the pinned artefact is not found through ${workspaceFolder}: %+v", pins)
	}
}

// built makes readArtefact find the docker artefact a build writes for p
// under out, without a file: the tests' roots (/p, the goldens') are no
// machine's. An engine entry pins that artefact as a host entry does.
func built(t *testing.T, out string, p *compiler.Plan) {
	t.Helper()
	files, err := docker.Docker.Artefacts(p, "")
	if err != nil {
		t.Fatal(err)
	}
	file, data := filepath.Join(out, "docker", p.Server+".json"), files[0].Data
	plan, planData := filepath.Join(out, "plan", p.Server+".json"), p.JSON()
	prev := readArtefact
	readArtefact = func(path string) ([]byte, error) {
		switch path {
		case file:
			return data, nil
		case plan: // what mcpolicy run entries pin
			return planData, nil
		}
		return prev(path)
	}
	t.Cleanup(func() { readArtefact = prev })
}

// TestEngineEntryUnprotectedFromLabels: an engine entry says the names its
// policy unprotects and the programs it must pin as labels in its run
// arguments (pinned with them), and carries no --unprotect; read back it
// has the policy's names and a pinned program parses, so check sees no
// drift. A --unprotect added by hand, which the launcher refuses, is
// reported as drift (the protection of .git removed), at its position.
func TestEngineEntryUnprotectedFromLabels(t *testing.T) {
	c, _ := clientcfg.LookupClient("claude-code")
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	os.WriteFile(filepath.Join(root, "bin", "x"), []byte("#!/bin/sh\n"), 0o755)
	p := seedPlan()
	p.Mounts = []compiler.Mount{{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/workspace", Mode: compiler.ReadWrite}}
	p.Unprotected = []compiler.Unprotection{{Name: ".git"}}
	p.ProgramPins = []compiler.HostPath{{Base: compiler.ProjectRoot, Rel: "bin/x"}}
	p.Backends = []string{"docker"}
	out := filepath.Join(root, ".mcpolicy")
	built(t, out, p)
	l, err := LaunchFor(c, p, "docker", root, "/home/dev", out, "/usr/local/bin/mcpolicy", "", false)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(l.Args, " ")
	if strings.Contains(joined, "--unprotect") || !strings.Contains(joined, " --label "+docker.LabelUnprotect+"=.git ") ||
		!strings.Contains(joined, " --label "+docker.LabelProgramPin+"="+root+"/bin/x ") || !strings.Contains(joined, "--program-sha256 "+root+"/bin/x=sha256:") {
		t.Fatalf("engine entry: %q", l.Args)
	}
	read := func(args []string) []*readback.Target {
		t.Helper()
		e := *l
		e.Args = args
		cfg := filepath.Join(t.TempDir(), ".mcp.json")
		b, err := Merge(cfg, nil, c, p.Server, &e, false)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(cfg, b, 0o644)
		ts, err := clientcfg.Read(cfg, "/home/dev")
		if err != nil || len(ts) != 1 || ts[0].Plan == nil {
			t.Fatalf("read back: %v %+v", err, ts)
		}
		for _, f := range ts[0].Flags {
			t.Errorf("read back: flagged %s %s", f.Kind, f.Value)
		}
		return ts
	}
	ts := read(l.Args)
	if got := ts[0].Plan.UnprotectedNames(); strings.Join(got, ",") != ".git" {
		t.Errorf("unprotected read back: %q", got)
	}
	if d := clientcfg.Drift([]*compiler.Plan{p}, ts, root); len(d) != 0 {
		t.Errorf("the entry as written drifts: %+v", d)
	}
	hand := append([]string{"--unprotect", ".vscode"}, l.Args...)
	d := clientcfg.Drift([]*compiler.Plan{p}, read(hand), root)
	if len(d) != 1 || d[0].Change.Kind != "UNPROTECT_ADDED" || !strings.Contains(d[0].Change.What, ".vscode") || d[0].Change.Pos.Line == 0 {
		t.Errorf("a hand-added --unprotect: %+v, want UNPROTECT_ADDED .vscode at its position", d)
	}
}
