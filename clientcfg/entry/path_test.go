package entry

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
)

// pathPlan is the seed plan with PATH granted besides GITHUB_TOKEN (gopls
// finds go on it).
func pathPlan() *compiler.Plan {
	p := seedPlan()
	p.Env = []compiler.EnvGrant{{Name: "GITHUB_TOKEN"}, {Name: "PATH"}}
	return p
}

// TestGrantedPathReachesTheServer (#34): an entry sets a fixed PATH for
// the launcher, which the client hands to the server too; a granted PATH
// must be the user's on every client: passed by the clients that pass
// their environment (the entry sets none, or refers to the client's), and
// read from the env file over the fixed one where the client expands
// nothing.
func TestGrantedPathReachesTheServer(t *testing.T) {
	p := pathPlan()
	built(t, "/p/.mcpolicy", p)
	for _, c := range []struct{ client, wantPath string }{
		{"claude-code", "${PATH}"},
		{"cursor", "${env:PATH}"},
		{"codex", ""}, // env_vars forwards it; a fixed one would win
		{"claude-desktop", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}, // the launcher's; the file's wins
	} {
		cl, err := clientcfg.LookupClient(c.client)
		if err != nil {
			t.Fatal(err)
		}
		l, err := LaunchFor(cl, p, "docker", "/p", "/home/dev", "/p/.mcpolicy", "/usr/local/bin/mcpolicy", "", false)
		if err != nil {
			t.Fatalf("%s: %v", c.client, err)
		}
		if got := l.Env["PATH"]; got != c.wantPath {
			t.Errorf("%s: the entry's PATH is %q, want %q", c.client, got, c.wantPath)
		}
		if c.client == "codex" && !slices.Contains(l.EnvVars, "PATH") {
			t.Errorf("codex: env_vars %q does not forward PATH", l.EnvVars)
		}
		if c.client == "claude-desktop" && EnvFileOf(l) == "" {
			t.Errorf("claude-desktop: no --env-file: %q", l.Args)
		}
	}
	// Without a PATH grant every entry keeps the launcher's fixed PATH.
	q := seedPlan()
	built(t, "/p/.mcpolicy", q)
	cl, _ := clientcfg.LookupClient("codex")
	if l, err := LaunchFor(cl, q, "docker", "/p", "/home/dev", "/p/.mcpolicy", "/usr/local/bin/mcpolicy", "", false); err != nil || !strings.HasPrefix(l.Env["PATH"], "/usr/local/bin:") {
		t.Errorf("codex without a PATH grant: %v %q", err, l.Env)
	}
}

// TestEnvCheckShadowedGrant (#34): check reports an entry whose own env
// sets a granted variable to a fixed value, which the server would get
// instead of the user's, and, where the client expands nothing, a file
// that does not name the granted PATH the launcher would take from it.
func TestEnvCheckShadowedGrant(t *testing.T) {
	root, home, read := envChecker(t, pathPlan())
	envFile := filepath.Join(home, "env")
	entry := func(env, extra string) string {
		return `{"mcpServers": {"code-index": {"command": "/usr/local/bin/mcpolicy-launch", "env": {` + env + `}, "args": [` + extra + `"--engine", "/usr/bin/docker", "--project-root", "` + root + `", "--", "run", "--rm", "-i", "-e", "GITHUB_TOKEN", "-e", "PATH", "img:1"]}}}`
	}
	// Claude Code expands ${PATH}; a fixed value shadows the grant.
	if got := read(".mcp.json", entry(`"PATH": "${PATH}", "GITHUB_TOKEN": "${GITHUB_TOKEN}"`, "")); got != "" {
		t.Errorf("claude code, the client's PATH: %q", got)
	}
	if got := read(".mcp.json", entry(`"PATH": "${PATH}:/opt/bin", "GITHUB_TOKEN": "${GITHUB_TOKEN}"`, "")); got != "" {
		t.Errorf("claude code, the client's PATH extended: %q", got)
	}
	if got := read(".mcp.json", entry(`"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": "${GITHUB_TOKEN}"`, "")); !strings.Contains(got, "env grant PATH is shadowed") {
		t.Errorf("claude code, a fixed PATH: %q", got)
	}
	// Claude Desktop: the entry's fixed PATH is the launcher's; the file's
	// must name the granted one.
	withFile := entry(`"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"`, `"--env-file", "`+envFile+`", `)
	os.WriteFile(envFile, []byte("GITHUB_TOKEN=x\n"), 0o600)
	if got := read("claude_desktop_config.json", withFile); !strings.Contains(got, "has no PATH=... line") {
		t.Errorf("claude desktop, a file without PATH: %q", got)
	}
	os.WriteFile(envFile, []byte("GITHUB_TOKEN=x\nPATH=/home/dev/go/bin:/usr/bin\n"), 0o600)
	if got := read("claude_desktop_config.json", withFile); got != "" {
		t.Errorf("claude desktop, PATH in the file: %q", got)
	}
	// Without the file, nothing but the fixed value reaches the server.
	if got := read("claude_desktop_config.json", entry(`"PATH": "/usr/bin"`, "")); !strings.Contains(got, "env grant PATH is shadowed") {
		t.Errorf("claude desktop, no file: %q", got)
	}
}
