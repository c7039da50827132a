package launch_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// TestEnginePinnedRefusesAHandEdit: an engine entry's inline arguments run
// only when they are word for word what the pinned artefact expands to; a
// --mount added by hand, a flag changed, a word removed, an entry pinning
// no artefact, a root that is not the artefact's project (the arguments
// expanded to match), are refused (exit 8) with the way back. The plan's own
// arguments, expanded as the entry writer expands them, run.
func TestEnginePinnedRefusesAHandEdit(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	file := filepath.Join(root, ".mcpolicy", "docker", "s.json")
	os.MkdirAll(filepath.Dir(file), 0o755)
	data := []byte(`["run", "--rm", "-i", "--network", "none", "--user", "${UID}:${GID}",
	  "--mount", "type=bind,source=${PROJECT_ROOT}/src,target=/workspace",
	  "--mount", "type=bind,source=${HOME}/.cache/x,target=/cache,readonly",
	  "--label", "org.mcpolicy.plan=sha256:00", "img:1"]`)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	digest := artefact.Digest(data)
	plan := []string{"run", "--rm", "-i", "--network", "none", "--user", "${UID}:${GID}",
		"--mount", "type=bind,source=" + root + "/src,target=/workspace",
		"--mount", "type=bind,source=" + home + "/.cache/x,target=/cache,readonly",
		"--label", "org.mcpolicy.plan=sha256:00", "img:1"}
	got, err := launch.EnginePinned(file, digest, root, home+"/", plan)
	if err != nil || strings.Join(got, " ") != strings.Join(plan, " ") {
		t.Fatalf("the plan's own arguments: %q %v", got, err)
	}
	// The writer's expansion is the launcher's.
	if w, err := artefact.EngineArgs(data, root, home); err != nil || strings.Join(w, " ") != strings.Join(plan, " ") {
		t.Fatalf("EngineArgs: %q %v", w, err)
	}
	edit := func(f func([]string) []string) []string { return f(append([]string{}, plan...)) }
	for name, c := range map[string]struct {
		args       []string
		file, hash string
		says       string
	}{
		"a --mount added": {args: edit(func(a []string) []string {
			return append(a[:7], append([]string{"--mount", "type=bind,source=" + home + ",target=/h,readonly"}, a[7:]...)...)
		}), says: "word 9 is \"type=bind,source=" + home + ",target=/h,readonly\""},
		"a flag changed":   {args: edit(func(a []string) []string { a[4] = "host"; return a }), says: `word 5 is "host", the plan's is "none"`},
		"a word removed":   {args: edit(func(a []string) []string { return a[:len(a)-1] }), says: `"img:1", is missing`},
		"a word appended":  {args: edit(func(a []string) []string { return append(a, "sh") }), says: `"sh", is not in the plan`},
		"a mount widened":  {args: edit(func(a []string) []string { a[10] = strings.TrimSuffix(a[10], ",readonly"); return a }), says: "word 11"},
		"no --sha256":      {args: plan, file: "-", says: "pins no artefact"},
		"another artefact": {args: plan, hash: artefact.Digest([]byte("[]")), says: "has been modified"},
		"another root":     {args: plan, file: "root", says: "is not the project of the pinned artefact"},
	} {
		a, h, r := file, digest, root
		switch c.file {
		case "-":
			a, h = "", ""
		case "root": // the root edited, the arguments expanded to match
			r = filepath.Dir(root)
			c.args, _ = artefact.EngineArgs(data, r, home)
		}
		if c.hash != "" {
			h = c.hash
		}
		_, err := launch.EnginePinned(a, h, r, home, c.args)
		var te *launch.TamperError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want a refusal saying %s", name, err, c.says)
			continue
		}
		if c.hash == "" && !strings.Contains(err.Error(), "mcpolicy client TARGET --write") {
			t.Errorf("%s: no way back: %v", name, err)
		}
	}
}

// TestPinnedRoot: a pinned launch (bwrap, Landlock, the engines) runs only
// at its artefact's own project; any other root — the home, a parent, a
// sibling — is refused with exit 8's error, spelled as the entry spells it
// or not (a trailing slash, a . component).
func TestPinnedRoot(t *testing.T) {
	proj := t.TempDir()
	file := filepath.Join(proj, ".mcpolicy", "bwrap", "s.json")
	for _, ok := range []string{proj, proj + "/", proj + "/."} {
		if err := launch.PinnedRoot(file, ok); err != nil {
			t.Errorf("root %q: %v", ok, err)
		}
	}
	for _, bad := range []string{filepath.Dir(proj), "/", filepath.Join(proj, "src"), proj + "-other", ""} {
		err := launch.PinnedRoot(file, bad)
		var te *launch.TamperError
		if !errors.As(err, &te) {
			t.Errorf("root %q: %v, want a TamperError", bad, err)
		}
	}
}

// TestEngineRequiredFromPinnedArgs: what the launcher enforces beyond the
// engine's arguments comes from their labels, verified with them: a
// program the artefact requires pinned is refused when the entry's
// --program-sha256 was removed by hand (exit 8), and runs with it; the
// unprotected names are the labels'; a --unprotect flag is refused.
func TestEngineRequiredFromPinnedArgs(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	file := filepath.Join(root, ".mcpolicy", "docker", "s.json")
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "bin", "x"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := []byte(`["run", "--rm", "-i", "--network", "none",
	  "--mount", "type=bind,source=${PROJECT_ROOT},target=/workspace",
	  "--label", "org.mcpolicy.plan=sha256:00",
	  "--label", "org.mcpolicy.unprotect=.git",
	  "--label", "org.mcpolicy.pin=${PROJECT_ROOT}/bin/x", "img:1", "/workspace/bin/x"]`)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	inline, err := artefact.EngineArgs(data, root, home)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(inline, "org.mcpolicy.pin="+root+"/bin/x") {
		t.Fatalf("the pin label is not expanded as the mounts are: %q", inline)
	}
	args, err := launch.EnginePinned(file, artefact.Digest(data), root, home, inline)
	if err != nil {
		t.Fatal(err)
	}
	unprotected, required := launch.EngineRequired(args)
	if strings.Join(unprotected, ",") != ".git" || strings.Join(required, ",") != root+"/bin/x" {
		t.Fatalf("EngineRequired: %q %q", unprotected, required)
	}
	var te *launch.TamperError
	if err := launch.CheckPrograms(required, nil, root, home); !errors.As(err, &te) || !strings.Contains(err.Error(), "--program-sha256") {
		t.Errorf("the entry's --program-sha256 removed by hand: %v, want a refusal", err)
	}
	d, err := launch.ProgramDigest(filepath.Join(root, "bin", "x"), root, home)
	if err != nil {
		t.Fatal(err)
	}
	if err := launch.CheckPrograms(required, []string{artefact.ProgramPin(filepath.Join(root, "bin", "x"), d)}, root, home); err != nil {
		t.Errorf("the entry's pin: %v", err)
	}
	if err := launch.UnprotectFlags([]string{".git"}); !errors.As(err, &te) || !strings.Contains(err.Error(), "mcpolicy client TARGET --write") {
		t.Errorf("--unprotect .git on the entry: %v, want a refusal with the way back", err)
	}
	if err := launch.UnprotectFlags(nil); err != nil {
		t.Error(err)
	}
}
