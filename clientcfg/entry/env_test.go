package entry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
)

// TestEnvGrantsPerClient: every target gets the plan's env grant by its
// own mechanism, and never the value: a reference the client expands, Codex's
// env_vars, or --env-file for the launcher where the client has neither.
func TestEnvGrantsPerClient(t *testing.T) {
	lookupEnv = func(string) string { return "" }
	defer func() { lookupEnv = os.Getenv }()
	t.Setenv("GITHUB_TOKEN", "ghp_must_never_be_written")
	want := map[string]string{
		"claude-desktop": "file", "windsurf": "file", "zed": "file", "cline": "file",
		"claude-code": "${GITHUB_TOKEN}", "gemini": "${GITHUB_TOKEN}",
		"cursor": "${env:GITHUB_TOKEN}", "vscode": "${env:GITHUB_TOKEN}",
		"codex": "env_vars",
	}
	built(t, "/p/.mcpolicy", seedPlan())
	for i := range clientcfg.Clients {
		c := &clientcfg.Clients[i]
		l, err := LaunchFor(c, seedPlan(), "docker", "/p", "/home/dev", "/p/.mcpolicy", "/usr/local/bin/mcpolicy", "", false)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		got := l.Env["GITHUB_TOKEN"]
		switch {
		case len(l.EnvVars) > 0 && l.EnvVars[0] == "GITHUB_TOKEN" && got == "":
			got = "env_vars"
		case EnvFileOf(l) == "/home/dev/.config/mcpolicy/env" && got == "":
			got = "file"
		}
		if got != want[c.Name] {
			t.Errorf("%s: GITHUB_TOKEN reaches the server by %q, want %q (%q %v)", c.Name, got, want[c.Name], l.Args, l.Env)
		}
		out, err := Merge("f", nil, c, "code-index", l, false)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "ghp_must_never_be_written") {
			t.Errorf("%s: the value was written", c.Name)
		}
	}
	// --env-file names the file; one inside a grant is refused.
	c, _ := clientcfg.LookupClient("claude-desktop")
	for _, f := range []string{"/p/shop/env", "/p/.env"} {
		if _, err := LaunchFor(c, seedPlan(), "docker", "/p", "/home/dev", "/p/.mcpolicy", "/usr/local/bin/mcpolicy", f, false); err == nil || !strings.Contains(err.Error(), "lies inside") {
			t.Errorf("env file %s: %v", f, err)
		}
	}
	l, err := LaunchFor(c, seedPlan(), "docker", "/p", "/home/dev", "/p/.mcpolicy", "/usr/local/bin/mcpolicy", "/home/dev/secrets/mcp.env", false)
	if err != nil || EnvFileOf(l) != "/home/dev/secrets/mcp.env" {
		t.Errorf("--env-file: %v %q", err, l.Args)
	}
	// XDG_CONFIG_HOME moves the default.
	lookupEnv = func(n string) string {
		if n == "XDG_CONFIG_HOME" {
			return "/home/dev/.cfg"
		}
		return ""
	}
	if l, _ := LaunchFor(c, seedPlan(), "docker", "/p", "/home/dev", "/p/.mcpolicy", "/usr/local/bin/mcpolicy", "", false); EnvFileOf(l) != "/home/dev/.cfg/mcpolicy/env" {
		t.Errorf("XDG_CONFIG_HOME: %q", l.Args)
	}
	// Seatbelt's wrapper reads no env file: refused for such a client.
	if _, err := LaunchFor(c, seedPlan(), "seatbelt", "/p", "/home/dev", "/p/.mcpolicy", "/usr/local/bin/mcpolicy", "", false); err == nil || !strings.Contains(err.Error(), "would reach the server empty") {
		t.Errorf("seatbelt for claude-desktop: %v", err)
	}
	// No env grant: no --env-file.
	p := seedPlan()
	p.Env = nil
	built(t, "/p/.mcpolicy", p)
	if l, _ := LaunchFor(c, p, "docker", "/p", "/home/dev", "/p/.mcpolicy", "/usr/local/bin/mcpolicy", "", false); EnvFileOf(l) != "" {
		t.Errorf("no env grants: %q", l.Args)
	}
}

// TestEnvCheck: check reports an entry whose env grant reaches the server
// empty, and an env file the launcher would refuse.
func TestEnvCheck(t *testing.T) {
	root, home, read := envChecker(t, seedPlan())
	envFile := filepath.Join(home, "env")
	entry := func(extra string) string {
		return `{"mcpServers": {"code-index": {"command": "/usr/local/bin/mcpolicy-launch", "args": [` + extra + `"--engine", "/usr/bin/docker", "--project-root", "` + root + `", "--", "run", "--rm", "-i", "-e", "GITHUB_TOKEN", "img:1"]}}}`
	}
	if got := read("claude_desktop_config.json", entry("")); !strings.Contains(got, "env grant GITHUB_TOKEN gets no value") {
		t.Errorf("no env file: %q", got)
	}
	withFile := entry(`"--env-file", "` + envFile + `", `)
	if got := read("claude_desktop_config.json", withFile); !strings.Contains(got, "will refuse to start") {
		t.Errorf("a missing env file: %q", got)
	}
	os.WriteFile(envFile, []byte("OTHER=1\n"), 0o600)
	if got := read("claude_desktop_config.json", withFile); !strings.Contains(got, "has no GITHUB_TOKEN=... line") {
		t.Errorf("a file without the name: %q", got)
	}
	os.WriteFile(envFile, []byte("GITHUB_TOKEN=x\n"), 0o600)
	if got := read("claude_desktop_config.json", withFile); got != "" {
		t.Errorf("a good env file: %q", got)
	}
	// Clients that pass their environment on, or an entry that names it.
	if got := read(".mcp.json", entry("")); got != "" {
		t.Errorf("claude code: %q", got)
	}
	named := `{"mcpServers": {"code-index": {"command": "/usr/local/bin/mcpolicy-launch", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, "args": ["--engine", "/usr/bin/docker", "--project-root", "` + root + `", "--", "run", "-e", "GITHUB_TOKEN", "img:1"]}}}`
	if got := read(".mcp.json", named); got != "" {
		t.Errorf("named in env, for a client that expands it: %q", got)
	}
	// Claude Desktop expands nothing: the server would get "${GITHUB_TOKEN}".
	if got := read("claude_desktop_config.json", named); !strings.Contains(got, "gets no value") {
		t.Errorf("a reference Claude Desktop does not expand: %q", got)
	}
	codex := "[mcp_servers.code-index]\ncommand = \"/usr/local/bin/mcpolicy-launch\"\nargs = [\"--engine\", \"/usr/bin/docker\", \"--project-root\", \"" + root + "\", \"--\", \"run\", \"-e\", \"GITHUB_TOKEN\", \"img:1\"]\n"
	if got := read("config.toml", codex); !strings.Contains(got, "gets no value") {
		t.Errorf("codex without env_vars: %q", got)
	}
	if got := read("config.toml", codex+"env_vars = [\"GITHUB_TOKEN\"]\n"); got != "" {
		t.Errorf("codex with env_vars: %q", got)
	}
}

// TestEnvFileInAnotherServersGrant: the env file holds every server's
// values, so `mcpolicy client` and `mcpolicy check` refuse one that lies in
// a grant of any server of the project, read-only or read-write, not only
// of the server the entry starts (which the launcher checks), naming the
// file and that server.
func TestEnvFileInAnotherServersGrant(t *testing.T) {
	dir := t.TempDir()
	root, home := filepath.Join(dir, "p"), filepath.Join(dir, "home")
	os.MkdirAll(filepath.Join(root, "shop"), 0o755)
	os.MkdirAll(filepath.Join(home, ".config", "mcpolicy"), 0o700)
	envFile := filepath.Join(home, ".config", "mcpolicy", "env")
	os.WriteFile(envFile, []byte("GITHUB_TOKEN=real-secret\n"), 0o600)
	other := func(name, rel string, mode compiler.Mode) *compiler.Plan {
		return &compiler.Plan{Server: name, Network: compiler.Network{Mode: "none"}, Backends: []string{"docker"},
			Mounts: []compiler.Mount{{Source: compiler.HostPath{Base: compiler.Home, Rel: rel}, Target: "/c", Mode: mode}}}
	}
	for _, c := range []struct {
		name string
		p2   *compiler.Plan
		want string // "" when accepted
	}{
		{"rw the folder", other("s2", ".config/mcpolicy", compiler.ReadWrite),
			`the env file ` + envFile + ` lies inside ` + filepath.Join(home, ".config/mcpolicy") + `, which server "s2" is given read-write: it could read every server's secrets in it, and rewrite what the next launch of each gets`},
		{"ro ~/.config", other("s3", ".config", compiler.ReadOnly),
			`the env file ` + envFile + ` lies inside ` + filepath.Join(home, ".config") + `, which server "s3" is given read-only`},
		{"ro the file", other("s4", ".config/mcpolicy/env", compiler.ReadOnly), `which server "s4" is given read-only`},
		{"elsewhere", other("s5", ".cache", compiler.ReadWrite), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			plans := []*compiler.Plan{seedPlan(), c.p2}
			err := clientcfg.EnvFileOutsideProject(plans, envFile, root, home)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("client: got %v\nwant %q", err, c.want)
			}
			// check reads the entry mcpolicy client wrote for code-index.
			f := filepath.Join(dir, "claude_desktop_config.json")
			os.WriteFile(f, []byte(`{"mcpServers": {"code-index": {"command": "/usr/local/bin/mcpolicy-launch", "args": ["--env-file", "`+envFile+`", "--engine", "/usr/bin/docker", "--project-root", "`+root+`", "--", "run", "--rm", "-i", "-e", "GITHUB_TOKEN", "img:1"]}}}`), 0o644)
			ts, err := clientcfg.Read(f, home)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, u := range clientcfg.EnvCheck(plans, ts, root, home) {
				msgs = append(msgs, u.What)
			}
			got := strings.Join(msgs, "\n")
			if c.want == "" && got != "" || c.want != "" && (!strings.Contains(got, "the env file is refused: ") || !strings.Contains(got, c.want)) {
				t.Errorf("check: got %q\nwant %q", got, c.want)
			}
		})
	}
	if err := clientcfg.EnvFileOutsideProject([]*compiler.Plan{seedPlan()}, filepath.Join(root, "env"), root, home); err == nil || !strings.Contains(err.Error(), "lies inside the project") {
		t.Errorf("in the project: %v", err)
	}
}

// envChecker makes a project and a home, and returns read: it writes a
// client file of that name and returns what EnvCheck says of its entries
// for plan p, one line each.
func envChecker(t *testing.T, p *compiler.Plan) (root, home string, read func(name, content string) string) {
	dir := t.TempDir()
	root, home = filepath.Join(dir, "p"), filepath.Join(dir, "home")
	os.MkdirAll(filepath.Join(root, "shop"), 0o755)
	os.MkdirAll(home, 0o755)
	return root, home, func(name, content string) string {
		t.Helper()
		f := filepath.Join(dir, name)
		os.WriteFile(f, []byte(content), 0o644)
		ts, err := clientcfg.Read(f, home)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []string
		for _, u := range clientcfg.EnvCheck([]*compiler.Plan{p}, ts, root, home) {
			msgs = append(msgs, u.What)
		}
		return strings.Join(msgs, "\n")
	}
}

// TestEnvCheckSetenv (#34): an entry whose own env sets a variable the
// policy sets (setenv) is reported: the server gets the policy's value, not
// the entry's. The client's own PATH for the launcher is not news.
func TestEnvCheckSetenv(t *testing.T) {
	p := seedPlan()
	p.SetEnv = []compiler.EnvValue{{Name: "GOFLAGS", Value: "-mod=readonly"}, {Name: "PATH", Value: "/usr/bin"}}
	root, _, read := envChecker(t, p)
	entry := func(env string) string {
		return `{"mcpServers": {"code-index": {"command": "/usr/local/bin/mcpolicy-launch", "env": {` + env + `}, "args": ["--engine", "/usr/bin/docker", "--project-root", "` + root + `", "--", "run", "--rm", "-i", "-e", "GITHUB_TOKEN", "img:1"]}}}`
	}
	got := read(".mcp.json", entry(`"GOFLAGS": "-mod=mod", "GITHUB_TOKEN": "${GITHUB_TOKEN}"`))
	if !strings.Contains(got, "setenv GOFLAGS is shadowed the other way") || strings.Contains(got, "PATH") {
		t.Errorf("an entry setting GOFLAGS: %q", got)
	}
	if got := read(".mcp.json", entry(`"PATH": "/usr/local/bin:/usr/bin", "GITHUB_TOKEN": "${GITHUB_TOKEN}"`)); got != "" {
		t.Errorf("the launcher's PATH: %q", got)
	}
}
