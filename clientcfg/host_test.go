package clientcfg

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// readOne writes a config holding one entry "s" (JSON text of the entry)
// under key (mcpServers, servers...) and reads it.
func readOne(t *testing.T, entry string) *readback.Target {
	t.Helper()
	return readConfig(t, `{"mcpServers": {"s": `+entry+`}}`)["s"]
}

func readConfig(t *testing.T, text string) map[string]*readback.Target {
	t.Helper()
	file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return readAll(t, file, "/home/me")
}

// of returns the values of a target's flags of one kind.
func of(tg *readback.Target, k readback.FlagKind) []string {
	var out []string
	for _, f := range tg.Flags {
		if f.Kind == k {
			out = append(out, f.Value)
		}
	}
	return out
}

// TestShellWrappers: sh -c, bash -lc, cmd /c, PowerShell -Command, wsl,
// env and command strings are looked through to the command they run,
// read as if written directly, at the position of the argument holding it.
func TestShellWrappers(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		launcher    string
		unconfined  []string // FlagUnconfined values
		at          string   // position of the first flag, line:col
		image       string   // a container's image, when the inner command is one
	}{
		{"sh -c docker", `{"command": "sh", "args": ["-c", "docker run -i --rm --network none img:1"]}`, "docker", nil, "1:55", "img:1"},
		{"bash -lc with a prelude", `{"command": "/bin/bash", "args": ["-lc", "source ~/.nvm/nvm.sh && exec npx -y @modelcontextprotocol/server-filesystem /srv/data"]}`,
			"npx", []string{"npx (through bash -lc)"}, "1:63", ""},
		{"cmd /c, separate args", `{"command": "cmd", "args": ["/c", "npx", "-y", "some-server"]}`, "npx", []string{"npx (through cmd /c)"}, "1:56", ""},
		{"cmd.exe /c, one string", `{"command": "C:\\Windows\\System32\\cmd.exe", "args": ["/s", "/c", "\"C:\\Program Files\\Docker\\docker.exe\" run -i --rm img:1"]}`, "docker", nil, "1:89", "img:1"},
		{"wsl.exe -e", `{"command": "wsl.exe", "args": ["-d", "Ubuntu", "-e", "docker", "run", "-i", "--rm", "img:1"]}`, "docker", nil, "1:86", "img:1"},
		{"wsl bash -c", `{"command": "wsl", "args": ["bash", "-c", "uvx mcp-server-git"]}`, "uvx", []string{"uvx (through wsl, bash -c)"}, "1:64", ""},
		{"env", `{"command": "/usr/bin/env", "args": ["NODE_ENV=production", "node", "server.js"]}`, "node", []string{"node (through env)"}, "1:82", ""},
		{"powershell", `{"command": "powershell.exe", "args": ["-NoProfile", "-Command", "& 'C:\\tools\\node.exe' server.js"]}`, "node", []string{"node (through powershell -Command)"}, "1:87", ""},
		{"command string", `{"command": "bash -c 'docker run -i --rm img:1'"}`, "docker", nil, "1:34", "img:1"},
		{"a script is not looked through", `{"command": "bash", "args": ["start.sh"]}`, "bash", []string{"bash"}, "1:34", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := readOne(t, c.entry)
			if tg.Launcher != c.launcher || !slices.Equal(of(tg, readback.FlagUnconfined), c.unconfined) {
				t.Errorf("launcher %q unconfined %q, want %q %q (flags %q)", tg.Launcher, of(tg, readback.FlagUnconfined), c.launcher, c.unconfined, flags(tg))
			}
			if len(tg.Flags) == 0 || at(tg.Flags[0].Pos) != c.at {
				t.Errorf("flags %q, want the first at %s", flags(tg), c.at)
			}
			if c.image != "" && (tg.Plan == nil || tg.Plan.Image != c.image || tg.Plan.Network.Mode == "none" && !strings.Contains(c.entry, "none")) {
				t.Errorf("plan %+v", tg.Plan)
			}
		})
	}
}

// TestHostGrants: the folders an unconfined entry hands its server are
// read as written, for any machine: a home, a credential store, a drive or
// the root is a grant; a project folder, a variable for one, a runner's
// own --directory, or HOME set in env is not.
func TestHostGrants(t *testing.T) {
	for _, c := range []struct {
		entry string
		want  []string // FlagHostGrant values, by prefix
	}{
		{`{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/alice"]}`, []string{"npx runs unconfined on the host and is handed the home folder /Users/alice"}},
		{`{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/bob/Desktop", "/home/bob"]}`, []string{"npx runs unconfined on the host and is handed the home folder /home/bob"}},
		{`{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "C:\\Users\\carol"]}`, []string{"npx runs unconfined on the host and is handed the home folder C:\\Users\\carol"}},
		{`{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "C:\\"]}`, []string{"npx runs unconfined on the host and is handed the whole drive C:\\"}},
		{`{"command": "node", "args": ["server.js", "--allowed-dir=/"]}`, []string{"node runs unconfined on the host and is handed the filesystem root /"}},
		{`{"command": "python", "args": ["-m", "fs_server", "--root", "~"]}`, []string{"python runs unconfined on the host and is handed the home folder ~"}},
		{`{"command": "uvx", "args": ["mcp-server-fs", "$HOME/.ssh"]}`, []string{"uvx runs unconfined on the host and is handed the credential store ~/.ssh ($HOME/.ssh)"}},
		{`{"command": "npx", "args": ["-y", "k8s-mcp", "--kubeconfig", "/Users/dan/.kube/config"]}`, []string{"npx runs unconfined on the host and is handed the credential store ~/.kube"}},
		{`{"command": "npx", "args": ["-y", "fs", "/home"]}`, []string{"npx runs unconfined on the host and is handed the folder of every home, /home"}},
		{`{"command": "npx", "args": ["-y", "fs", "/mnt/c"]}`, []string{"npx runs unconfined on the host and is handed the whole drive /mnt/c"}},
		{`{"command": "npx", "args": ["-y", "fs"], "env": {"ALLOWED_PATHS": "/srv/a,%USERPROFILE%"}}`, []string{"npx runs unconfined on the host and is handed the home folder %USERPROFILE% (env ALLOWED_PATHS)"}},
		// A variable's colon is not a list's: PowerShell's $env:X, VS Code's ${env:X}.
		{`{"command": "powershell", "args": ["-Command", "npx -y fs $env:USERPROFILE"]}`, []string{"npx runs unconfined on the host and is handed the home folder $env:USERPROFILE"}},
		{`{"command": "npx", "args": ["-y", "fs", "${env:USERPROFILE}/.aws"]}`, []string{"npx runs unconfined on the host and is handed the credential store ~/.aws (${env:USERPROFILE}/.aws)"}},
		{`{"command": "npx", "args": ["-y", "fs"], "env": {"ALLOWED_PATHS": "/srv/a:$env:HOME"}}`, []string{"npx runs unconfined on the host and is handed the home folder $env:HOME (env ALLOWED_PATHS)"}},
		{`{"command": "npx", "args": ["-y", "fs", "/Users/alice/work/shop", "${workspaceFolder}", "."]}`, nil},
		{`{"command": "npx", "args": ["-y", "fs", "/Users/Shared/data"]}`, nil},
		{`{"command": "uv", "args": ["--directory", "/Users/alice", "run", "server.py"]}`, nil},
		{`{"command": "npx", "args": ["-y", "fs", "./data"], "env": {"HOME": "/Users/alice", "XDG_CONFIG_HOME": "/Users/alice/.config"}}`, nil},
		{`{"command": "docker", "args": ["run", "-i", "--rm", "img:1", "/"]}`, nil}, // a container's own /
	} {
		tg := readOne(t, c.entry)
		got := of(tg, readback.FlagHostGrant)
		ok := len(got) == len(c.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.HasPrefix(got[i], c.want[i])
		}
		if !ok {
			t.Errorf("%s:\n got %q\nwant %q", c.entry, got, c.want)
		}
	}
}

// TestClientSandbox: VS Code's sandboxEnabled and an srt wrapper are not
// "unconfined": they are recorded with what they enforce and leave open;
// an allowWrite of a home is a grant.
func TestClientSandbox(t *testing.T) {
	ts := readConfig(t, `{
  "servers": {
    "vs": {"type": "stdio", "command": "npx", "args": ["-y", "fs", "${workspaceFolder}"], "sandboxEnabled": true,
           "sandbox": {"filesystem": {"allowWrite": ["${workspaceFolder}"], "denyRead": ["~/.ssh", "~/.aws"]}, "network": {"allowedDomains": ["api.github.com"]}}},
    "file-level": {"type": "stdio", "command": "uvx", "args": ["srv"], "sandboxEnabled": true},
    "wide": {"type": "stdio", "command": "npx", "args": ["-y", "fs", "/Users/alice"], "sandboxEnabled": true, "sandbox": {"filesystem": {"allowWrite": ["~"]}}},
    "srt": {"command": "srt", "args": ["--settings", "/etc/srt.json", "npx", "-y", "fs", "/srv/data"]},
    "off": {"type": "stdio", "command": "npx", "args": ["-y", "fs"], "sandboxEnabled": false},
    "denied": {"type": "stdio", "command": "npx", "args": ["-y", "fs", "/Users/alice/.aws", "~/.kube/config"], "sandboxEnabled": true, "sandbox": {"filesystem": {"denyRead": ["~/.aws", "/Users/alice/.kube"]}}}
  },
  "sandbox": {"network": {"allowedDomains": ["*"]}}
}`)
	for name, want := range map[string][]string{
		"vs": {"runs npx under VS Code's sandbox", "writes only to ${workspaceFolder}, the server's cwd, ~/.npm; network only to api.github.com, registry.npmjs.org",
			"every read not in denyRead (~/.gnupg, ~/.config/gcloud, ~/.kube, 27 more readable)", "on Windows everything"},
		"file-level": {"runs uvx under VS Code's sandbox", "network only to every domain (*)"},
		"wide":       {"runs npx under VS Code's sandbox"},
		"denied":     {"runs npx under VS Code's sandbox"},
		"srt":        {"runs npx under srt (sandbox-runtime) with the settings in /etc/srt.json (not read by lint)", "passes the whole environment"},
	} {
		tg := ts[name]
		got := of(tg, readback.FlagClientSandbox)
		if len(got) != 1 || len(of(tg, readback.FlagUnconfined)) != 0 {
			t.Errorf("%s: flags %q", name, flags(tg))
			continue
		}
		for _, w := range want {
			if !strings.Contains(got[0], w) {
				t.Errorf("%s: %q lacks %q", name, got[0], w)
			}
		}
	}
	// Writes are confined, reads are not: a home handed to the server is
	// a grant as wide as with no sandbox, unless denyRead covers it.
	if got := of(ts["wide"], readback.FlagHostGrant); len(got) != 2 || !strings.HasPrefix(got[1], "VS Code's sandbox lets npx write the home folder ~") ||
		got[0] != "npx runs under VS Code's sandbox, which leaves reads open, and is handed the home folder /Users/alice, readable in full" {
		t.Errorf("wide: grants %q", got)
	}
	if got := of(ts["denied"], readback.FlagHostGrant); len(got) != 0 {
		t.Errorf("denied: grants %q, but denyRead covers them", got)
	}
	if got := flags(ts["srt"]); len(got) != 1 || !strings.HasSuffix(got[0], "@7:24") {
		t.Errorf("srt: flags %q, want one at the srt command", got)
	}
	if got := of(ts["off"], readback.FlagUnconfined); !slices.Equal(got, []string{"npx"}) {
		t.Errorf("off: %q", flags(ts["off"]))
	}
}

// TestDockerMistakes: the container entry mistakes lint names: joined
// arguments, a value read as the image, stdio without -i or with -t, env
// never passed into the container, --pull, the image's position.
func TestDockerMistakes(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		want        []string // flags, kind=value
		check       func(t *testing.T, tg *readback.Target)
	}{
		{"joined -e and -v", `{"command": "docker", "args": ["run", "-i", "--rm", "-e LOG_LEVEL=debug", "-v /srv/a:/a:ro", "--network none", "img:1"]}`,
			[]string{"joined-arg=-e LOG_LEVEL=debug", "joined-arg=-v /srv/a:/a:ro", "joined-arg=--network none"},
			func(t *testing.T, tg *readback.Target) {
				if p := tg.Plan; !slices.Equal(p.EnvNames(), []string{"LOG_LEVEL"}) || len(p.Mounts) != 1 || p.Network.Mode != "none" || p.Image != "img:1" {
					t.Errorf("plan read from the split arguments: %+v", p)
				}
			}},
		{"-e NAME value", `{"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN", "ghp_0123456789abcdefghijABCDEFGHIJklmnop", "ghcr.io/github/github-mcp-server"]}`,
			[]string{"env-value-as-image=GITHUB_TOKEN ghp_0123456789abcdefghijABCDEFGHIJklmnop", "secret-inline=GITHUB_TOKEN"}, nil},
		{"-e NAME region", `{"command": "docker", "args": ["run", "-i", "--rm", "--env", "AWS_REGION", "us-east-1", "mcp/aws:1"]}`,
			[]string{"env-value-as-image=AWS_REGION us-east-1"}, nil},
		{"-e NAME image is fine", `{"command": "docker", "args": ["run", "-i", "--rm", "-e", "DEBUG", "mcp/github", "serve"]}`, nil, nil},
		{"-e NAME -- value", `{"command": "docker", "args": ["run", "-i", "--rm", "-e", "X", "--", "ubuntu", "mcp/x:1"]}`, nil, nil},
		{"-it", `{"command": "docker", "args": ["run", "-it", "--rm", "img:1"]}`,
			[]string{"stdio=-t/--tty: a terminal between the client and the server's JSON-RPC (docker refuses -it when the client's stdin is not one; a tty rewrites line ends and echoes)"}, nil},
		{"no -i", `{"command": "podman", "args": ["run", "--rm", "img:1"]}`,
			[]string{"stdio=no -i: the engine gives the server no stdin, and it exits at once"}, nil},
		{"env not passed", `{"command": "docker", "args": ["run", "-i", "--rm", "-e", "PASSED", "-v", "${SRC}:/src:ro", "img:1"], "env": {"PASSED": "${A}", "MISSED": "${B}", "SRC": "/srv/src", "DOCKER_HOST": "unix:///x", "PATH": "/bin"}}`,
			[]string{"env-not-passed=MISSED"}, nil},
		{"env-host passes all", `{"command": "podman", "args": ["run", "-i", "--rm", "--env-host", "img:1"], "env": {"MISSED": "x"}}`,
			[]string{"unknown-flag=--env-host"}, nil},
		{"pull and image", `{"command": "docker", "args": ["run", "-i", "--rm", "--pull=always", "mcp/github:latest"]}`, nil,
			func(t *testing.T, tg *readback.Target) {
				if tg.Pull != "always" || at(tg.PullPos) != "1:74" || at(tg.ImagePos) != "1:91" {
					t.Errorf("pull %q at %s, image at %s", tg.Pull, at(tg.PullPos), at(tg.ImagePos))
				}
			}},
		{"dangerous in the command", `{"command": "docker", "args": ["run", "-i", "--rm", "-e", "ALLOW_ALL=true", "img:1", "--yolo", "--no-sandbox"]}`,
			[]string{"dangerous-mode=ALLOW_ALL=true: an env switch whose name says it turns on a dangerous or allow-all mode",
				"dangerous-mode=--yolo: YOLO mode: every tool call approved without asking"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := readOne(t, c.entry)
			var got []string
			secrets := slices.ContainsFunc(c.want, func(w string) bool { return strings.HasPrefix(w, "secret-inline=") })
			for _, k := range kinds(tg) {
				switch {
				case strings.HasPrefix(k, "secret-inline=") && !secrets: // -e X=value: SECRET_INLINE's own business
				case strings.HasPrefix(k, "no-cap-drop="), strings.HasPrefix(k, "no-new-privs="), strings.HasPrefix(k, "no-read-only="),
					strings.HasPrefix(k, "root-user="), strings.HasPrefix(k, "network="), strings.HasPrefix(k, "var-unexpanded="):
				default:
					got = append(got, k)
				}
			}
			if want := sorted(c.want...); !slices.Equal(got, want) {
				t.Errorf("flags:\n got %q\nwant %q", got, want)
			}
			if c.check != nil {
				c.check(t, tg)
			}
		})
	}
}

// TestBwrapJoined: "--ro-bind /usr /usr" as one argument is named, and
// read as the options it holds.
func TestBwrapJoined(t *testing.T) {
	tg := readOne(t, `{"command": "bwrap", "args": ["--unshare-all", "--new-session", "--die-with-parent", "--ro-bind /usr /usr", "--", "/usr/bin/server"]}`)
	if got := flags(tg); !slices.Equal(got, []string{"joined-arg=--ro-bind /usr /usr@1:107"}) || len(tg.Plan.Mounts) != 1 {
		t.Errorf("flags %q mounts %v", got, tg.Plan.Mounts)
	}
}

// TestApprovalsAndDangerousModes: autoApprove and alwaysAllow lists,
// Gemini's trust, and the dangerous switches of the agents people run as
// MCP servers, in args and in env.
func TestApprovalsAndDangerousModes(t *testing.T) {
	ts := readConfig(t, `{"mcpServers": {
  "cline": {"command": "docker", "args": ["run", "-i", "--rm", "img:1"], "autoApprove": ["read_file", "write_file"]},
  "roo": {"url": "https://x.example.com/mcp", "alwaysAllow": ["*"]},
  "empty": {"command": "docker", "args": ["run", "-i", "--rm", "img:1"], "autoApprove": []},
  "gemini": {"command": "docker", "args": ["run", "-i", "--rm", "img:1"], "trust": true},
  "claude": {"command": "claude", "args": ["mcp", "serve", "--dangerously-skip-permissions"]},
  "codex": {"command": "codex", "args": ["mcp-server", "--sandbox", "danger-full-access", "-c", "approval_policy=never"]},
  "gemini-cli": {"command": "npx", "args": ["@google/gemini-cli", "--approval-mode=yolo"]},
  "copilot": {"command": "copilot", "args": ["--allow-all-tools"]},
  "browser": {"command": "npx", "args": ["@playwright/mcp@latest", "--no-sandbox"]},
  "inspector": {"command": "npx", "args": ["@modelcontextprotocol/inspector"], "env": {"DANGEROUSLY_OMIT_AUTH": "true", "MCP_YOLO": "0", "CORS_ALLOW_ALL_ORIGINS": "true"}}
}}`)
	for name, want := range map[string][]string{
		"cline":  {"auto-approve=autoApprove runs the tools read_file, write_file without asking: a prompt injection's calls included"},
		"roo":    {"auto-approve=alwaysAllow runs every tool without asking: a prompt injection's calls included"},
		"empty":  nil,
		"gemini": {"auto-approve=trust: true skips the confirmation of every tool call of this server"},
		"claude": {"dangerous-mode=--dangerously-skip-permissions: a switch its own name calls dangerous (it skips the program's permission checks or sandbox)"},
		"codex": {"dangerous-mode=--sandbox danger-full-access: Codex's sandbox turned off (full access)",
			"dangerous-mode=-c approval_policy=never: Codex's approvals turned off: every command runs without asking"},
		"gemini-cli": {"dangerous-mode=--approval-mode=yolo: YOLO mode: every tool call approved without asking"},
		"copilot":    {"dangerous-mode=--allow-all-tools: every tool, path or permission allowed without asking"},
		"browser":    {"dangerous-mode=--no-sandbox: the browser's own sandbox turned off, on the host"},
		"inspector":  {"dangerous-mode=DANGEROUSLY_OMIT_AUTH=true: an env switch whose name says it turns on a dangerous or allow-all mode"},
	} {
		var got []string
		for _, k := range kinds(ts[name]) {
			if strings.HasPrefix(k, "auto-approve=") || strings.HasPrefix(k, "dangerous-mode=") {
				got = append(got, k)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
}
