package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
)

// TestPolicyFileNotWritable: no read-write source may reach a policy file
// being compiled unless a protected name covers it at the source's top —
// a red team's server, granted "." read-write by a policy built as
// `mcpolicy build policy.cue`, appended to policy.cue; another reached the
// policies through a symlinked mcpolicy.d whose real folder it was granted.
func TestPolicyFileNotWritable(t *testing.T) {
	const refused = "holds the policy file"
	server := func(mount string) string {
		return `version: "v1"` + "\n" + `servers: s: {command: ["true"], backends: ["bwrap"], mounts: [` + mount + `]}` + "\n"
	}
	for _, c := range []struct {
		name  string
		files map[string]string // "-> x" makes a symlink to x
		build string            // what is built: a file or the folder
		want  string            // "" when it compiles
	}{
		{"policy.cue, . rw", map[string]string{"policy.cue": server(`{source: ".", target: "/w", mode: "rw"}`)}, "policy.cue",
			`read-write mount of "." holds the policy file policy.cue, which no protected name covers there`},
		{"policy.cue, . ro", map[string]string{"policy.cue": server(`{source: ".", target: "/w"}`)}, "policy.cue", ""},
		{"policy.cue, the file itself rw", map[string]string{"policy.cue": server(`{source: "policy.cue", target: "/p", mode: "rw"}`)}, "policy.cue", refused},
		{"policy.cue in a rw folder", map[string]string{"conf/policy.cue": server(`{source: ".", target: "/w", mode: "rw"}`)}, "conf/policy.cue", refused},
		{"mcpolicy.cue, . rw", map[string]string{"mcpolicy.cue": server(`{source: ".", target: "/w", mode: "rw"}`)}, ".", ""},
		{"mcpolicy.d/x.cue, the project rw", map[string]string{"mcpolicy.d/x.cue": server(`{source: "..", target: "/w", mode: "rw"}`)}, ".", ""},
		{"a symlinked mcpolicy.d's real folder rw", map[string]string{
			"proj/mcpolicy.d": "-> ../conf",
			"conf/x.cue":      server(`{source: "@DIR@/conf", target: "/c", mode: "rw"}`),
		}, "proj", `read-write mount of "@DIR@/conf" holds the policy file`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range c.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if target, ok := strings.CutPrefix(content, "-> "); ok {
					if err := os.Symlink(target, p); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "@DIR@", dir)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			proj, err := Discover(filepath.Join(dir, c.build))
			if err != nil {
				t.Fatal(err)
			}
			_, err = proj.Compile(t.TempDir())
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(c.want, "@DIR@", dir))):
				t.Errorf("got %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}

// TestPolicyFileGoneBeforeCompile: a policy file that cannot be resolved
// between its read and the compile is an error, not a file the
// policy-file check skips.
func TestPolicyFileGoneBeforeCompile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.cue")
	if err := os.WriteFile(file, []byte(`version: "v1"`+"\n"+`servers: s: {command: ["true"], backends: ["bwrap"], mounts: [{source: ".", target: "/w", mode: "rw"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proj, err := Discover(file)
	if err != nil {
		t.Fatal(err)
	}
	pols, err := proj.Load()
	if err != nil {
		t.Fatal(err)
	}
	os.Rename(file, file+".away")
	_, err = compiler.Compile(pols, compiler.Options{Root: proj.Root, Home: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "cannot be resolved after it was read") {
		t.Fatalf("got %v, want the policy file refused as unresolvable", err)
	}
}
