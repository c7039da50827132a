package clientcfg

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// readEntry reads a Claude Desktop config holding one entry "s" and
// returns the entry as read (its wrappers, env files, secrets).
func readEntry(t *testing.T, text string) *entry {
	t.Helper()
	var got *entry
	_, err := parseRecording("/p/claude_desktop_config.json", []byte(`{"mcpServers": {"s": `+text+`}}`), "/home/me", false, nil,
		func(e *entry) { got = e })
	if err != nil || got == nil {
		t.Fatalf("read %s: %v", text, err)
	}
	return got
}

// TestLookedThrough: op run, envmcp (direct or through npx), npx deno and
// the shells' command strings are looked through to the server they run,
// recorded in via; op run records that the server is handed secrets,
// op run and envmcp the env files they load. Hostile shapes (an empty --,
// a missing value, an unclosed quote, wrappers nested past maxWrap) stop
// at the wrapper or read what is there, never panic.
func TestLookedThrough(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		launcher    string
		unconfined  []string
		secretsBy   string
		envFiles    []string
	}{
		{"op run --", `{"command": "op", "args": ["run", "--", "npx", "-y", "@x/server", "/srv"]}`, "npx", []string{"npx (through op run)"}, "op run", nil},
		{"op run with its options", `{"command": "op", "args": ["run", "--env-file", ".env", "--no-masking", "--account=me", "--", "uvx", "mcp-server-git"]}`,
			"uvx", []string{"uvx (through op run)"}, "op run", []string{".env"}},
		{"op run --env-file=", `{"command": "/usr/local/bin/op", "args": ["--account", "me", "run", "--env-file=./op.env", "node", "s.js"]}`,
			"node", []string{"node (through op run)"}, "op run", []string{"./op.env"}},
		{"op run, a docker server", `{"command": "op", "args": ["run", "--", "docker", "run", "-i", "--rm", "img:1"]}`, "docker", nil, "op run", nil},
		{"op run as one string", `{"command": "op run -- npx -y @x/server"}`, "npx", []string{"npx (through op run)"}, "op run", nil},
		{"op read is no wrapper", `{"command": "op", "args": ["read", "op://vault/item/field"]}`, "op", []string{"op"}, "", nil},
		{"op run with an empty --", `{"command": "op", "args": ["run", "--"]}`, "op", []string{"op"}, "", nil},
		{"op run --env-file without its value", `{"command": "op", "args": ["run", "--env-file"]}`, "op", []string{"op"}, "", nil},
		{"npx envmcp --env-file", `{"command": "npx", "args": ["-y", "envmcp", "--env-file", "/home/me/.secrets.env", "uvx", "mcp-server-git"]}`,
			"uvx", []string{"uvx (through npx envmcp)"}, "", []string{"/home/me/.secrets.env"}},
		{"npx envmcp@version, default file", `{"command": "npx", "args": ["envmcp@1.2.0", "start-server", "$DATABASE_URL"]}`,
			"start-server", []string{"start-server (through npx envmcp)"}, "", []string{".env.mcp (in the working folder or above, else ~/.env.mcp)"}},
		{"envmcp -e", `{"command": "envmcp", "args": ["-e", "x.env", "node", "s.js"]}`, "node", []string{"node (through envmcp)"}, "", []string{"x.env"}},
		{"envmcp without a command", `{"command": "npx", "args": ["-y", "envmcp", "--env-file", "x.env"]}`, "npx", []string{"npx"}, "", nil},
		{"npx of another package is the server", `{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}`, "npx", []string{"npx"}, "", nil},
		{"bash -lc cd &&", `{"command": "bash", "args": ["-lc", "cd ~/src/x && npx -y @x/server"]}`, "npx", []string{"npx (through bash -lc)"}, "", nil},
		{"exec then more", `{"command": "sh", "args": ["-c", "exec uvx mcp-server-git; echo never"]}`, "uvx", []string{"uvx (through sh -c)"}, "", nil},
		{"exec that only redirects", `{"command": "sh", "args": ["-c", "exec 2>/tmp/log; node s.js"]}`, "node", []string{"node (through sh -c)"}, "", nil},
		{"unclosed quote", `{"command": "bash", "args": ["-c", "cd 'x && npx -y @x/server"]}`, "cd", []string{"cd (through bash -c)"}, "", nil},
		{"unclosed quote, one command", `{"command": "bash", "args": ["-c", "npx -y \"@x/server"]}`, "npx", []string{"npx (through bash -c)"}, "", nil},
		{"cmd /c with &&", `{"command": "cmd", "args": ["/c", "cd /d C:\\src && npx -y @x/server"]}`, "npx", []string{"npx (through cmd /c)"}, "", nil},
		{"env with an empty --", `{"command": "env", "args": ["--"]}`, "env", []string{"env"}, "", nil},
		{"sh -c with an empty string", `{"command": "sh", "args": ["-c", ""]}`, "sh", []string{"sh"}, "", nil},
		{"sh -c of blanks and separators", `{"command": "sh", "args": ["-c", " ; && | "]}`, "sh", []string{"sh"}, "", nil},
		{"sh -c ending in a backslash", `{"command": "sh", "args": ["-c", "npx x\\"]}`, "npx", []string{"npx (through sh -c)"}, "", nil},
		{"shells nested past maxWrap", `{"command": "sh", "args": ["-c", "sh -c 'sh -c \"sh -c \\\"sh -c \\\\\\\"sh -c \\\\\\\\\\\\\\\\\"sh -c npx\\\\\\\\\\\\\\\\\"\\\\\\\"\\\"\"'"]}`,
			"sh", []string{"sh (through sh -c, sh -c, sh -c, sh -c, sh -c, sh -c)"}, "", nil},
		{"nested past maxWrap", `{"command": "env", "args": ["env", "env", "env", "env", "env", "env", "env", "env", "node", "s.js"]}`,
			"env", []string{"env (through env, env, env, env, env, env)"}, "", nil},
		{"op, envmcp, sh -c", `{"command": "op", "args": ["run", "--", "npx", "envmcp", "sh", "-c", "exec node s.js"]}`,
			"node", []string{"node (through op run, npx envmcp, sh -c)"}, "op run", []string{".env.mcp (in the working folder or above, else ~/.env.mcp)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := readEntry(t, c.entry)
			if e.t.Launcher != c.launcher || !slices.Equal(of(e.t, readback.FlagUnconfined), c.unconfined) {
				t.Errorf("launcher %q unconfined %q, want %q %q (flags %q)", e.t.Launcher, of(e.t, readback.FlagUnconfined), c.launcher, c.unconfined, flags(e.t))
			}
			var files []string
			for _, f := range e.envFiles {
				files = append(files, f.s)
			}
			if e.secretsBy != c.secretsBy || !slices.Equal(files, c.envFiles) {
				t.Errorf("secretsBy %q env files %q, want %q %q", e.secretsBy, files, c.secretsBy, c.envFiles)
			}
		})
	}
}

// TestDenoPermissions: deno run's permission flags are its grants. -A,
// --allow-run and --allow-ffi are dangerous and leave it unconfined; a
// read or write without a list, or with a home in it, is a wide grant;
// --allow-env without a list is its own flag; anything else is confined
// by Deno, listed.
func TestDenoPermissions(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		want        []string // kinds, sorted
		perms       string   // a piece of the runtime-permissions value
	}{
		{"-A", `{"command": "deno", "args": ["run", "-A", "jsr:@x/y"]}`, []string{"dangerous-mode", "unconfined"}, ""},
		{"--allow-all and a home", `{"command": "deno", "args": ["run", "--allow-all", "jsr:@x/y", "/Users/me"]}`,
			[]string{"dangerous-mode", "host-grant", "unconfined"}, ""},
		{"--allow-run=git", `{"command": "deno", "args": ["run", "--allow-run=git", "--allow-read=.", "main.ts"]}`, []string{"dangerous-mode", "unconfined"}, ""},
		{"--allow-ffi", `{"command": "deno", "args": ["run", "--allow-ffi", "main.ts"]}`, []string{"dangerous-mode", "unconfined"}, ""},
		{"no flag", `{"command": "deno", "args": ["run", "jsr:@x/y"]}`, []string{"runtime-permissions"}, "no permission flag"},
		{"deno SCRIPT", `{"command": "deno", "args": ["main.ts"]}`, []string{"runtime-permissions"}, "no permission flag"},
		{"scoped", `{"command": "deno", "args": ["run", "--allow-read=./data", "--allow-net=api.github.com", "--allow-env=TOKEN", "-c", "deno.json", "jsr:@x/y", "--port", "1"]}`,
			[]string{"runtime-permissions"}, "read=./data, net=api.github.com, env=TOKEN"},
		{"scoped to a home", `{"command": "deno", "args": ["run", "--allow-read=./data,/Users/bob", "jsr:@x/y"]}`, []string{"host-grant", "runtime-permissions"}, "read=./data,/Users/bob"},
		{"unscoped read, write", `{"command": "deno", "args": ["run", "-R", "--allow-write", "jsr:@x/y"]}`, []string{"host-grant", "host-grant", "runtime-permissions"}, "read (every file), write (every file)"},
		{"unscoped env, net", `{"command": "deno", "args": ["run", "-EN", "jsr:@x/y"]}`, []string{"runtime-env-all", "runtime-permissions"}, "env (every variable), net (every host)"},
		{"-P", `{"command": "deno", "args": ["run", "-P", "main.ts"]}`, []string{"runtime-permissions"}, "permission set of its deno.json"},
		{"npx deno", `{"command": "npx", "args": ["-y", "deno", "run", "--allow-net", "jsr:@x/y"]}`, []string{"runtime-permissions"}, "deno (through npx) runs jsr:@x/y"},
		{"flags after the script are the server's", `{"command": "deno", "args": ["run", "main.ts", "-A"]}`, []string{"runtime-permissions"}, "no permission flag"},
		{"deno task runs on the host", `{"command": "deno", "args": ["task", "start"]}`, []string{"unconfined"}, ""},
		{"deno run without a script", `{"command": "deno", "args": ["run", "-A"]}`, []string{"unconfined"}, ""},
		{"under srt the sandbox is the finding", `{"command": "srt", "args": ["deno", "run", "jsr:@x/y"]}`, []string{"client-sandbox"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := readOne(t, c.entry)
			if got := kindsOnly(tg); !slices.Equal(got, c.want) {
				t.Errorf("kinds %q, want %q (flags %q)", got, c.want, flags(tg))
			}
			if p := of(tg, readback.FlagRuntimePermissions); c.perms != "" && (len(p) != 1 || !strings.Contains(p[0], c.perms)) {
				t.Errorf("runtime permissions %q, want %q in it", p, c.perms)
			}
		})
	}
}

// TestToolHive: thv run and thv proxy are ToolHive's container, not
// unconfined; the finding says what the flags settle; a --volume of a
// home is a wide grant.
func TestToolHive(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		want        []string
		says        []string
	}{
		{"thv run NAME", `{"command": "thv", "args": ["run", "fetch"]}`, []string{"toolhive"},
			[]string{"runs fetch", "no --permission-profile", "without --isolate-network"}},
		{"profile none", `{"command": "thv", "args": ["run", "--name", "f", "--permission-profile", "none", "--isolate-network", "fetch", "--", "--flag"]}`, []string{"toolhive"},
			[]string{"runs fetch", "--permission-profile none: no network"}},
		{"a profile file", `{"command": "thv", "args": ["run", "--permission-profile=./p.json", "ghcr.io/x/y:1"]}`, []string{"toolhive"},
			[]string{"runs ghcr.io/x/y:1", "./p.json: a file lint does not read"}},
		{"a home volume", `{"command": "thv", "args": ["run", "-v", "/home/me:/data:ro", "fs"]}`, []string{"host-grant", "toolhive"},
			[]string{"runs fs"}},
		{"a Windows volume", `{"command": "thv", "args": ["run", "--volume", "C:\\Users\\me:/data", "fs"]}`, []string{"host-grant", "toolhive"}, nil},
		{"a project volume", `{"command": "thv", "args": ["run", "--volume", "/srv/p:/data", "fs"]}`, []string{"toolhive"}, nil},
		{"thv proxy stdio", `{"command": "thv", "args": ["proxy", "stdio", "github"]}`, []string{"toolhive"}, []string{"bridges to github"}},
		{"thv list is not a server", `{"command": "thv", "args": ["list"]}`, []string{"unconfined"}, nil},
		{"thv run, nothing else", `{"command": "thv", "args": ["run"]}`, []string{"toolhive"}, []string{"runs a server"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := readOne(t, c.entry)
			if got := kindsOnly(tg); !slices.Equal(got, c.want) {
				t.Errorf("kinds %q, want %q (flags %q)", got, c.want, flags(tg))
			}
			th := strings.Join(of(tg, readback.FlagToolHive), "\n")
			for _, s := range c.says {
				if !strings.Contains(th, s) {
					t.Errorf("%q does not say %q", th, s)
				}
			}
		})
	}
}

// TestCommandLineInCommand: a whole command line in "command" is read
// split, with or without args, and flagged; a path with blanks is a
// program's name.
func TestCommandLineInCommand(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		launcher    string
		flagged     bool
		grant       bool
	}{
		{"no args", `{"command": "npx -y @x/server /home/me"}`, "npx", true, true},
		{"with args", `{"command": "npx -y", "args": ["@x/server", "/home/me"]}`, "npx", true, true},
		{"quoted path with blanks, then words", `{"command": "\"C:\\Program Files\\nodejs\\npx.cmd\" -y @x/server"}`, "npx", true, false},
		{"Windows path with blanks", `{"command": "C:\\Program Files\\nodejs\\npx.cmd", "args": ["-y", "@x/server"]}`, "npx", false, false},
		{"macOS path with blanks", `{"command": "/Applications/My App/bin/x"}`, "x", false, false},
		{"a program", `{"command": "npx", "args": ["-y", "@x/server"]}`, "npx", false, false},
		{"a trailing blank", `{"command": "npx ", "args": ["-y", "@x/server"]}`, "npx", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := readOne(t, c.entry)
			if tg.Launcher != c.launcher || (len(of(tg, readback.FlagCommandLine)) > 0) != c.flagged || (len(of(tg, readback.FlagHostGrant)) > 0) != c.grant {
				t.Errorf("launcher %q flags %q, want %q, command line %v, grant %v", tg.Launcher, flags(tg), c.launcher, c.flagged, c.grant)
			}
		})
	}
}

// kindsOnly renders a target's flag kinds, sorted.
func kindsOnly(tg *readback.Target) []string {
	var out []string
	for _, f := range tg.Flags {
		out = append(out, string(f.Kind))
	}
	slices.Sort(out)
	return out
}

// TestMoreWrappers: sudo, doas, nohup, nice, timeout... run their
// command in place; doppler, infisical and aws-vault hand it secrets;
// dotenv and uv run --env-file load env files; pnpm dlx, yarn dlx, npm
// exec and uv tool run are npx's twins. Hostile shapes stop at the
// wrapper.
func TestMoreWrappers(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		launcher    string
		unconfined  []string
		secretsBy   string
		envFiles    []string
	}{
		{"sudo sh -c", `{"command": "sudo", "args": ["-E", "sh", "-c", "npx -y srv"]}`, "npx", []string{"npx (through sudo, sh -c)"}, "", nil},
		{"sudo -u user", `{"command": "sudo", "args": ["-u", "mcp", "node", "s.js"]}`, "node", []string{"node (through sudo)"}, "", nil},
		{"sudo -l is no wrapper", `{"command": "sudo", "args": ["-l"]}`, "sudo", []string{"sudo"}, "", nil},
		{"doas -u", `{"command": "doas", "args": ["-uroot", "node", "s.js"]}`, "node", []string{"node (through doas)"}, "", nil},
		{"nohup nice -n", `{"command": "nohup", "args": ["nice", "-n", "10", "node", "s.js"]}`, "node", []string{"node (through nohup, nice)"}, "", nil},
		{"nice -10", `{"command": "nice", "args": ["-10", "node", "s.js"]}`, "node", []string{"node (through nice)"}, "", nil},
		{"ionice -c3", `{"command": "ionice", "args": ["-c3", "node", "s.js"]}`, "node", []string{"node (through ionice)"}, "", nil},
		{"ionice -p", `{"command": "ionice", "args": ["-p", "1"]}`, "ionice", []string{"ionice"}, "", nil},
		{"setsid stdbuf", `{"command": "setsid", "args": ["-w", "stdbuf", "-oL", "node", "s.js"]}`, "node", []string{"node (through setsid, stdbuf)"}, "", nil},
		{"timeout -k 5 60", `{"command": "timeout", "args": ["-k", "5", "60", "node", "s.js"]}`, "node", []string{"node (through timeout)"}, "", nil},
		{"timeout without a command", `{"command": "timeout", "args": ["60"]}`, "timeout", []string{"timeout"}, "", nil},
		{"chrt taskset", `{"command": "chrt", "args": ["-f", "10", "taskset", "-c", "0-3", "node", "s.js"]}`, "node", []string{"node (through chrt, taskset)"}, "", nil},
		{"caffeinate -i", `{"command": "caffeinate", "args": ["-i", "-t", "3600", "node", "s.js"]}`, "node", []string{"node (through caffeinate)"}, "", nil},
		{"xargs", `{"command": "xargs", "args": ["-0", "-n", "1", "node", "s.js"]}`, "node", []string{"node (through xargs)"}, "", nil},
		{"a command line", `{"command": "nice -n 5 node s.js"}`, "node", []string{"node (through nice)"}, "", nil},
		{"doppler run --", `{"command": "doppler", "args": ["run", "-p", "x", "-c", "dev", "--", "node", "s.js"]}`, "node", []string{"node (through doppler run)"}, "doppler run", nil},
		{"doppler run --command", `{"command": "doppler", "args": ["run", "--command", "npx -y srv"]}`, "npx", []string{"npx (through doppler run, sh -c)"}, "doppler run", nil},
		{"doppler secrets is no wrapper", `{"command": "doppler", "args": ["secrets", "get", "X"]}`, "doppler", []string{"doppler"}, "", nil},
		{"infisical run", `{"command": "infisical", "args": ["run", "--env=prod", "--path", "/a", "--", "node", "s.js"]}`, "node", []string{"node (through infisical run)"}, "infisical run", nil},
		{"aws-vault exec", `{"command": "aws-vault", "args": ["exec", "prod", "--duration", "1h", "--", "node", "s.js"]}`, "node", []string{"node (through aws-vault exec)"}, "aws-vault exec", nil},
		{"aws-vault exec without a profile", `{"command": "aws-vault", "args": ["exec", "--", "node"]}`, "aws-vault", []string{"aws-vault"}, "", nil},
		{"dotenv -e -e", `{"command": "dotenv", "args": ["-e", ".env", "-e", "/home/me/.secrets", "--", "node", "s.js"]}`, "node", []string{"node (through dotenv)"}, "", []string{".env", "/home/me/.secrets"}},
		{"dotenv default", `{"command": "dotenv", "args": ["--", "node", "s.js"]}`, "node", []string{"node (through dotenv)"}, "", []string{".env"}},
		{"dotenv without --", `{"command": "dotenv", "args": ["node", "s.js"]}`, "dotenv", []string{"dotenv"}, "", nil},
		{"uv run", `{"command": "uv", "args": ["run", "--with", "mcp", "--env-file", "x.env", "mcp-server", "--port", "1"]}`, "mcp-server", []string{"mcp-server (through uv run)"}, "", []string{"x.env"}},
		{"uv run SCRIPT", `{"command": "uv", "args": ["run", "--directory", "/srv/x", "server.py"]}`, "uv", []string{"uv"}, "", nil},
		{"uv tool run envmcp", `{"command": "uv", "args": ["tool", "run", "envmcp", "node", "s.js"]}`, "node", []string{"node (through uv tool run envmcp)"}, "", []string{".env.mcp (in the working folder or above, else ~/.env.mcp)"}},
		{"pnpm dlx of a server", `{"command": "pnpm", "args": ["dlx", "@x/server"]}`, "pnpm", []string{"pnpm"}, "", nil},
		{"npm exec deno", `{"command": "npm", "args": ["exec", "deno", "task", "x"]}`, "deno", []string{"deno (through npm exec)"}, "", nil},
		{"wrappers past maxWrap", `{"command": "nohup", "args": ["nohup", "nohup", "nohup", "nohup", "nohup", "nohup", "nohup", "node"]}`,
			"nohup", []string{"nohup (through nohup, nohup, nohup, nohup, nohup, nohup)"}, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := readEntry(t, c.entry)
			if e.t.Launcher != c.launcher || !slices.Equal(of(e.t, readback.FlagUnconfined), c.unconfined) {
				t.Errorf("launcher %q unconfined %q, want %q %q (flags %q)", e.t.Launcher, of(e.t, readback.FlagUnconfined), c.launcher, c.unconfined, flags(e.t))
			}
			var files []string
			for _, f := range e.envFiles {
				files = append(files, f.s)
			}
			if e.secretsBy != c.secretsBy || !slices.Equal(files, c.envFiles) {
				t.Errorf("secretsBy %q env files %q, want %q %q", e.secretsBy, files, c.secretsBy, c.envFiles)
			}
		})
	}
}

// TestRootAndShells: sudo and doas run the server as root (a dangerous
// mode) unless -u names another user; PowerShell's encoded, bare and
// -CommandWithArgs forms, bash -c --, and cmd's glued /c are command
// strings read as a shell's.
func TestRootAndShells(t *testing.T) {
	enc := func(s string) string { // UTF-16LE, base64
		var b []byte
		for _, r := range s {
			b = append(b, byte(r), byte(r>>8))
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	for _, c := range []struct {
		name, entry string
		launcher    string
		shell       bool
		danger      []string
	}{
		{"sudo docker", `{"command": "sudo", "args": ["docker", "run", "-i", "--rm", "--privileged", "img:1"]}`, "docker", false,
			[]string{"sudo: the server runs as root"}},
		{"sudo -u root", `{"command": "sudo", "args": ["--user=root", "node", "s.js"]}`, "node", false, []string{"sudo: the server runs as root"}},
		{"sudo -u mcp", `{"command": "sudo", "args": ["-u", "mcp", "node", "s.js"]}`, "node", false, nil},
		{"doas", `{"command": "doas", "args": ["node", "s.js"]}`, "node", false, []string{"doas: the server runs as root"}},
		{"doppler deno -A", `{"command": "doppler", "args": ["run", "--", "deno", "run", "-A", "jsr:@x/y"]}`, "deno", false,
			[]string{"deno -A"}},
		{"-EncodedCommand", `{"command": "powershell", "args": ["-NoProfile", "-EncodedCommand", "` + enc("npx -y srv") + `"]}`, "npx", true, nil},
		{"-enc", `{"command": "powershell", "args": ["-enc", "` + enc("npx -y srv") + `"]}`, "npx", true, nil},
		{"-e that does not decode", `{"command": "pwsh", "args": ["-e", "%%%"]}`, "pwsh", true, nil},
		{"-ec without its value", `{"command": "pwsh", "args": ["-ec"]}`, "pwsh", true, nil},
		{"bare powershell", `{"command": "powershell", "args": ["-NoProfile", "npx -y srv C:\\Users\\x\\Desktop"]}`, "npx", true, nil},
		{"bare pwsh is a script", `{"command": "pwsh", "args": ["./server.ps1"]}`, "pwsh", false, nil},
		{"-CommandWithArgs", `{"command": "pwsh", "args": ["-CommandWithArgs", "npx $args[0]", "srv"]}`, "npx", true, nil},
		{"-ExecutionPolicy Bypass -File", `{"command": "powershell", "args": ["-ExecutionPolicy", "Bypass", "-File", "s.ps1"]}`, "powershell", false, nil},
		{"bash -c --", `{"command": "bash", "args": ["-c", "--", "npx -y srv"]}`, "npx", true, nil},
		{"bash -- script", `{"command": "bash", "args": ["--", "s.sh"]}`, "bash", false, nil},
		{"cmd /c glued quotes", `{"command": "cmd", "args": ["/c\"npx -y srv\""]}`, "npx", true, nil},
		{"cmd /cnpx", `{"command": "cmd", "args": ["/cnpx", "-y", "srv"]}`, "npx", true, nil},
		{"cmd /s /c", `{"command": "cmd", "args": ["/s", "/c", "\"npx -y srv\""]}`, "npx", true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := readOne(t, c.entry)
			if tg.Launcher != c.launcher || (len(of(tg, readback.FlagUnconfinedShell)) > 0) != c.shell {
				t.Errorf("launcher %q flags %q, want %q shell %v", tg.Launcher, flags(tg), c.launcher, c.shell)
			}
			var danger []string
			for _, d := range of(tg, readback.FlagDangerousMode) {
				if strings.HasPrefix(d, "deno -A") {
					d = "deno -A"
				}
				if strings.HasPrefix(d, "sudo") || strings.HasPrefix(d, "doas") || strings.HasPrefix(d, "deno -A") {
					danger = append(danger, d)
				}
			}
			if !slices.Equal(danger, c.danger) {
				t.Errorf("dangerous modes %q, want %q", danger, c.danger)
			}
		})
	}
}

// TestMoreDangerousModes: Codex's -c overrides, gemini -y (gemini only),
// Playwright's unrestricted file access, --no-sandbox in an env value.
func TestMoreDangerousModes(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		want        int
	}{
		{"codex -c sandbox_mode", `{"command": "codex", "args": ["mcp-server", "-c", "sandbox_mode=\"danger-full-access\""]}`, 1},
		{"codex --config=", `{"command": "codex", "args": ["mcp-server", "--config=sandbox_mode=danger-full-access"]}`, 1},
		{"codex approval_policy", `{"command": "codex", "args": ["mcp-server", "-c", "approval_policy='never'"]}`, 1},
		{"codex workspace-write", `{"command": "codex", "args": ["mcp-server", "-c", "sandbox_mode=\"workspace-write\""]}`, 0},
		{"-c of another program", `{"command": "node", "args": ["-c", "x=1"]}`, 0},
		{"gemini -y", `{"command": "gemini", "args": ["-y"]}`, 1},
		{"-y of npx", `{"command": "npx", "args": ["-y", "srv"]}`, 0},
		{"playwright", `{"command": "npx", "args": ["-y", "@playwright/mcp", "--allow-unrestricted-file-access"]}`, 1},
		{"env JSON", `{"command": "npx", "args": ["-y", "srv"], "env": {"PUPPETEER_LAUNCH_OPTIONS": "{\"args\":[\"--no-sandbox\"]}"}}`, 1},
		{"env without it", `{"command": "npx", "args": ["-y", "srv"], "env": {"PUPPETEER_LAUNCH_OPTIONS": "{\"headless\":true}"}}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := readOne(t, c.entry)
			if got := of(tg, readback.FlagDangerousMode); len(got) != c.want {
				t.Errorf("dangerous modes %q, want %d", got, c.want)
			}
		})
	}
}
