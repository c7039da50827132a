package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/schema"
)

func compileSrc(t *testing.T, src string, files ...string) ([]*Plan, string, error) {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(root, "mcpolicy.cue")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := schema.Load(file, root)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := Compile([]*schema.Policy{pol}, Options{Root: root, Home: filepath.Join(root, "home")})
	return plans, root, err
}

func TestHostPaths(t *testing.T) {
	cases := map[string]HostPath{
		".":            {ProjectRoot, "."},
		"./src/../lib": {ProjectRoot, "lib"},
		"~":            {Home, "."},
		"~/.cache/x":   {Home, ".cache/x"},
		"/opt/data":    {Absolute, "/opt/data"},
		"/opt//data/":  {Absolute, "/opt/data"},
	}
	for src, want := range cases {
		plans, _, err := compileSrc(t, `version: "v1"
servers: s: {image: "x", mounts: [{source: "`+src+`", target: "/w"}]}`)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := plans[0].Mounts[0].Source; got != want {
			t.Errorf("%s: got %+v, want %+v", src, got, want)
		}
	}
}

func TestRefusals(t *testing.T) {
	cases := map[string]string{
		`mounts: [{source: "../up", target: "/w"}]`:                                  "escapes the project root",
		`mounts: [{source: "~/../etc", target: "/w"}]`:                               "leaves the home folder",
		`mounts: [{source: "~bob/x", target: "/w"}]`:                                 "~user is not supported",
		`mounts: [{source: "/", target: "/w", mode: "rw"}]`:                          "read-write mount of the host's /",
		`mounts: [{source: "a\nb", target: "/w"}]`:                                   "control character",
		`mounts: [{source: ".", target: "/w/../x"}]`:                                 "is not clean",
		`mounts: [{source: ".", target: "/"}]`:                                       "replace the whole root",
		`mounts: [{source: ".", target: "/proc/x"}]`:                                 "reserved for the runtime",
		`mounts: [{source: "a", target: "/w"}, {source: "b", target: "/w"}]`:         "already used",
		`scratch: {target: "/w", size: "1m"}, mounts: [{source: ".", target: "/w"}]`: "already used",
		`env: ["A", "A"]`:      "listed twice",
		`user: "0:4294967296"`: "invalid user",
	}
	for body, want := range cases {
		_, _, err := compileSrc(t, `version: "v1"
servers: s: {image: "x", `+body+`}`)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s\ngot %v\nwant an error containing %q", body, err, want)
		}
	}
}

func TestProtectedPathsInsideRWMounts(t *testing.T) {
	plans, _, err := compileSrc(t, `version: "v1"
servers: s: {image: "x", mounts: [{source: ".", target: "/w", mode: "rw"}, {source: "ro", target: "/r"}], unprotect: [".vscode"]}`,
		".git/config", ".git/hooks/pre-commit", ".env", ".env.local", ".vscode/settings.json", "ro/.env")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range plans[0].Protected {
		got = append(got, p.Target+"="+p.Source.Placeholder())
	}
	want := []string{
		"/w/.env=${PROJECT_ROOT}/.env", "/w/.env.local=${PROJECT_ROOT}/.env.local",
		"/w/.git/config=${PROJECT_ROOT}/.git/config", "/w/.git/hooks=${PROJECT_ROOT}/.git/hooks",
		"/w/mcpolicy.cue=${PROJECT_ROOT}/mcpolicy.cue",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("protected:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// .vscode is unprotected (a counted grant); the ro mount needs no protection.
	var kinds []string
	for _, g := range plans[0].Grants() {
		kinds = append(kinds, string(g.Kind))
	}
	if strings.Join(kinds, ",") != "ro mount,rw mount,unprotect" {
		t.Errorf("grants = %v", kinds)
	}
}

func TestHashIgnoresOrderAndWordingButNotGrants(t *testing.T) {
	hash := func(body string) string {
		plans, _, err := compileSrc(t, `version: "v1"
servers: s: {image: "x", `+body+`}`)
		if err != nil {
			t.Fatal(err)
		}
		return plans[0].Hash
	}
	a := hash(`env: ["A", "B"], mounts: [{source: "a", target: "/a"}, {source: "b", target: "/b"}]`)
	b := hash(`description: "reworded", env: ["B", "A"], mounts: [{source: "b", target: "/b"}, {source: "a", target: "/a"}]`)
	c := hash(`env: ["A", "B"], mounts: [{source: "a", target: "/a", mode: "rw"}, {source: "b", target: "/b"}]`)
	if a != b {
		t.Errorf("reordering or rewording changed the hash: %s vs %s", a, b)
	}
	if a == c {
		t.Errorf("ro -> rw did not change the hash")
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "4k": 4096, "256m": 256 << 20, "2G": 2 << 30} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "1t", "-1", "99999999999999999999g"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
	for b, want := range map[int64]string{1: "1", 1024: "1k", 1536: "1536", 256 << 20: "256m", 1 << 30: "1g"} {
		if got := FormatSize(b); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", b, got, want)
		}
	}
}

// TestSymlinkEscapes: a link inside the project is followed by every
// engine, so the root check and the rw-/ check look through it.
func TestSymlinkEscapes(t *testing.T) {
	for _, c := range []struct{ link, mode, want string }{
		{"/", "rw", "resolves to /, outside the project root"},
		{"/", "ro", "outside the project root"},
		{"/etc", "ro", "outside the project root"},
	} {
		root := t.TempDir()
		if err := os.Symlink(c.link, filepath.Join(root, "escape")); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(root, "mcpolicy.cue")
		os.WriteFile(file, []byte(`version: "v1"
servers: s: {image: "x", mounts: [{source: "escape", target: "/w", mode: "`+c.mode+`"}]}`), 0o644)
		pol, err := schema.Load(file, root)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Compile([]*schema.Policy{pol}, Options{Root: root, Home: root})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("link to %s (%s): got %v, want %q", c.link, c.mode, err, c.want)
		}
	}
}
