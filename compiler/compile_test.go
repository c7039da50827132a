package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/protect"

	"github.com/mcpolicy/mcpolicy/schema"
)

// compileSrc compiles src in a fresh project holding files: "name" is an
// empty file, "name/" a folder, "name -> target" a symlink. @ROOT@ in src
// and in link targets is the project's resolved path.
func compileSrc(t *testing.T, src string, files ...string) ([]*Plan, string, error) {
	t.Helper()
	return compileWith(t, Options{}, src, files...)
}

func compileWith(t *testing.T, opt Options, src string, files ...string) ([]*Plan, string, error) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The home lies outside the project and the folder above it, as
	// usually: a mount holding it holds ~/.config/mcpolicy (see
	// TestEnvFolder). "~/name" in files is made there.
	home := opt.Home
	if home == "" {
		if home, err = os.MkdirTemp("", "home"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		if home, err = filepath.EvalSymlinks(home); err != nil {
			t.Fatal(err)
		}
		opt.Home = home
	}
	for _, f := range files {
		f = strings.ReplaceAll(f, "@ROOT@", root)
		// "name (x)": executable; "name (#!)": a script with a #! line.
		f, exec := strings.CutSuffix(f, " (x)")
		f, shebang := strings.CutSuffix(f, " (#!)")
		name, target, link := strings.Cut(f, " -> ")
		p := filepath.Join(root, name)
		if rest, ok := strings.CutPrefix(name, "~/"); ok {
			p = filepath.Join(home, rest)
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		switch {
		case link:
			err = os.Symlink(target, p)
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		case exec:
			err = os.WriteFile(p, nil, 0o755)
		case shebang:
			err = os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644)
		default:
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(root, "mcpolicy.cue")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(src, "@ROOT@", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := schema.Load(file, root)
	if err != nil {
		t.Fatal(err)
	}
	if opt.Root == "" {
		opt.Root = root
	}
	plans, err := Compile([]*schema.Policy{pol}, opt)
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
		// NoFS: the home itself holds ~/.config/mcpolicy (TestEnvFolder).
		plans, _, err := compileWith(t, Options{NoFS: true}, `version: "v1"
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
		`mounts: [{source: ".", target: "/.mcpolicy", mode: "rw"}]`:                  `sandbox path "/.mcpolicy" is reserved for mcpolicy`,
		`scratch: {target: "/.mcpolicy", size: "1m"}`:                                `sandbox path "/.mcpolicy" is reserved for mcpolicy`,
		`mounts: [{source: ".", target: "/.mcpolicy/x"}]`:                            `sandbox path "/.mcpolicy/x" is reserved for mcpolicy`,
		`mounts: [{source: "a", target: "/w"}, {source: "b", target: "/w"}]`:         "already used",
		`scratch: {target: "/w", size: "1m"}, mounts: [{source: ".", target: "/w"}]`: "already used",
		`env: ["A", "A"]`: "listed twice",
		`scratch: [{target: "/t", size: "1m"}, {target: "/t/x", size: "1m"}]`:                                        "are nested",
		`scratch: [{target: "/t", size: "1m"}, {target: "/w/x", size: "1m"}], mounts: [{source: ".", target: "/w"}]`: "scratch target /w/x and mount target /w are nested",
		`scratch: [{target: "/t", size: "1m"}, {target: "/u", size: "1m"}], mounts: [{source: ".", target: "/u/w"}]`: "scratch target /u and mount target /u/w are nested",
		`scratch: [` + strings.Repeat(`{size: "1m"}, `, 9) + `]`:                                                     "more than 8 scratch",
		`env: ["A"], setenv: {A: "1"}`:                                    "A is both passed through (env) and set (setenv)",
		`setenv: {HTTPS_PROXY: "http://x:1"}`:                             "HTTPS_PROXY cannot be set by a policy",
		`setenv: {GITHUB_TOKEN: "ghp_` + strings.Repeat("aB3", 12) + `"}`: "looks like a secret",
		`setenv: {API_KEY: "abc"}`:                                        "looks like a secret",
		`setenv: {A: "a\nb"}`:                                             "not one line of printable text",
		`setenv: {A: "a\u0000b"}`:                                         "not one line of printable text",
		`setenv: {A: "${HOME}/x"}`:                                        `holds "${"`,
		`setenv: {A: "` + strings.Repeat("x", 4097) + `"}`:                "more than 4096",
		`user: "0:4294967296"`:                                            "invalid user",
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
servers: s: {image: "x", mounts: [{source: ".", target: "/w", mode: "rw"}, {source: "ro", target: "/r"}, {source: "sub", target: "/s", mode: "rw"}], unprotect: [".vscode"]}`,
		".git/config", ".git/hooks/pre-commit", ".env", ".env.local", ".vscode/settings.json", "ro/.env", "mcpolicy.d/",
		"sub/.claude/settings.json", "sub/.env", "sub/src/.git/config")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range plans[0].Protected {
		got = append(got, p.Target+"="+p.Source.Placeholder()+" "+p.Name)
	}
	// Each as a whole; only top-level entries. The project root (/w) names
	// none: its top level is fixed at launch, where every protected entry
	// present is bound read-only by rule, so the plan does not depend on
	// which exist.
	want := []string{
		"/s/.claude=${PROJECT_ROOT}/sub/.claude .claude", "/s/.env=${PROJECT_ROOT}/sub/.env .env*",
		// and through /w, which holds sub
		"/w/sub/.claude=${PROJECT_ROOT}/sub/.claude .claude", "/w/sub/.env=${PROJECT_ROOT}/sub/.env .env*",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("protected:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The project root's top level is fixed at launch: nothing is absent
	// there. In sub, every unprotected name that is missing, and the globs.
	var absent []string
	for _, a := range plans[0].Absent {
		absent = append(absent, a.Target)
	}
	var wantAbsent []string // every name but those sub has (.claude, .env) or unprotected (.vscode); globs always
	for _, n := range protect.Names {
		if n.Pattern != ".claude" && n.Pattern != ".vscode" {
			wantAbsent = append(wantAbsent, "/s/"+n.Pattern)
		}
	}
	if strings.Join(absent, " ") != strings.Join(wantAbsent, " ") {
		t.Errorf("absent: %v", absent)
	}
	// .vscode is unprotected (a counted grant); the ro mount needs no protection.
	var kinds []string
	for _, g := range plans[0].Grants() {
		kinds = append(kinds, string(g.Kind))
	}
	if strings.Join(kinds, ",") != "ro mount,rw mount,rw mount,unprotect" {
		t.Errorf("grants = %v", kinds)
	}
}

func TestFixedTop(t *testing.T) {
	for _, c := range []struct {
		m    Mount
		want bool
	}{
		{Mount{Source: HostPath{ProjectRoot, "."}, Mode: ReadWrite}, true},
		{Mount{Source: HostPath{ProjectRoot, "."}, Mode: ReadOnly}, false},
		{Mount{Source: HostPath{ProjectRoot, "src"}, Mode: ReadWrite}, false},
		{Mount{Source: HostPath{Home, "."}, Mode: ReadWrite}, false},
	} {
		if got := c.m.FixedTop(); got != c.want {
			t.Errorf("%+v: FixedTop = %v", c.m, got)
		}
	}
}

func TestHashIgnoresOrderAndWordingButNotGrants(t *testing.T) {
	hash := func(body string) string {
		plans, _, err := compileSrc(t, `version: "v1"
servers: s: {image: "x", `+body+`}`, "a/", "b/")
		if err != nil {
			t.Fatal(err)
		}
		return plans[0].Hash
	}
	a := hash(`env: ["A", "B"], mounts: [{source: "a", target: "/a"}, {source: "b", target: "/b"}]`)
	// The same sources, rw: the project root's top level is fixed, which
	// the plan does not record (FixedTop is derived from the mount).
	rw := `mounts: [{source: ".", target: "/a", mode: "rw"}]`
	if first, again := hash(rw), hash(rw); first != again {
		t.Errorf("the hash is not deterministic")
	}
	b := hash(`description: "reworded", env: ["B", "A"], mounts: [{source: "b", target: "/b"}, {source: "a", target: "/a"}]`)
	c := hash(`env: ["A", "B"], mounts: [{source: "a", target: "/a", mode: "rw"}, {source: "b", target: "/b"}]`)
	if a != b {
		t.Errorf("reordering or rewording changed the hash: %s vs %s", a, b)
	}
	if a == c {
		t.Errorf("ro -> rw did not change the hash")
	}
}

// TestSourceRefusals: what a server could write must not decide what is
// mounted next, so sources are real paths, read-write ones exist and hold
// no more than the project, and nothing leads into procfs's links.
func TestSourceRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		mount string // the mounts list's body
		extra string // more fields of the server
		files []string
		want  string // "" when it compiles
	}{
		{"symlink to /", `{source: "escape", target: "/w", mode: "rw"}`, "", []string{"escape -> /"},
			`host path "escape": ${PROJECT_ROOT}/escape is a symlink to / (a link is followed when the sandbox starts, and whoever can write its folder can repoint it)` + "\n\thint: write the real path, \"/\", so the review shows what is mounted"},
		{"symlink to /etc, ro", `{source: "escape", target: "/w"}`, "", []string{"escape -> /etc"},
			`${PROJECT_ROOT}/escape is a symlink to /etc`},
		{"symlink inside the project", `{source: "data/x", target: "/w"}`, "", []string{"real/x/", "data -> real"},
			`host path "data/x": ${PROJECT_ROOT}/data is a symlink to real (a link` + "", // hint spells the real path
		},
		{"symlink inside the project: hint", `{source: "data/x", target: "/w"}`, "", []string{"real/x/", "data -> real"}, `hint: write the real path, "real/x"`},
		{"dangling symlink", `{source: "gone", target: "/w"}`, "", []string{"gone -> nowhere"}, `hint: write the path the link points to, or remove the link`},
		{"symlink below home", `{source: "~/cfg", target: "/w"}`, "", []string{"~/cfg -> @ROOT@/real", "real/"}, `host path "~/cfg": ${HOME}/cfg is a symlink to @ROOT@/real`},
		{"symlink in an absolute path", `{source: "@ROOT@/data/x", target: "/w"}`, "", []string{"real/x/", "data -> real"}, `host path "@ROOT@/data/x": @ROOT@/data is a symlink to real`},
		{"the real path", `{source: "real/x", target: "/w", mode: "rw"}`, "", []string{"real/x/", "data -> real"}, ""},
		{"a protected symlink", `{source: ".", target: "/w", mode: "rw"}`, "", []string{".env -> /etc/passwd"},
			`servers.s.mounts[0].source: a protected path must be a real file or folder: ${PROJECT_ROOT}/.env is a symlink to /etc/passwd (if you did not make it, something swapped it in: treat it as tampering)` + "\n\thint: remove it, or add unprotect: [\".env*\"] (a counted grant)"},
		{"a protected symlink, unprotected", `{source: ".", target: "/w", mode: "rw"}`, `unprotect: [".env*"]`, []string{".env -> /etc/passwd"}, ""},
		{"a protected symlink in a ro mount", `{source: ".", target: "/w"}`, "", []string{".git -> /etc"}, ""},
		{"rw holds the project", `{source: "@ROOT@/..", target: "/w", mode: "rw"}`, "", nil,
			`holds the project folder: names are protected only at the top of a mount, so the server could rewrite the project's policies, their .mcpolicy artefacts and .git` + "\n\thint: mount the project (\".\") or a folder inside it; or accept: [\"rw-holds-project\"], a counted grant"},
		{"rw holds the project, accepted", `{source: "@ROOT@/..", target: "/w", mode: "rw"}`, `accept: ["rw-holds-project"]`, nil, ""},
		{"ro holds the project", `{source: "@ROOT@/..", target: "/w"}`, "", nil, ""},
		{"rw project written absolute", `{source: "@ROOT@", target: "/w", mode: "rw"}`, "", nil, `is the project folder written another way`},
		{"rw .git/objects", `{source: ".git/objects", target: "/w", mode: "rw"}`, "", []string{".git/objects/"},
			`servers.s.mounts[0].source: read-write mount of ".git/objects" is inside ".git", a protected name (.git)` + "\n\thint: .git: git reads its config"},
		{"rw .git/objects, unprotected", `{source: ".git/objects", target: "/w", mode: "rw"}`, `unprotect: [".git"]`, []string{".git/objects/"}, ""},
		{"ro .git/objects", `{source: ".git/objects", target: "/w"}`, "", []string{".git/objects/"}, ""},
		{"rw .mcpolicy", `{source: ".mcpolicy", target: "/w", mode: "rw"}`, "", []string{".mcpolicy/"}, `read-write mount of ".mcpolicy" is a protected name (.mcpolicy)`},
		{"rw mcpolicy.d", `{source: "mcpolicy.d", target: "/w", mode: "rw"}`, `unprotect: ["mcpolicy.d"]`, []string{"mcpolicy.d/"}, `read-write mount of "mcpolicy.d" is a protected name (mcpolicy.*)` + "\n\thint: mcpolicy.*:"},
		{"rw nested .git", `{source: "vendor/lib/.git/hooks", target: "/w", mode: "rw"}`, "", []string{"vendor/lib/.git/hooks/"}, `is inside "vendor/lib/.git", a protected name (.git)`},
		{"rw .git absolute", `{source: "@ROOT@/.git", target: "/w", mode: "rw"}`, "", []string{".git/"}, `read-write mount of "@ROOT@/.git" is a protected name (.git)`},
		{"rw missing", `{source: "missing", target: "/w", mode: "rw"}`, "", nil,
			`host path "missing" does not exist: no such file or directory` + "\n\thint: create it first, or mount it read-only"},
		{"rw below a file", `{source: "f/x", target: "/w", mode: "rw"}`, "", []string{"f"}, `host path "f/x" does not exist: not a directory`},
		{"ro missing", `{source: "missing", target: "/w"}`, "", nil, ""},
		{"rw /", `{source: "/", target: "/w", mode: "rw"}`, "", nil, "read-write mount of the host's / is refused"},
		{"home unknown", `{source: "~/x", target: "/w"}`, "", nil, ""}, // home exists in these tests; see TestNoHome
		{"/proc/self/root", `{source: "/proc/self/root", target: "/w"}`, "", nil,
			`host path "/proc/self/root" is refused: the host's /proc holds every process's root`},
		{"/proc/1/cwd", `{source: "/proc/1/cwd/x", target: "/w"}`, "", nil, `is refused: the host's /proc`},
		{"/proc/thread-self", `{source: "/proc/thread-self", target: "/w"}`, "", nil, `is refused: the host's /proc`},
		{"/proc", `{source: "/proc", target: "/w"}`, "", nil, `is refused: the host's /proc`},
		{"/dev/fd", `{source: "/dev/fd/3", target: "/w"}`, "", nil, `host path "/dev/fd/3" is refused: /dev/fd and /dev/std*`},
		{"/dev/stdin", `{source: "/dev/stdin", target: "/w"}`, "", nil, `is refused: /dev/fd and /dev/std*`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, root, err := compileWith(t, Options{}, `version: "v1"
servers: s: {image: "x", mounts: [`+c.mount+`], `+c.extra+`}`, c.files...)
			want := strings.ReplaceAll(c.want, "@ROOT@", root)
			switch {
			case want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("got %v\nwant an error containing %q", err, want)
			}
			if err != nil && !strings.Contains(err.Error(), "mcpolicy.cue:2:") {
				t.Errorf("no position: %v", err)
			}
		})
	}
}

// TestEnvFolder: a source that is, lies in or holds ~/.config/mcpolicy,
// the folder of the launcher's default env file, is refused read-only as
// read-write, written as it is or another way (absolute, through a link
// to ~/.config), at the mount's position.
func TestEnvFolder(t *testing.T) {
	for _, c := range []struct {
		name, mount string
		files       []string
		want        string // "" when it compiles
	}{
		{"the folder, ro", `{source: "~/.config/mcpolicy", target: "/c"}`, []string{"~/.config/mcpolicy/"}, `host path "~/.config/mcpolicy" is ~/.config/mcpolicy, the folder of the env file`},
		{"the folder, rw", `{source: "~/.config/mcpolicy", target: "/c", mode: "rw"}`, []string{"~/.config/mcpolicy/"}, `host path "~/.config/mcpolicy" is ~/.config/mcpolicy`},
		{"the folder, missing", `{source: "~/.config/mcpolicy", target: "/c"}`, nil, `is ~/.config/mcpolicy`},
		{"the file", `{source: "~/.config/mcpolicy/env", target: "/c"}`, []string{"~/.config/mcpolicy/env"}, `host path "~/.config/mcpolicy/env" lies in ~/.config/mcpolicy`},
		{"~/.config, rw", `{source: "~/.config", target: "/c", mode: "rw"}`, []string{"~/.config/"}, ""}, // holds it: lint's MOUNT_CREDENTIALS, client's env file check
		{"~, ro", `{source: "~", target: "/c"}`, nil, ""},
		{"/, ro", `{source: "/", target: "/c"}`, nil, ""},
		{"absolute", `{source: "@HOME@/.config/mcpolicy", target: "/c"}`, []string{"~/.config/mcpolicy/"}, `host path "@HOME@/.config/mcpolicy" is ~/.config/mcpolicy`},
		{"the link's target", `{source: "dotfiles/config/mcpolicy", target: "/c"}`, []string{"dotfiles/config/mcpolicy/", "~/.config -> @ROOT@/dotfiles/config"}, `host path "dotfiles/config/mcpolicy" is ~/.config/mcpolicy`},
		{"the link's target, below", `{source: "dotfiles/config/mcpolicy/env", target: "/c"}`, []string{"dotfiles/config/mcpolicy/env", "~/.config -> @ROOT@/dotfiles/config"}, `lies in ~/.config/mcpolicy`},
		{"a sibling", `{source: "~/.config/gh-tools", target: "/c"}`, []string{"~/.config/gh-tools/", "~/.config/mcpolicy/env"}, ""},
		{"mcpolicyx", `{source: "~/.config/mcpolicyx", target: "/c", mode: "rw"}`, []string{"~/.config/mcpolicyx/"}, ""},
		{"the project", `{source: ".", target: "/w", mode: "rw"}`, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			var files []string
			for _, f := range c.files {
				files = append(files, strings.ReplaceAll(f, "@HOME@", home))
			}
			_, root, err := compileWith(t, Options{Home: home}, `version: "v1"
servers: s: {image: "x", mounts: [`+strings.ReplaceAll(c.mount, "@HOME@", home)+`]}`, files...)
			want := strings.ReplaceAll(strings.ReplaceAll(c.want, "@ROOT@", root), "@HOME@", home)
			switch {
			case want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("got %v\nwant an error containing %q", err, want)
			case want != "" && !strings.Contains(err.Error(), "mcpolicy.cue:2:36: servers.s.mounts[0].source: ") || want != "" && !strings.Contains(err.Error(), "hint: mount a folder outside ~/.config/mcpolicy"):
				t.Errorf("no position or hint: %v", err)
			}
		})
	}
}

// TestBasesBehindSymlinks: the project root and the home may be reached
// through a symlink; only what is below them must be real.
func TestBasesBehindSymlinks(t *testing.T) {
	real := t.TempDir()
	os.MkdirAll(filepath.Join(real, "proj", "src"), 0o755)
	os.MkdirAll(filepath.Join(real, "home", "cache"), 0o755)
	links := t.TempDir()
	os.Symlink(filepath.Join(real, "proj"), filepath.Join(links, "proj"))
	os.Symlink(filepath.Join(real, "home"), filepath.Join(links, "home"))
	root := filepath.Join(links, "proj")
	file := filepath.Join(root, "mcpolicy.cue")
	os.WriteFile(file, []byte(`version: "v1"
servers: s: {image: "x", mounts: [{source: ".", target: "/w", mode: "rw"}, {source: "src", target: "/s", mode: "rw"}, {source: "~/cache", target: "/c", mode: "rw"}]}`), 0o644)
	pol, err := schema.Load(file, root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile([]*schema.Policy{pol}, Options{Root: root, Home: filepath.Join(links, "home")}); err != nil {
		t.Error(err)
	}
}

// TestNoHome: "~/..." cannot be checked without a home folder.
func TestNoHome(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "mcpolicy.cue")
	os.WriteFile(file, []byte(`version: "v1"
servers: s: {image: "x", mounts: [{source: "~/x", target: "/w"}]}`), 0o644)
	pol, err := schema.Load(file, root)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile([]*schema.Policy{pol}, Options{Root: root})
	if err == nil || !strings.Contains(err.Error(), `host path "~/x" cannot be checked: the home folder of this machine is not known`) {
		t.Errorf("got %v", err)
	}
}

// TestNoFS: comparing policies (diff --against) copies them where their
// sources do not exist; what needs no file system is still refused.
func TestNoFS(t *testing.T) {
	for body, want := range map[string]string{
		`{source: "missing", target: "/w", mode: "rw"}`:         "",
		`{source: "link", target: "/w", mode: "rw"}`:            "",
		`{source: "/somewhere/else", target: "/w", mode: "rw"}`: "",
		`{source: "/proc/self/root", target: "/w"}`:             "is refused: the host's /proc",
		`{source: ".git/objects", target: "/w", mode: "rw"}`:    `is inside ".git", a protected name (.git)`,
		`{source: "/", target: "/w", mode: "rw"}`:               "read-write mount of the host's / is refused",
	} {
		_, _, err := compileWith(t, Options{NoFS: true}, `version: "v1"
servers: s: {image: "x", mounts: [`+body+`]}`, "link -> /")
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: got %v, want %q", body, err, want)
		}
	}
}

// TestProtectedThroughAnOuterMount: a protected entry of a rw mount that
// lies inside another rw mount is protected at both paths, or the outer
// one would write it.
func TestProtectedThroughAnOuterMount(t *testing.T) {
	plans, _, err := compileSrc(t, `version: "v1"
servers: s: {image: "x", mounts: [{source: ".", target: "/w", mode: "rw"}, {source: "src/gen", target: "/gen", mode: "rw"}]}`,
		"src/gen/.env", "src/gen/out.txt")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range plans[0].Protected {
		got = append(got, p.Target+"="+p.Source.Placeholder())
	}
	if want := "/gen/.env=${PROJECT_ROOT}/src/gen/.env /w/src/gen/.env=${PROJECT_ROOT}/src/gen/.env"; strings.Join(got, " ") != want {
		t.Errorf("protected: %v, want %s", got, want)
	}
}

// TestEnvFolderXDG: with XDG_CONFIG_HOME set, the launcher's default env
// file is $XDG_CONFIG_HOME/mcpolicy/env (a fourth red team's server of
// another project read and rewrote it there): that folder is refused too.
func TestEnvFolderXDG(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	xdg := filepath.Join(home, "xdg")
	t.Setenv("XDG_CONFIG_HOME", xdg)
	for mount, want := range map[string]string{
		`{source: "` + xdg + `/mcpolicy", target: "/c", mode: "rw"}`: `is $XDG_CONFIG_HOME/mcpolicy, the folder of the env file`,
		`{source: "` + xdg + `/mcpolicy/env", target: "/c"}`:         `lies in $XDG_CONFIG_HOME/mcpolicy`,
		`{source: "` + xdg + `/other", target: "/c"}`:                "",
	} {
		_, _, err := compileWith(t, Options{Home: home}, `version: "v1"
servers: s: {image: "x", mounts: [`+mount+`]}`, "~/xdg/mcpolicy/env", "~/xdg/other/")
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: refused: %v", mount, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want %q", mount, err, want)
		}
	}
}
