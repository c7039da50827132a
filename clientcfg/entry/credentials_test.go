package entry

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// TestCredentialSourcePassedLikeEnv: an egress entry passes a credential's
// source variable to mcpolicy run the way it passes an env grant's value:
// by the client's reference where it has one, by name to Codex, from the
// env file otherwise; never a value, and a credential alone (no env
// grant) still gets one. A command source needs nothing from the client.
func TestCredentialSourcePassedLikeEnv(t *testing.T) {
	root, out, p, planFile, _, _ := egressEntry(t)
	p.Env = nil
	p.Credentials = []credential.Grant{{Name: "GITHUB_TOKEN", From: credential.Source{Env: "GH_PAT"}, To: []string{"api.github.com:443"},
		As: credential.Injection{Header: "Authorization", Format: "Bearer {}"}}}
	if err := os.WriteFile(planFile, p.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	self := fakeELF(t, false)
	envFile := filepath.Join(t.TempDir(), "env")
	for _, tc := range []struct {
		client  string
		env     string // the entry's GH_PAT
		envVars []string
		file    bool
	}{
		{client: "claude-code", env: "${GH_PAT}"},
		{client: "vscode", env: "${env:GH_PAT}"},
		{client: "gemini", env: "${GH_PAT}"},
		{client: "codex", envVars: []string{"GH_PAT"}},
		{client: "claude-desktop", file: true},
	} {
		c, _ := clientcfg.LookupClient(tc.client)
		l, err := LaunchFor(c, p, "bwrap", root, "/home/dev", out, self, envFile, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.client, err)
		}
		if l.Env["GH_PAT"] != tc.env || !slices.Equal(l.EnvVars, tc.envVars) {
			t.Errorf("%s: env %v, env_vars %v; want GH_PAT=%q, %v", tc.client, l.Env, l.EnvVars, tc.env, tc.envVars)
		}
		if _, ok := l.Env["GITHUB_TOKEN"]; ok {
			t.Errorf("%s: the entry names the server's variable, not the source: %v", tc.client, l.Env)
		}
		if got := EnvFileOf(l) == envFile; got != tc.file {
			t.Errorf("%s: --env-file in %q: %v, want %v", tc.client, l.Args, got, tc.file)
		}
	}

	// The notes say where a client that passes nothing takes the source.
	desktop, _ := clientcfg.LookupClient("claude-desktop")
	var notes strings.Builder
	o := EntriesOptions{Client: desktop, Plans: []*compiler.Plan{p}, Root: root, Home: "/home/dev", OutDir: out, Self: self, EnvFile: envFile, Notes: &notes}
	if _, err := Entries(o); err != nil {
		t.Fatal(err)
	}
	if want := `takes GH_PAT from ` + envFile; !strings.Contains(notes.String(), want) {
		t.Errorf("notes: %q, want %q", notes.String(), want)
	}

	// A command source: nothing to pass, no env file.
	p.Credentials[0].From = credential.Source{Command: []string{"op", "read", "op://v/gh/token"}}
	os.WriteFile(planFile, p.JSON(), 0o644)
	l, err := LaunchFor(desktop, p, "bwrap", root, "/home/dev", out, self, envFile, false)
	if err != nil || EnvFileOf(l) != "" {
		t.Errorf("a command source: %v, args %q, want no --env-file", err, l.Args)
	}
}

// TestEnvCheckCredentialSource: check reads mcpolicy's own egress entries
// as `client` writes them: the credential's source passed by reference,
// or found in the env file, is met; an entry that names neither, or a
// file without the line, is reported at the credential source.
func TestEnvCheckCredentialSource(t *testing.T) {
	root, out, p, planFile, _, _ := egressEntry(t)
	p.Env = nil
	p.Mounts = nil
	p.Credentials = []credential.Grant{{Name: "GITHUB_TOKEN", From: credential.Source{Env: "GH_PAT"}, To: []string{"api.github.com:443"},
		As: credential.Injection{Header: "Authorization", Format: "Bearer {}"}}}
	os.WriteFile(planFile, p.JSON(), 0o644)
	home := t.TempDir()
	envFile := filepath.Join(home, "env")
	self := fakeELF(t, false)
	check := func(client, file string, edit func(*Launch)) string {
		t.Helper()
		c, _ := clientcfg.LookupClient(client)
		l, err := LaunchFor(c, p, "bwrap", root, home, out, self, envFile, false)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(l)
		}
		src, err := Merge(file, nil, c, p.Server, l, false)
		if err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(t.TempDir(), file)
		os.WriteFile(cfg, src, 0o644)
		ts, err := clientcfg.Read(cfg, home)
		if err != nil || len(ts) != 1 {
			t.Fatalf("read back %s: %v %v", client, ts, err)
		}
		var msgs []string
		for _, u := range clientcfg.EnvCheck([]*compiler.Plan{p}, ts, root, home) {
			msgs = append(msgs, u.What)
		}
		return strings.Join(msgs, "\n")
	}
	if got := check("claude-code", ".mcp.json", nil); got != "" {
		t.Errorf("claude-code, by reference: %q", got)
	}
	os.WriteFile(envFile, []byte("OTHER=1\n"), 0o600)
	if got := check("claude-desktop", "claude_desktop_config.json", nil); !strings.Contains(got, "the credential source GH_PAT gets no value: "+envFile+" has no GH_PAT=... line") {
		t.Errorf("claude-desktop, no line: %q", got)
	}
	os.WriteFile(envFile, []byte("GH_PAT=ghp_x\n"), 0o600)
	if got := check("claude-desktop", "claude_desktop_config.json", nil); got != "" {
		t.Errorf("claude-desktop, the line: %q", got)
	}
	// The entry's --env-file removed by hand.
	drop := func(l *Launch) {
		if i := slices.Index(l.Args, "--env-file"); i >= 0 {
			l.Args = slices.Delete(l.Args, i, i+2)
		}
	}
	if got := check("claude-desktop", "claude_desktop_config.json", drop); !strings.Contains(got, "the credential source GH_PAT gets no value") {
		t.Errorf("claude-desktop, no env file: %q", got)
	}
}
