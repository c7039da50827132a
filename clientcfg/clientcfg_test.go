package clientcfg

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/schema"
)

func readAll(t *testing.T, file, home string) map[string]*readback.Target {
	t.Helper()
	ts, err := Read(file, home)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*readback.Target{}
	for _, tg := range ts {
		if m[tg.Server] != nil {
			t.Fatalf("server %q read twice", tg.Server)
		}
		if tg.File != file || tg.Origin != readback.FromClient || tg.Home != home {
			t.Errorf("%s: File %q Origin %q Home %q", tg.Server, tg.File, tg.Origin, tg.Home)
		}
		m[tg.Server] = tg
	}
	checkPositions(t, file)
	return m
}

// checkPositions: every position a target carries points at the first
// byte of a key, a string or a TOML table name in the original file.
func checkPositions(t *testing.T, file string) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	ts, _ := Read(file, "/home/me")
	check := func(what string, p schema.Pos) {
		if p.File != file || p.Line < 1 || p.Line > len(lines) || p.Col < 1 || p.Col > len(lines[p.Line-1]) {
			t.Errorf("%s: position %v is not in %s", what, p, file)
			return
		}
		if c := lines[p.Line-1][p.Col-1]; c != '"' && !(filepath.Ext(file) == ".toml" && isKeyChar(c)) {
			t.Errorf("%s: position %v points at %q, not at a string or key", what, p, lines[p.Line-1][p.Col-1:])
		}
	}
	for _, tg := range ts {
		check(tg.Server, tg.Pos)
		for _, f := range tg.Flags {
			check(tg.Server+" "+string(f.Kind), f.Pos)
		}
		if tg.Plan != nil {
			for _, m := range tg.Plan.Mounts {
				check(tg.Server+" mount "+m.Target, m.Pos)
			}
		}
	}
}

func isKeyChar(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func at(p schema.Pos) string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// flags renders a target's flags as "kind=value@line:col", sorted.
func flags(tg *readback.Target) []string {
	var out []string
	for _, f := range tg.Flags {
		out = append(out, fmt.Sprintf("%s=%s@%s", f.Kind, f.Value, at(f.Pos)))
	}
	sort.Strings(out)
	return out
}

// kinds renders flags without positions, sorted.
func kinds(tg *readback.Target) []string {
	var out []string
	for _, f := range tg.Flags {
		out = append(out, fmt.Sprintf("%s=%s", f.Kind, f.Value))
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func mounts(p *compiler.Plan) []string {
	var out []string
	for _, m := range p.Mounts {
		out = append(out, fmt.Sprintf("%s:%s:%s", m.Source.Placeholder(), m.Target, m.Mode))
	}
	return out
}

func TestClaudeDesktopAcceptance(t *testing.T) {
	ts := readAll(t, "testdata/claude_desktop_config.json", "/Users/me")
	g := ts["github"]
	if g == nil || g.Launcher != "docker" || at(g.Pos) != "3:5" || g.ProjectRoot != "" {
		t.Fatalf("github: %+v", g)
	}
	p := g.Plan
	if p == nil {
		t.Fatal("github: no plan")
	}
	want := []compiler.Mount{{Source: compiler.HostPath{Base: compiler.Home, Rel: "."}, Target: "/home/me", Mode: compiler.ReadWrite,
		Pos: schema.Pos{File: g.File, Line: 5, Col: 39}}}
	if !reflect.DeepEqual(p.Mounts, want) {
		t.Errorf("mounts = %+v, want %+v", p.Mounts, want)
	}
	if p.Image != "mcp/github" || len(p.Command) != 0 || !slices.Equal(p.EnvNames(), []string{"GITHUB_TOKEN"}) {
		t.Errorf("image %q command %q env %q", p.Image, p.Command, p.Env)
	}
	if s := p.Subtractions; s.NoNetwork || s.ReadOnlyRoot || s.DropAllCaps || s.NoNewPrivileges || s.NonRootUser || p.Network.Mode == "none" {
		t.Errorf("subtractions %+v network %+v", s, p.Network)
	}
	wantFlags := sorted(
		"secret-inline=GITHUB_TOKEN@5:65",
		"network=bridge@5:16",
		"no-cap-drop=@5:16",
		"no-read-only=@5:16",
		"no-new-privs=@5:16",
		"root-user=@5:16",
	)
	if got := flags(g); !slices.Equal(got, wantFlags) {
		t.Errorf("flags:\n got %q\nwant %q", got, wantFlags)
	}

	fs := ts["fs"]
	if fs.Launcher != "npx" || fs.Plan != nil {
		t.Errorf("fs: launcher %q plan %v", fs.Launcher, fs.Plan)
	}
	if got, want := flags(fs), sorted("unconfined=npx@8:18", "secret-inline=GITHUB_PERSONAL_ACCESS_TOKEN@10:15",
		"unconfined-secret=npx runs unconfined on the host and is handed the secret GITHUB_PERSONAL_ACCESS_TOKEN (env GITHUB_PERSONAL_ACCESS_TOKEN)@10:47"); !slices.Equal(got, want) {
		t.Errorf("fs flags: got %q want %q", got, want)
	}

	r := ts["remote"]
	if r.Remote != "https://mcp.example.com/sse" || r.Plan != nil || len(r.Flags) != 0 || r.Launcher != "" {
		t.Errorf("remote: %+v", r)
	}

	if w := ts["wrapped"]; w.Launcher != "mcpolicy" || w.Plan != nil || len(w.Flags) != 0 {
		t.Errorf("wrapped: %+v", w)
	}
}

func TestSandboxExec(t *testing.T) {
	ts := readAll(t, "testdata/claude_desktop_config.json", "/Users/me")
	bad := ts["seatbelt-bad"]
	if bad.Launcher != "sandbox-exec" || bad.Plan != nil {
		t.Fatalf("seatbelt-bad: %+v", bad)
	}
	var msgs []string
	for _, f := range bad.Flags {
		if f.Kind != readback.FlagSeatbeltFinding || at(f.Pos) != "15:22" {
			t.Errorf("flag %+v", f)
		}
		msgs = append(msgs, f.Value)
	}
	for _, want := range []string{
		`profiles/bad.sb:3:8: (allow file-write*) without a filter grants it everywhere`,
		`profiles/bad.sb:4:36: param "PROXY" is not defined by the invocation (-D PROXY=...)`,
		`profiles/bad.sb:1:1: no (deny default): everything not denied is allowed`,
	} {
		if !slices.Contains(msgs, want) {
			t.Errorf("no finding %q in %q", want, msgs)
		}
	}
	if len(msgs) != 3 {
		t.Errorf("findings: %q", msgs)
	}
	if good := ts["seatbelt-good"]; len(good.Flags) != 0 {
		t.Errorf("seatbelt-good: %q", flags(good))
	}
}

func TestVSCodeJSONC(t *testing.T) {
	file := filepath.Join("testdata", "vscode", ".vscode", "mcp.json")
	ts := readAll(t, file, "/home/me")
	root, _ := filepath.Abs(filepath.Join("testdata", "vscode"))

	idx := ts["index"]
	if idx == nil || at(idx.Pos) != "9:5" || idx.ProjectRoot != root {
		t.Fatalf("index: %+v (project root want %s)", idx, root)
	}
	// -e TOKEN=${input:token}: VS Code expands the password input into
	// docker's argv (issue 35).
	if got := flags(idx); !slices.Equal(got, []string{"secret-in-argv=the secret input token@21:15"}) {
		t.Errorf("index flags: %q", got)
	}
	p := idx.Plan
	wantMount := compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/workspace",
		Mode: compiler.ReadOnly, Pos: schema.Pos{File: file, Line: 19, Col: 20}}
	if len(p.Mounts) != 1 || !reflect.DeepEqual(p.Mounts[0], wantMount) {
		t.Errorf("mounts %+v", p.Mounts)
	}
	if p.Scratch == nil || *p.Scratch != (compiler.Scratch{Target: "/tmp", SizeBytes: 64 << 20, Pos: schema.Pos{File: file, Line: 20, Col: 20}}) {
		t.Errorf("scratch %+v", p.Scratch)
	}
	if !slices.Equal(p.EnvNames(), []string{"TOKEN"}) || at(p.Env[0].Pos) != "21:15" {
		t.Errorf("env %+v", p.Env)
	}
	if p.User != (compiler.User{UID: 1000, GID: 1000}) || at(p.UserPos) != "18:19" {
		t.Errorf("user %v at %v", p.User, p.UserPos)
	}
	if p.Network.Mode != "none" || at(p.Network.Pos) != "14:22" || p.Image != "img:1" {
		t.Errorf("network %+v image %q", p.Network, p.Image)
	}
	want := compiler.Subtractions{NoNetwork: true, ReadOnlyRoot: true, DropAllCaps: true, NoNewPrivileges: true, NonRootUser: true}
	if p.Subtractions != want {
		t.Errorf("subtractions %+v", p.Subtractions)
	}

	git := ts["git"]
	if got := flags(git); git.Launcher != "uvx" || !slices.Equal(got, []string{"unconfined=uvx@27:18"}) || at(git.Pos) != "25:5" {
		t.Errorf("git: launcher %q flags %q pos %v", git.Launcher, got, git.Pos)
	}
	if h := ts["http"]; h.Remote != "https://api.example.com/mcp" || at(h.Pos) != "30:5" {
		t.Errorf("http: %+v", h)
	}
}

func TestZed(t *testing.T) {
	ts := readAll(t, "testdata/zed/settings.json", "/home/me")
	old := ts["old-style"]
	if old.Launcher != "bwrap" || at(old.Pos) != "4:5" || old.Plan == nil {
		t.Fatalf("old-style: %+v", old)
	}
	want := sorted(
		"unbounded-tmpfs=/tmp@8:94",
		"bwrap-share-net=@9:35",
		"bwrap-no-new-session=@7:17",
		"bwrap-no-die-with-parent=@7:17",
	)
	if got := flags(old); !slices.Equal(got, want) {
		t.Errorf("old-style flags:\n got %q\nwant %q", got, want)
	}
	if got := mounts(old.Plan); !slices.Equal(got, []string{"/usr:/usr:ro", "${HOME}/proj:/work:rw"}) {
		t.Errorf("old-style mounts %q", got)
	}
	if at(old.Plan.Mounts[1].Pos) != "8:47" || !slices.Equal(old.Plan.Command, []string{"node", "/work/server.js"}) || old.Plan.Network.Mode == "none" {
		t.Errorf("old-style plan %+v", old.Plan)
	}

	ns := ts["new-style"]
	if got := flags(ns); ns.Launcher != "node" || !slices.Equal(got, sorted("unconfined=node@13:30", "secret-inline=API_KEY@13:69",
		"unconfined-secret=node runs unconfined on the host and is handed the secret API_KEY (env API_KEY)@13:80")) {
		t.Errorf("new-style: %q %q", ns.Launcher, got)
	}
	if ext := ts["extension"]; ext.Launcher != "zed-extension" || !slices.Equal(flags(ext), []string{"unconfined=zed-extension@14:5"}) {
		t.Errorf("extension: %+v", ext)
	}
	if r := ts["remote"]; r.Remote != "https://zed.example.com/mcp" {
		t.Errorf("remote: %+v", r)
	}
	if len(ts) != 4 {
		t.Errorf("%d targets", len(ts))
	}
}

func TestCodexTOML(t *testing.T) {
	file := filepath.Join("testdata", "codex", ".codex", "config.toml")
	ts := readAll(t, file, "/home/me")
	root, _ := filepath.Abs(filepath.Join("testdata", "codex"))

	g := ts["github"]
	if g == nil || at(g.Pos) != "3:14" || g.Launcher != "podman" || g.ProjectRoot != root {
		t.Fatalf("github: %+v", g)
	}
	if got := flags(g); !slices.Equal(got, []string{ // Codex runs podman without a shell: ~ reaches it as written
		"env-not-passed=GITHUB_PERSONAL_ACCESS_TOKEN@6:9", // env goes to podman, not into the container: no -e
		"home-unexpanded=~/src:/src:ro,Z reaches podman as written: no client expands ~ (there is no shell): podman refuses the mount and the server does not start@5:148",
		"secret-inline=GITHUB_PERSONAL_ACCESS_TOKEN@6:9"}) {
		t.Errorf("github flags %q", got)
	}
	p := g.Plan
	if got := mounts(p); len(got) != 0 { // podman refuses ~/src, a volume name with a slash: no mount is made
		t.Errorf("mounts %q at %v", got, p.Mounts)
	}
	want := compiler.Subtractions{NoNetwork: true, ReadOnlyRoot: true, DropAllCaps: true, NoNewPrivileges: true, NonRootUser: true}
	if p.Subtractions != want || at(p.Network.Pos) != "5:50" || p.Image != "ghcr.io/github/github-mcp-server" {
		t.Errorf("plan %+v", p)
	}
	if d := ts["docs"]; d.Remote != "https://docs.example.com/mcp" || at(d.Pos) != "8:14" {
		t.Errorf("docs: %+v", d)
	}
	fs := ts["fs"]
	if got := flags(fs); at(fs.Pos) != "11:14" || !slices.Equal(got, []string{"unconfined=npx@12:11"}) {
		t.Errorf("fs: %v %q", fs.Pos, got)
	}
	if q := ts["quoted name"]; q == nil || q.Launcher != "mcpolicy" || at(q.Pos) != "18:14" || len(q.Flags) != 0 {
		t.Errorf("quoted name: %+v", q)
	}
}

func TestDockerAndBwrapFlags(t *testing.T) {
	ts := readAll(t, "testdata/flags/.mcp.json", "/home/me")
	root, _ := filepath.Abs(filepath.Join("testdata", "flags"))
	defaults := []string{"no-cap-drop=", "no-new-privs=", "no-read-only="}
	for _, c := range []struct {
		server string
		flags  []string
		mounts []string
		check  func(t *testing.T, p *compiler.Plan)
	}{
		{"combined", append([]string{"root-user=root", "network=bridge", // -eFOO=bar: a setting, not a secret
			"stdio=-d/--detach: the server is cut off from the client's stdin and stdout",
			"stdio=-t/--tty: a terminal between the client and the server's JSON-RPC (docker refuses -it when the client's stdin is not one; a tty rewrites line ends and echoes)"}, defaults...),
			[]string{"/srv:/srv:rw"}, func(t *testing.T, p *compiler.Plan) {
				if p.Image != "img" || !slices.Equal(p.Command, []string{"cmd", "--flag"}) || p.Workdir != "/app" ||
					p.Subtractions.MemoryBytes != 512<<20 || !slices.Equal(p.EnvNames(), []string{"FOO"}) || p.User.UID != 0 {
					t.Errorf("plan %+v", p)
				}
			}},
		{"unknown", append([]string{"unknown-flag=--frobnicate", "root-user="}, defaults...), nil, nil},
		{"csv", append([]string{"root-user=", "network=bridge"}, defaults...), []string{"${HOME}/a,b:/x:ro"}, func(t *testing.T, p *compiler.Plan) {
			if p.Mounts[0].Source != (compiler.HostPath{Base: compiler.Home, Rel: "a,b"}) {
				t.Errorf("source %+v", p.Mounts[0].Source)
			}
		}},
		{"dangerous", append([]string{
			"stdio=no -i: the engine gives the server no stdin, and it exits at once",
			"privileged=", "cap-add=SYS_ADMIN", "cap-add=NET_ADMIN", "cap-add=NET_RAW",
			"host-namespace=pid", "host-namespace=ipc", "host-namespace=uts", "host-namespace=user",
			"seccomp-unconfined=unconfined", "apparmor-unconfined=unconfined", "security-off=label=disable",
			"unbounded-tmpfs=/scratch", "docker-socket=/var/run/docker.sock", "network=host",
			"host-device=--device /dev/kvm", "root-user=0:0"}, defaults...),
			[]string{"/var/run/docker.sock:/var/run/docker.sock:rw"}, nil},
		{"volumes", append([]string{"root-user=", "network=bridge", // --env=LEVEL=debug: a setting; REF=${GITHUB_TOKEN}: expanded into docker's argv
			"secret-in-argv=the secret variable GITHUB_TOKEN (${GITHUB_TOKEN})"}, defaults...),
			[]string{"${PROJECT_ROOT}/src:/src:ro", "${PROJECT_ROOT}/out:/out:rw"}, func(t *testing.T, p *compiler.Plan) {
				if !slices.Equal(p.EnvNames(), []string{"A", "B", "PLAIN", "LEVEL", "REF"}) {
					t.Errorf("env %q", p.Env)
				}
				if p.Scratch == nil || p.Scratch.Target != "/t" || p.Scratch.SizeBytes != 1<<20 {
					t.Errorf("scratch %+v", p.Scratch)
				}
			}},
		{"bwrap-root", []string{"bwrap-bind-root=--dev-bind / /", "host-device=--dev-bind /", "secret-inline=GH_TOKEN"}, []string{"/:/:rw"}, func(t *testing.T, p *compiler.Plan) {
			if p.Network.Mode != "none" || p.Scratch == nil || p.Scratch.SizeBytes != 1<<20 || !slices.Equal(p.Command, []string{"sh"}) {
				t.Errorf("plan %+v", p)
			}
		}},
		{"not-run", []string{"unknown-flag=docker mcp"}, nil, nil},
		{"global", nil, nil, func(t *testing.T, p *compiler.Plan) {
			if p.Image != "img" || !slices.Equal(p.Command, []string{"--x"}) || p.User != (compiler.User{UID: 1000, GID: 1000}) {
				t.Errorf("plan %+v", p)
			}
		}},
	} {
		t.Run(c.server, func(t *testing.T) {
			tg := ts[c.server]
			if tg == nil {
				t.Fatal("missing")
			}
			if tg.ProjectRoot != root {
				t.Errorf("project root %q", tg.ProjectRoot)
			}
			if got, want := kinds(tg), sorted(c.flags...); !slices.Equal(got, want) {
				t.Errorf("flags:\n got %q\nwant %q", got, want)
			}
			if tg.Plan == nil {
				if c.mounts != nil || c.check != nil {
					t.Fatal("no plan")
				}
				return
			}
			if got := mounts(tg.Plan); !slices.Equal(got, c.mounts) {
				t.Errorf("mounts %q, want %q", got, c.mounts)
			}
			if c.check != nil {
				c.check(t, tg.Plan)
			}
		})
	}
}

// Our own emitted args read back to the plan they came from, flag-free.
func TestOwnDockerArgsRoundTrip(t *testing.T) {
	want := &compiler.Plan{
		Server: "code", Image: "node:22", Command: []string{"node", "/app/server.js"}, Workdir: "/workspace",
		User: compiler.User{UID: 1000, GID: 1000},
		Mounts: []compiler.Mount{
			{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/workspace", Mode: compiler.ReadWrite},
			{Source: compiler.HostPath{Base: compiler.Home, Rel: ".cache/a, \"b\""}, Target: "/cache", Mode: compiler.ReadOnly},
			{Source: compiler.HostPath{Base: compiler.Absolute, Rel: "/opt/data"}, Target: "/data", Mode: compiler.ReadOnly},
		},
		Protected: []compiler.Protected{{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: ".env"}, Target: "/workspace/.env", Name: ".env"}},
		Scratch:   &compiler.Scratch{Target: "/tmp", SizeBytes: 256 << 20},
		Env:       []compiler.EnvGrant{{Name: "API_TOKEN"}, {Name: "LANG"}},
		Network:   compiler.Network{Mode: "none"},
		Subtractions: compiler.Subtractions{NoNetwork: true, ReadOnlyRoot: true, DropAllCaps: true, NoNewPrivileges: true,
			NonRootUser: true, MemoryBytes: 512 << 20, Pids: 128, MilliCPUs: 1500},
		Hash: "sha256:0123",
	}
	args, err := docker.Args(want, compiler.Placeholders{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := map[string]any{"mcpServers": map[string]any{"code": map[string]any{"command": "docker", "args": args}}}
	file := filepath.Join(dir, ".mcp.json")
	writeJSON(t, file, cfg)
	ts, err := Read(file, "/home/me")
	if err != nil {
		t.Fatal(err)
	}
	got := ts[0]
	if len(got.Flags) != 0 {
		t.Errorf("flags on our own args %q:\n%q", flags(got), args)
	}
	p := got.Plan
	for i := range p.Mounts {
		p.Mounts[i].Pos = schema.Pos{}
	}
	p.Scratch.Pos = schema.Pos{}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"image", p.Image, want.Image}, {"command", p.Command, want.Command}, {"workdir", p.Workdir, want.Workdir},
		{"user", p.User, want.User}, {"mounts", p.Mounts, want.Mounts}, {"scratch", *p.Scratch, *want.Scratch},
		{"env", p.EnvNames(), want.EnvNames()}, {"network", p.Network.Mode, want.Network.Mode},
		{"subtractions", p.Subtractions, want.Subtractions}, {"hash", p.Hash, want.Hash},
		{"protected", len(p.Protected), 1},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, c.got, c.want)
		}
	}
	if pr := p.Protected[0]; pr.Source != want.Protected[0].Source || pr.Target != want.Protected[0].Target {
		t.Errorf("protected %+v", pr)
	}
}

func TestHostPaths(t *testing.T) {
	ps := &paths{configDir: "/cfg", projectRoot: "/home/me/proj", home: "/home/me"}
	noProject := &paths{configDir: "/cfg", home: "/home/me"}
	for _, c := range []struct {
		ps   *paths
		raw  string
		want string
	}{
		{ps, "/home/me", "${HOME}"},
		{ps, "/home/me/proj/src", "${PROJECT_ROOT}/src"},
		{ps, "/home/meow", "/home/meow"},
		{ps, "~", "${HOME}"},
		{ps, "~/x/../y", "${HOME}/y"},
		{ps, "$HOME/x", "${HOME}/x"},
		{ps, "${env:HOME}/x", "${HOME}/x"},
		{ps, "${userHome}", "${HOME}"},
		{ps, "${workspaceFolder}", "${PROJECT_ROOT}"},
		{ps, "${workspaceFolder}/..", "${HOME}"},
		{ps, "${CLAUDE_PROJECT_DIR:-.}/a", "${PROJECT_ROOT}/a"},
		{ps, "/x/${workspaceFolderBasename}", "/x/proj"},
		{ps, "./a", "${PROJECT_ROOT}/a"},
		{ps, "${input:dir}", "${input:dir}"},
		{noProject, "${workspaceFolder}/a", "${PROJECT_ROOT}/a"},
		{noProject, "./a", "/cfg/a"},
		{noProject, "/etc", "/etc"},
		{&paths{}, "~/x", "${HOME}/x"},
		{&paths{home: "C:/Users/me"}, `C:\Users\me\src`, "${HOME}/src"},
	} {
		if got := c.ps.hostPath(c.raw).Placeholder(); got != c.want {
			t.Errorf("%+v: hostPath(%q) = %q, want %q", *c.ps, c.raw, got, c.want)
		}
	}
}

func TestSecrets(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        bool
	}{
		{"X", "ghp_0123456789abcdefghij", true},
		{"X", "github_pat_11ABCDEFG0123456789", true},
		{"X", "sk-ant-api03-abcdefghijk", true},
		{"X", "xoxb-1234-5678-abcdef", true},
		{"X", "AKIAIOSFODNN7EXAMPLE", true},
		{"X", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", true},
		{"X", "q8Zr2LwT5vN0pXy7KjH3mB6c", true},
		{"API_KEY", "abc", true},
		{"DB_PASSWORD", "hunter2", true},
		{"GITHUB_TOKEN", "${GITHUB_TOKEN}", false},
		{"GITHUB_TOKEN", "${input:token}", false},
		{"GITHUB_TOKEN", "$GITHUB_TOKEN", false},
		{"GITHUB_TOKEN", "<your token>", false},
		{"GITHUB_TOKEN", "YOUR_TOKEN_HERE", false},
		{"GITHUB_TOKEN", "", false},
		{"LOG_LEVEL", "debug", false},
		{"GIT_AUTHOR_NAME", "Me", false},
		{"ROOT", "/Users/me/projects/some-long-folder-name", false},
		{"MODEL", "claude-sonnet-4-20250514", false},
		{"Authorization", "Bearer ${TOKEN}", false},
		{"Authorization", "Bearer abc123", true},
		{"X-API-Key", "k1", true},
		{"X", "d41d8cd98f00b204e9800998ecf8427e", true},
	} {
		if got := looksLikeSecret(c.name, c.value); got != c.want {
			t.Errorf("looksLikeSecret(%q, %q) = %v, want %v", c.name, c.value, got, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, src, want string
	}{
		{"bad.json", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"args\": []}\n  }\n}\n", "bad.json:3:26: not valid JSON"},
		{"args.json", "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n \"args\": \"-y pkg\"}}}", `args.json:2:10: mcpServers.a.args must be an array, not a string`},
		{"entry.json", "{\"servers\": {\"a\": []}}", `entry.json:1:19: servers.a must be an object, not an array`},
		{"none.json", "{\"mcpServers\": {\"a\": {\"env\": {}}}}", `none.json:1:17: mcpServers.a: server has neither "command" nor "url"`},
		{"bad.toml", "[mcp_servers.a]\ncommand = \"x\"\ncommand = \"y\"\n", "bad.toml:3:1: not valid TOML"},
	} {
		file := filepath.Join(dir, c.name)
		if err := os.WriteFile(file, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(file, "/home/me")
		var se *schema.Error
		if err == nil || !errors.As(err, &se) || !strings.HasPrefix(strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)), c.want) {
			t.Errorf("%s: error %v, want prefix %q", c.name, err, c.want)
		}
	}
}

func TestNoServersAndOtherShapes(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		src  string
		want []string
	}{
		{`{"theme": "dark"}`, nil},
		{"\xef\xbb\xbf{\"mcpServers\": {\"a\": {\"command\": \"node\"}}}", []string{"a:node@1:17"}},
		{`{"mcp": {"servers": {"v": {"command": "deno"}}}}`, []string{"v:deno@1:22"}},
		{`{"mcpServers": [{"name": "c", "command": "python3"}]}`, []string{"c:python3@1:17"}},
		{`{"projects": {"/home/me/p": {"mcpServers": {"l": {"command": "bunx"}}}}, "mcpServers": {"u": {"command": "node"}}}`,
			[]string{"u:node@1:89", "l:bunx@1:45"}},
	} {
		file := filepath.Join(dir, "c.json")
		if err := os.WriteFile(file, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		ts, err := Read(file, "/home/me")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tg := range ts {
			got = append(got, fmt.Sprintf("%s:%s@%s", tg.Server, tg.Launcher, at(tg.Pos)))
			if tg.Server == "l" && tg.ProjectRoot != "/home/me/p" {
				t.Errorf("l: project root %q", tg.ProjectRoot)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.src, got, c.want)
		}
	}
}

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range []string{".mcp.json", ".vscode/mcp.json", ".codex/config.toml", ".cursor/other.json"} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := Discover(dir)
	want := []string{filepath.Join(dir, ".mcp.json"), filepath.Join(dir, ".vscode", "mcp.json"), filepath.Join(dir, ".codex", "config.toml")}
	if !slices.Equal(got, want) {
		t.Errorf("Discover = %q, want %q", got, want)
	}
}

func TestProjectOf(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"/p/.mcp.json", "/p"},
		{"/p/.vscode/mcp.json", "/p"},
		{"/home/me/.cursor/mcp.json", ""},
		{"/home/me/.gemini/settings.json", ""},
		{"/p/.gemini/settings.json", "/p"},
		{"/home/me/Library/Application Support/Claude/claude_desktop_config.json", ""},
		{"/p/.vscode/settings.json", ""},
	} {
		if got := projectOf(c.file, "/home/me"); got != c.want {
			t.Errorf("projectOf(%q) = %q, want %q", c.file, got, c.want)
		}
	}
}

func writeJSON(t *testing.T, file string, v any) {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCommandString(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.json")
	writeJSON(t, file, map[string]any{"mcpServers": map[string]any{
		"s": map[string]any{"command": "docker run -i --rm --network none img"},
		"p": map[string]any{"command": `C:\Program Files\nodejs\node.exe`},
	}})
	ts, err := Read(file, "/home/me")
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range ts {
		switch tg.Server {
		case "s":
			if tg.Launcher != "docker" || tg.Plan == nil || tg.Plan.Image != "img" || tg.Plan.Network.Mode != "none" {
				t.Errorf("s: %+v", tg)
			}
		case "p":
			if tg.Launcher != "node" || !slices.Equal(kinds(tg), []string{"unconfined=node"}) {
				t.Errorf("p: %+v", tg)
			}
		}
	}
}

// TestByteOrderMarkReadPast: a file that starts with a byte-order mark (an
// editor on Windows writes one) is read, linted and written alike in every
// format, and a position on line 1 does not count the mark.
func TestByteOrderMarkReadPast(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"claude_desktop_config.json": "\ufeff{\"mcpServers\": {\"a\": {\"command\": \"uvx\", \"args\": [\"x\"]}}}\n",
		"config.toml":                "\ufeff[mcp_servers.a]\ncommand = \"uvx\"\nargs = [\"x\"]\n",
	} {
		file := dir + "/" + name
		ts, err := parse(file, []byte(src), "/home/dev", false)
		if err != nil || len(ts) != 1 || ts[0].Server != "a" {
			t.Errorf("%s: %v %v", name, ts, err)
		}
	}
	for name, tc := range map[string]struct{ src, want string }{
		"c.json": {"\ufeff{\"mcpServers\": x}", "c.json:1:16:"},
		"c.toml": {"\ufeffa = = 1\n", "c.toml:1:5:"},
	} {
		_, err := parse(name, []byte(tc.src), "/home/dev", false)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "ï") {
			t.Errorf("%s: %v, want %s...", name, err, tc.want)
		}
	}
}
