package importer

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/schema"
)

// missingFields says which fields of other parts of issue 34 the schema
// on this branch lacks (packs, setenv, "~/" targets): a policy that uses
// one cannot compile until that part is merged.
func missingFields(t *testing.T) []string {
	var missing []string
	src := schema.Source()
	if !bytes.Contains(src, []byte("packs")) {
		missing = append(missing, "packs")
	}
	if !bytes.Contains(src, []byte("setenv")) {
		missing = append(missing, "setenv")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(`version: "v1"
servers: s: {command: ["x"], mounts: [{source: "~/a", target: "~/a"}]}
`), 0o644)
	if proj, err := project.Discover(dir); err == nil {
		if _, err := proj.Compile(t.TempDir()); err != nil {
			missing = append(missing, "~/ targets")
		}
	}
	return missing
}

// uses reports whether a rendered policy uses a field named in missing.
func uses(policy []byte, missing []string) []string {
	var used []string
	for _, m := range missing {
		probe := map[string]string{"packs": "\tpacks: [", "setenv": "\tsetenv: {", "~/ targets": `target: "~`}[m]
		if bytes.Contains(policy, []byte(probe)) {
			used = append(used, m)
		}
	}
	return used
}

// TestImportedPoliciesCompile: every policy import makes of the cases
// compiles and builds (the compiler API build uses), all of a case's in
// one project, as import writes them. A policy using a field another part
// of issue 34 adds (h/envset: setenv and "~/" targets; h/packs: packs) is
// skipped, by name, until that part is merged: merged, none is ("~/"
// targets are compiled as the home's absolute paths meanwhile).
func TestImportedPoliciesCompile(t *testing.T) {
	missing := missingFields(t)
	compiled, waiting := 0, map[string][]string{}
	for _, file := range cases(t) {
		c := loadCase(t, file)
		_, servers := c.run(t)
		dir := t.TempDir()
		n := 0
		for _, s := range servers {
			if s.Policy == nil {
				continue
			}
			data := s.Policy.Render()
			if slices.Contains(missing, "~/ targets") {
				// Until h/envset: the same paths, as this home's, so the rest is compiled.
				data = bytes.ReplaceAll(data, []byte(`"~/`), []byte(`"`+c.home+`/`))
			}
			if u := uses(data, missing); len(u) > 0 {
				waiting[strings.Join(u, ", ")] = append(waiting[strings.Join(u, ", ")], s.Entry)
				continue
			}
			if _, err := WritePolicy(dir, s.Policy.Server, data, false, "", nil); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n == 0 {
			continue
		}
		proj, err := project.Discover(dir)
		if err != nil {
			t.Fatal(err)
		}
		plans, err := proj.Compile(c.home)
		if err != nil {
			t.Errorf("%s: the imported policies do not compile:\n%v", file, err)
			continue
		}
		if _, err := project.Artefacts(plans); err != nil {
			t.Errorf("%s: the imported policies do not build: %v", file, err)
		}
		compiled += len(plans)
	}
	for fields, entries := range waiting {
		t.Logf("NOT COMPILED until %s is on this branch (h/envset, h/packs): %s", fields, strings.Join(entries, ", "))
	}
	if compiled == 0 {
		t.Skipf("no imported policy compiles without %s: merge h/envset and h/packs", strings.Join(missing, ", "))
	}
}

// TestGoBinary: a Go binary found on PATH is read by its build info: a
// static one runs with runtime "static" and is granted itself (static
// binds no /usr); a known one (its module path in Shapes) gets its
// shape's grants.
func TestGoBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("ELF only")
	}
	home := t.TempDir()
	goBuild(t, "github.com/mark3labs/mcp-filesystem-server", ".", filepath.Join(home, "go", "bin", "mcp-filesystem-server"))
	goBuild(t, "github.com/modelcontextprotocol/go-sdk", "examples/server/memory", filepath.Join(home, "go", "bin", "memory"))
	data := filepath.Join(home, "data")
	os.MkdirAll(data, 0o755)
	os.MkdirAll(filepath.Join(home, "kb"), 0o755)
	cfg := filepath.Join(home, ".codex", "config.toml")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte("[mcp_servers.files]\ncommand = \"mcp-filesystem-server\"\nargs = [\""+data+"\"]\n"+
		"[mcp_servers.memory]\ncommand = \"memory\"\nargs = [\"-memory\", \""+filepath.Join(home, "kb", "memory.json")+"\"]\n"), 0o644)
	c := &importCase{home: home, clients: []string{cfg}}
	_, servers := c.run(t)
	got := c.report(servers)
	for _, want := range []string{
		`runtime: "static"`, `a static Go binary`,
		`{source: "~/go/bin/mcp-filesystem-server", target: "~/go/bin/mcp-filesystem-server"}`,
		`command: ["~/go/bin/mcp-filesystem-server", "$HOME/data"]`,
		`{source: "~/data", target: "~/data", mode: "rw"}`, "mcp-filesystem-server: its tools write_file",
		// The memory example's file does not exist yet: its folder, read-write.
		`{source: "~/kb", target: "~/kb", mode: "rw"}`, "the go-sdk memory example: it saves its knowledge graph",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

// goBuild builds a static binary of a module path whose main package is
// pkg, to out.
func goBuild(t *testing.T, module, pkg, out string) {
	t.Helper()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+module+"\n\ngo 1.21\n"), 0o644)
	os.MkdirAll(filepath.Join(src, pkg), 0o755)
	os.WriteFile(filepath.Join(src, pkg, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	cmd := exec.Command("go", "build", "-o", out, "./"+pkg)
	cmd.Dir, cmd.Env = src, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", module, err, b)
	}
}
