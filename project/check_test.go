package project

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// checkFixture builds a project with a bwrap server and a docker server
// and returns it with its home (a temp folder: the user-scope files).
func checkFixture(t *testing.T) (CheckOptions, string) {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	policy := `version: "v1"
servers: {
	tool: {
		command: ["/usr/bin/true"]
		mounts: [{source: "src", target: "/src"}]
		backends: ["bwrap"]
	}
	idx: {
		image: "idx:1"
		mounts: [{source: "src", target: "/src"}]
		backends: ["docker"]
	}
}
`
	if err := os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	proj, plans, files := build(t, dir, home)
	if err := Write(filepath.Join(dir, DefaultOut), files, nil); err != nil {
		t.Fatal(err)
	}
	return CheckOptions{Project: proj, Plans: plans, Home: home}, dir
}

// entries writes a client file holding the mcpolicy-launch entries of the
// fixture's two servers (as `mcpolicy client` writes them), edit applied
// to the engine's inline arguments, under key (~/.claude.json:
// "projects" per folder, or the user's "mcpServers").
func entries(t *testing.T, o CheckOptions, file string, perProject bool, edit func([]string) []string) {
	t.Helper()
	root := o.Project.Root
	spec := filepath.Join(root, DefaultOut, "bwrap", "tool.json")
	sb, _ := os.ReadFile(spec)
	art := filepath.Join(root, DefaultOut, "docker", "idx.json")
	db, _ := os.ReadFile(art)
	run, err := artefact.EngineArgs(db, root, o.Home)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		run = edit(run)
	}
	servers := map[string]any{
		"tool": map[string]any{"command": "/usr/local/bin/mcpolicy-launch",
			"args": []string{"--project-root", root, "--bwrap", "/usr/bin/bwrap", "--sha256", artefact.Digest(sb), spec}},
		"idx": map[string]any{"command": "/usr/local/bin/mcpolicy-launch",
			"args": append([]string{"--engine", "/usr/bin/docker", "--project-root", root, "--sha256", artefact.Digest(db), art, "--"}, run...)},
	}
	doc := map[string]any{"mcpServers": servers}
	if perProject {
		doc = map[string]any{"projects": map[string]any{root: map[string]any{"mcpServers": servers}}}
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	os.MkdirAll(filepath.Dir(file), 0o755)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func rules(r *CheckResult) string {
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, f.Rule)
	}
	return strings.Join(ids, " ")
}

// TestCheckComparesArtefactsAsBuildCheck: an artefact edited by hand, with
// the entry's digest re-pinned to match, runs the edit: the entry is
// consistent with its file, so only comparing the file with its policy
// (as `build --check`) sees it — check reports it tampered.
func TestCheckComparesArtefactsAsBuildCheck(t *testing.T) {
	o, dir := checkFixture(t)
	cfg := filepath.Join(dir, ".mcp.json")
	entries(t, o, cfg, false, nil)
	if r, err := CheckClients(o); err != nil || r.Drift || len(r.Unread) > 0 {
		t.Fatalf("as written: %v %v", err, r.Lines)
	}
	spec := filepath.Join(dir, DefaultOut, "bwrap", "tool.json")
	b, _ := os.ReadFile(spec)
	os.WriteFile(spec, []byte(strings.Replace(string(b), `"/src"`, `"/src2"`, 1)), 0o644)
	entries(t, o, cfg, false, nil) // the digest re-pinned
	r, err := CheckClients(o)
	if err != nil || !r.Tamper || !strings.Contains(rules(r), ArtefactTampered) || strings.Contains(rules(r), PinTampered) {
		t.Errorf("an edited artefact, re-pinned: %v %s\n%s", err, rules(r), strings.Join(r.Lines, "\n"))
	}
}

// TestCheckReadsUserScopeFiles: with no --client, check reads the
// user-scope files too (here ~/.claude.json's entries for this project and
// for every project): a --mount added by hand to an engine entry there is
// drift; another project's entries are that project's; a server's entry
// replaced by a hand-written bwrap command is mcpolicy's no more — reported.
func TestCheckReadsUserScopeFiles(t *testing.T) {
	o, _ := checkFixture(t)
	user := filepath.Join(o.Home, ".claude.json")
	for _, perProject := range []bool{true, false} {
		entries(t, o, user, perProject, nil)
		if r, err := CheckClients(o); err != nil || r.Drift {
			t.Fatalf("as written (per project %v): %v %v", perProject, err, r.Lines)
		}
		entries(t, o, user, perProject, func(a []string) []string {
			return append(a[:1], append([]string{"--mount", "type=bind,source=" + o.Home + ",target=/h,readonly"}, a[1:]...)...)
		})
		r, err := CheckClients(o)
		if err != nil || !r.Drift || !strings.Contains(strings.Join(r.Lines, "\n"), ".claude.json") {
			t.Errorf("a --mount added in ~/.claude.json (per project %v): %v %s\n%s", perProject, err, rules(r), strings.Join(r.Lines, "\n"))
		}
	}
	// Another project's entry of the same name is not this project's.
	entries(t, o, user, false, nil)
	b, _ := os.ReadFile(user)
	os.WriteFile(user, []byte(`{"projects": {"/elsewhere": {"mcpServers": {"tool": {"command": "bwrap", "args": ["--bind", "/", "/", "/usr/bin/true"]}}}}}`), 0o644)
	if r, err := CheckClients(o); err != nil || r.Drift {
		t.Errorf("another project's entry: %v %v", err, r.Lines)
	}
	// A hand-written bwrap command in place of the entry.
	var doc map[string]any
	json.Unmarshal(b, &doc)
	doc["mcpServers"].(map[string]any)["tool"] = map[string]any{"command": "bwrap", "args": []string{"--ro-bind", "/", "/", "/usr/bin/true"}}
	b, _ = json.Marshal(doc)
	os.WriteFile(user, b, 0o644)
	r, err := CheckClients(o)
	if err != nil || !r.Drift || !strings.Contains(rules(r), Unmanaged) || !strings.Contains(strings.Join(r.Lines, "\n"), "--force") {
		t.Errorf("a hand-written bwrap entry: %v %s\n%s", err, rules(r), strings.Join(r.Lines, "\n"))
	}
	// A launcher entry pinning an artefact written elsewhere (its digest
	// matching) runs what no policy is compared with.
	entries(t, o, user, false, nil)
	b, _ = os.ReadFile(user)
	doc = nil
	json.Unmarshal(b, &doc)
	spec := filepath.Join(o.Project.Root, DefaultOut, "bwrap", "tool.json")
	sb, _ := os.ReadFile(spec)
	elsewhere := filepath.Join(t.TempDir(), "tool.json")
	os.WriteFile(elsewhere, []byte(strings.Replace(string(sb), `"/src"`, `"/src2"`, 1)), 0o644)
	eb, _ := os.ReadFile(elsewhere)
	doc["mcpServers"].(map[string]any)["tool"] = map[string]any{"command": "/usr/local/bin/mcpolicy-launch",
		"args": []string{"--project-root", o.Project.Root, "--sha256", artefact.Digest(eb), elsewhere}}
	b, _ = json.Marshal(doc)
	os.WriteFile(user, b, 0o644)
	r, err = CheckClients(o)
	if err != nil || !r.Drift || !strings.Contains(rules(r), Unmanaged) || !strings.Contains(strings.Join(r.Lines, "\n"), "not the server's own artefact") {
		t.Errorf("an entry pinning an artefact elsewhere: %v %s\n%s", err, rules(r), strings.Join(r.Lines, "\n"))
	}
	// Given files only, the user's are not read.
	o.Clients = []string{filepath.Join(o.Project.Root, "mcpolicy.cue.json")}
	if r, _ := CheckClients(o); strings.Contains(rules(r), Unmanaged) {
		t.Errorf("--client given: the user's files were read: %v", r.Lines)
	}
}
