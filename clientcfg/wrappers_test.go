package clientcfg

import (
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
