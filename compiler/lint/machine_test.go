package lint_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// dockerEntry is a client entry running docker with args before the image.
func dockerEntry(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return `{"command": "docker", "args": ["run", "-i", "--rm", ` + strings.Join(append(q, `"img:1"`), ", ") + `]}`
}

// writeConfig writes a config with the entries (name, entry JSON...) under
// key ("mcpServers", "servers") to dir/name.
func writeConfig(t *testing.T, dir, name, key string, kv ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"` + key + `": {`)
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  %q: %s", kv[i], kv[i+1])
	}
	b.WriteString("\n}}\n")
	file := filepath.Join(dir, filepath.FromSlash(name))
	os.MkdirAll(filepath.Dir(file), 0o755)
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// byRule lists, for each rule, the servers it flags (sorted, unique).
func byRule(rep lint.Report, rules ...string) map[string]string {
	seen := map[string]map[string]bool{}
	for _, f := range rep.Findings {
		if seen[f.Rule] == nil {
			seen[f.Rule] = map[string]bool{}
		}
		seen[f.Rule][f.Server] = true
	}
	out := map[string]string{}
	for _, r := range rules {
		var s []string
		for name := range seen[r] {
			s = append(s, name)
		}
		sort.Strings(s)
		out[r] = strings.Join(s, " ")
	}
	return out
}

func messages(rep lint.Report, rule, server string) string {
	var m []string
	for _, f := range rep.Findings {
		if f.Rule == rule && f.Server == server {
			m = append(m, f.Message)
		}
	}
	return strings.Join(m, "; ")
}

// TestHomeVarExpanded: where the client expands ${HOME} (Claude Code),
// the mount is the home; where it does not (Claude Desktop), docker
// refuses it and it grants nothing, HOME_NOT_EXPANDED saying so.
func TestHomeVarExpanded(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{".mcp.json", "MOUNT_CREDENTIALS MOUNT_HOME"},
		{"claude_desktop_config.json", "HOME_NOT_EXPANDED"},
	} {
		file := writeConfig(t, t.TempDir(), c.file, "mcpServers", "home-var", dockerEntry("-v", "${HOME}:/h"))
		ts, err := clientcfg.ReadFor(file, clientcfg.Options{Home: "/home/linter"})
		if err != nil {
			t.Fatal(err)
		}
		rep := lint.Run(ts, lint.Options{Only: []string{"MOUNT_HOME", "MOUNT_CREDENTIALS", "HOME_NOT_EXPANDED"}})
		var got []string
		for _, f := range rep.Findings {
			got = append(got, f.Rule)
		}
		sort.Strings(got)
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: %v, want %s", c.file, got, c.want)
		}
	}
}

// TestOtherMachinesHomes: a config written on a Mac, a Windows machine or
// another Linux user's is judged by the homes it names, not by the
// linter's $HOME; a whole Windows drive is a root mount; .claude is a
// credential store; ${workspaceFolder}/.. is a parent of the project even
// where the project is not known.
func TestOtherMachinesHomes(t *testing.T) {
	file := writeConfig(t, t.TempDir(), "claude_desktop_config.json", "mcpServers",
		"mac-home", dockerEntry("-v", "/Users/alice:/h"),
		"win-home", dockerEntry("-v", `C:\Users\carol:/h`),
		"win-aws", dockerEntry("-v", "C:/Users/dave/.aws:/aws:ro"),
		"linux-ssh", dockerEntry("-v", "/home/bob/.ssh:/s:ro"),
		"mac-claude", dockerEntry("-v", "/Users/alice/.claude:/c"),
		"tilde-kube", dockerEntry("-v", "~/.kube:/k:ro"),
		"tilde-user", dockerEntry("-v", "~bob/.ssh:/s:ro"),
		"home-var", dockerEntry("-v", "${HOME}:/h"),
		"drive", dockerEntry("-v", `C:\:/host:ro`),
		"drive-fwd", dockerEntry("-v", "C:/:/host:ro"),
		"root", dockerEntry("-v", "/:/host:ro"),
		"homes", dockerEntry("-v", "/home:/homes:ro"),
		"parent", dockerEntry("-v", "${workspaceFolder}/..:/p:ro"),
		"project", dockerEntry("-v", "/Users/alice/src/app:/app:ro"),
		"shared", dockerEntry("-v", "/Users/Shared/data:/d:ro"),
		"bwrap-gnupg", `{"command": "bwrap", "args": ["--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/Users/alice/.gnupg", "/g", "--", "/bin/s"]}`,
	)
	rules := []string{"MOUNT_HOME", "MOUNT_CREDENTIALS", "MOUNT_ROOT", "MOUNT_PARENT"}
	// ~, ~bob and ${HOME} reach docker as written from Claude Desktop,
	// which expands nothing: docker refuses the mount (a volume's name
	// holds no slash), so they grant nothing (HOME_NOT_EXPANDED says why
	// the server does not start); in Claude Code's .mcp.json ${HOME} is a
	// home (TestHomeVarExpanded).
	want := map[string]string{
		"MOUNT_HOME":        "homes mac-home win-home",
		"MOUNT_CREDENTIALS": "bwrap-gnupg drive drive-fwd homes linux-ssh mac-claude mac-home root win-aws win-home",
		"MOUNT_ROOT":        "drive drive-fwd root",
		"MOUNT_PARENT":      "parent",
	}
	for _, c := range []struct {
		name string
		read func() ([]*readback.Target, error)
	}{
		{"as written", func() ([]*readback.Target, error) {
			return clientcfg.ReadFor(file, clientcfg.Options{Home: "/home/linter"})
		}},
		{"this machine", func() ([]*readback.Target, error) { return clientcfg.Read(file, "/home/linter") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts, err := c.read()
			if err != nil {
				t.Fatal(err)
			}
			rep := lint.Run(ts, lint.Options{Only: rules})
			got := byRule(rep, rules...)
			for _, r := range rules {
				if got[r] != want[r] {
					t.Errorf("%s flags %q, want %q", r, got[r], want[r])
				}
			}
			if m := messages(rep, "MOUNT_CREDENTIALS", "mac-claude"); !strings.Contains(m, "~/.claude") {
				t.Errorf("mac-claude: %s", m)
			}
			if m := messages(rep, "MOUNT_CREDENTIALS", "win-aws"); !strings.Contains(m, "C:/Users/dave/.aws makes credential stores readable: ~/.aws") {
				t.Errorf("win-aws: %s", m)
			}
			if m := messages(rep, "MOUNT_ROOT", "drive"); !strings.Contains(m, "the whole drive C:/") {
				t.Errorf("drive: %s", m)
			}
		})
	}
}

// TestHomeNotExpanded: ~, $HOME, ${HOME}, %USERPROFILE% reach a stdio
// server as written unless its client expands that form.
func TestHomeNotExpanded(t *testing.T) {
	type server struct {
		name, cmd string
		args      []string
	}
	servers := []server{
		{"tilde", "npx", []string{"-y", "@modelcontextprotocol/server-filesystem", "~/Documents"}},
		{"dollar", "uvx", []string{"mcp-server-git", "--repository", "$HOME/src/repo"}},
		{"braces", "docker", []string{"run", "-i", "--rm", "-v", "${HOME}/.aws:/root/.aws:ro", "img:1"}},
		{"userhome", "node", []string{"server.js", "--root=${userHome}/notes"}},
		{"percent", "npx", []string{"-y", "server", `%USERPROFILE%\Documents`}},
		{"mount", "docker", []string{"run", "-i", "--rm", "--mount", "type=bind,source=~/data,target=/d", "img:1"}},
		{"command", "~/bin/server", nil},
		{"shell", "sh", []string{"-c", "exec npx -y server ~/Documents"}},
		{"shell-arg", "bash", []string{"-lc", "server", "~/x"}},
		{"absolute", "npx", []string{"-y", "server", "/Users/me/Documents"}},
		{"tilde-in-name", "npx", []string{"-y", "server", "notes~/x", "a~b"}},
	}
	quote := func(args []string) string {
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = fmt.Sprintf("%q", a)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	for _, c := range []struct {
		file, key, want string
	}{
		{"claude_desktop_config.json", "mcpServers", "braces command dollar mount percent tilde userhome"},
		{"proj/.mcp.json", "mcpServers", "command dollar mount percent tilde userhome"},       // Claude Code: ${HOME}
		{"proj/.gemini/settings.json", "mcpServers", "command mount percent tilde userhome"},  // Gemini: $HOME, ${HOME}
		{"proj/.vscode/mcp.json", "servers", "braces command dollar mount percent tilde"},     // VS Code: ${userHome}
		{"proj/.cursor/mcp.json", "mcpServers", "braces command dollar mount percent tilde"},  // Cursor: ${userHome}
		{"elsewhere/servers.json", "mcpServers", "command dollar mount percent tilde"},        // unknown client
		{"proj/.codex/config.toml", "", "braces command dollar mount percent tilde userhome"}, // Codex: nothing
	} {
		t.Run(c.file, func(t *testing.T) {
			dir := t.TempDir()
			var file string
			if c.key == "" {
				var b strings.Builder
				for _, s := range servers {
					fmt.Fprintf(&b, "[mcp_servers.%s]\ncommand = %q\nargs = %s\n\n", s.name, s.cmd, quote(s.args))
				}
				file = filepath.Join(dir, filepath.FromSlash(c.file))
				os.MkdirAll(filepath.Dir(file), 0o755)
				os.WriteFile(file, []byte(b.String()), 0o644)
			} else {
				var kv []string
				for _, s := range servers {
					kv = append(kv, s.name, fmt.Sprintf(`{"command": %q, "args": %s}`, s.cmd, quote(s.args)))
				}
				file = writeConfig(t, dir, c.file, c.key, kv...)
			}
			ts, err := clientcfg.ReadFor(file, clientcfg.Options{Home: "/home/linter"})
			if err != nil {
				t.Fatal(err)
			}
			rep := lint.Run(ts, lint.Options{Only: []string{"HOME_NOT_EXPANDED"}})
			if got := byRule(rep, "HOME_NOT_EXPANDED")["HOME_NOT_EXPANDED"]; got != c.want {
				t.Errorf("flagged %q, want %q\n%v", got, c.want, rep.Findings)
			}
			for _, f := range rep.Findings {
				if f.Pos.Line < 2 {
					t.Errorf("%s: no position of its own: %v", f.Server, f.Pos)
				}
			}
		})
	}
}

// TestOffMachineReadsNothing: a config that is not this machine's opens no
// file it names and looks into no folder it grants; in the project, in a
// project-scope file, or with --this-machine, it does.
func TestOffMachineReadsNothing(t *testing.T) {
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, ".env"), []byte("TOKEN=x\n"), 0o644)
	if err := os.Symlink(t.TempDir(), filepath.Join(data, "store")); err != nil {
		t.Fatal(err)
	}
	vars := filepath.Join(t.TempDir(), "vars.env")
	os.WriteFile(vars, []byte("GITHUB_TOKEN=x\n"), 0o644)
	profile := filepath.Join(t.TempDir(), "open.sb")
	os.WriteFile(profile, []byte("(version 1)(allow default)\n"), 0o644)
	servers := []string{
		"d", dockerEntry("-v", data+":/data:ro", "--env-file", vars),
		"sb", `{"command": "sandbox-exec", "args": ["-f", "` + profile + `", "/bin/server"]}`,
	}
	rules := []string{"SECRETS_WITH_EGRESS", "SYMLINK_ESCAPE", "SEATBELT_PROFILE", "UNKNOWN_FLAG"}
	read := func(file string, o clientcfg.Options) map[string]string {
		t.Helper()
		ts, err := clientcfg.ReadFor(file, o)
		if err != nil {
			t.Fatal(err)
		}
		rep := lint.Run(ts, lint.Options{Only: rules})
		for _, f := range rep.Findings {
			if f.Rule == "UNKNOWN_FLAG" && !strings.Contains(f.Message, "not read: the config is not known to be this machine's") {
				t.Errorf("%s: %s", f.Server, f.Message)
			}
		}
		return byRule(rep, rules...)
	}
	elsewhere := writeConfig(t, t.TempDir(), "mcp.json", "mcpServers", servers...)
	offMachine := map[string]string{"SECRETS_WITH_EGRESS": "", "SYMLINK_ESCAPE": "", "SEATBELT_PROFILE": "", "UNKNOWN_FLAG": "d sb"}
	onMachine := map[string]string{"SECRETS_WITH_EGRESS": "d", "SYMLINK_ESCAPE": "d", "SEATBELT_PROFILE": "sb", "UNKNOWN_FLAG": ""}
	proj := t.TempDir()
	for _, c := range []struct {
		name string
		file string
		o    clientcfg.Options
		want map[string]string
	}{
		{"user config", elsewhere, clientcfg.Options{Home: "/home/linter"}, offMachine},
		{"another project", elsewhere, clientcfg.Options{Home: "/home/linter", Project: proj}, offMachine},
		{"--this-machine", elsewhere, clientcfg.Options{Home: "/home/linter", ThisMachine: true}, onMachine},
		{"in the project", writeConfig(t, proj, "tools/mcp.json", "mcpServers", servers...), clientcfg.Options{Project: proj}, onMachine},
		{"project scope", writeConfig(t, t.TempDir(), ".vscode/mcp.json", "servers", servers...), clientcfg.Options{}, onMachine},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := read(c.file, c.o)
			for _, r := range rules {
				if got[r] != c.want[r] {
					t.Errorf("%s flags %q, want %q", r, got[r], c.want[r])
				}
			}
		})
	}
}

// TestWorkspaceFolderIsNotTheCurrentFolder: with the project unknown,
// ${workspaceFolder} is not "." — the linter's own folder, here holding two
// ordinary symlinks, which made the old symlink scan loop forever.
func TestWorkspaceFolderIsNotTheCurrentFolder(t *testing.T) {
	cwd := t.TempDir()
	for _, d := range []string{"a", "b"} {
		os.MkdirAll(filepath.Join(cwd, d), 0o755)
	}
	os.WriteFile(filepath.Join(cwd, "a", "x"), nil, 0o644)
	os.WriteFile(filepath.Join(cwd, "b", "y"), nil, 0o644)
	os.WriteFile(filepath.Join(cwd, ".env"), []byte("TOKEN=x\n"), 0o644)
	if os.Symlink("a/x", filepath.Join(cwd, "l1")) != nil || os.Symlink("b/y", filepath.Join(cwd, "l2")) != nil {
		t.Skip("no symlinks here")
	}
	t.Chdir(cwd)
	file := writeConfig(t, t.TempDir(), "mcp.json", "servers",
		"s", dockerEntry("-v", "${workspaceFolder}:/w"),
		"b", `{"command": "bwrap", "args": ["--bind", "${workspaceFolder}", "/w", "--", "/bin/s"]}`)
	for _, this := range []bool{false, true} {
		var rep lint.Report
		done := make(chan struct{})
		go func() {
			defer close(done)
			ts, err := clientcfg.ReadFor(file, clientcfg.Options{Home: t.TempDir(), ThisMachine: this})
			if err != nil {
				t.Error(err)
				return
			}
			rep = lint.Run(ts, lint.Options{})
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("this machine %v: lint did not finish (the symlink scan of the current folder loops)", this)
		}
		for _, f := range rep.Findings {
			if f.Rule == "SYMLINK_ESCAPE" || f.Rule == "SECRETS_WITH_EGRESS" || f.Rule == "RW_UNPROTECTED" && strings.Contains(f.Message, ".env") {
				t.Errorf("this machine %v: a finding about the current folder: %s %s", this, f.Rule, f.Message)
			}
		}
	}
}

// TestSystemTreesNotWalked: a bwrap entry binding /usr, /etc and / on this
// machine is linted without walking them.
func TestSystemTreesNotWalked(t *testing.T) {
	file := writeConfig(t, t.TempDir(), "mcp.json", "mcpServers",
		"sys", `{"command": "bwrap", "args": ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--ro-bind", "/lib", "/lib", "--", "/usr/bin/node"]}`,
		"all", `{"command": "bwrap", "args": ["--bind", "/", "/", "--", "/usr/bin/node"]}`)
	ts, err := clientcfg.ReadFor(file, clientcfg.Options{Home: t.TempDir(), ThisMachine: true})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep := lint.Run(ts, lint.Options{})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("lint took %v", d)
	}
	for _, f := range rep.Findings {
		if f.Rule == "SYMLINK_ESCAPE" || f.Rule == "SECRETS_WITH_EGRESS" {
			t.Errorf("%s: %s %s", f.Server, f.Rule, f.Message)
		}
	}
}
