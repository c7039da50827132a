package clientcfg

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// TestRunsWhatItIsTold: inline code, shell servers and code an env
// variable loads are UNCONFINED_SHELL on an unconfined server, and only
// there; look-alikes (a script's own -c, a heap-size NODE_OPTIONS, another
// package after the server's) are not.
func TestRunsWhatItIsTold(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		want        string // a fragment of the one UNCONFINED_SHELL flag; "" for none
	}{
		{"python -c", `{"command": "python3", "args": ["-c", "import srv; srv.main()"]}`, "python3 runs the code written after -c"},
		{"python -Ic cluster", `{"command": "python3.12", "args": ["-I", "-Bc", "import srv"]}`, "after -Bc"},
		{"python.exe -c", `{"command": "C:\\Python312\\python.exe", "args": ["-c", "x"]}`, "python runs the code"},
		{"python script -c", `{"command": "python3", "args": ["server.py", "-c", "config.toml"]}`, ""},
		{"python -X opt -c", `{"command": "python3", "args": ["-X", "utf8", "-c", "x"]}`, "after -c"},
		{"python -m -c", `{"command": "python3", "args": ["-m", "srv", "-c", "x"]}`, ""},
		{"node -e", `{"command": "node", "args": ["-e", "require('srv').start()"]}`, "node runs the code written after -e"},
		{"node --eval=", `{"command": "node", "args": ["--eval=require('srv')"]}`, "after --eval="},
		{"node script -e", `{"command": "node", "args": ["dist/index.js", "-e", "prod"]}`, ""},
		{"deno eval", `{"command": "deno", "args": ["eval", "import 'npm:srv'"]}`, "after eval"},
		{"perl -e", `{"command": "perl", "args": ["-Mstrict", "-e", "run()"]}`, "after -e"},
		{"npx desktop-commander", `{"command": "npx", "args": ["-y", "@wonderwhy-er/desktop-commander@latest"]}`, "@wonderwhy-er/desktop-commander gives the model terminal commands"},
		{"uvx --from", `{"command": "uvx", "args": ["--from", "mcp-shell-server==1.0.3", "mcp-shell-server"]}`, "mcp-shell-server gives the model shell commands"},
		{"installed program", `{"command": "/usr/local/bin/mcp-shell-server"}`, "mcp-shell-server gives"},
		{"claude mcp serve", `{"command": "claude", "args": ["mcp", "serve"]}`, "Claude Code's Bash tool"},
		{"other package", `{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory", "mcp-shell-server"]}`, ""},
		{"LD_PRELOAD", `{"command": "npx", "args": ["-y", "@x/srv"], "env": {"LD_PRELOAD": "/tmp/hook.so"}}`, "LD_PRELOAD=/tmp/hook.so makes npx load code"},
		{"NODE_OPTIONS --require", `{"command": "node", "args": ["srv.js"], "env": {"NODE_OPTIONS": "--max-old-space-size=4096 -r ./trace.js"}}`, "NODE_OPTIONS="},
		{"NODE_OPTIONS heap", `{"command": "node", "args": ["srv.js"], "env": {"NODE_OPTIONS": "--max-old-space-size=4096"}}`, ""},
		{"JAVA_TOOL_OPTIONS agent", `{"command": "java", "args": ["-jar", "srv.jar"], "env": {"JAVA_TOOL_OPTIONS": "-javaagent:/opt/a.jar"}}`, "JAVA_TOOL_OPTIONS="},
		{"empty LD_PRELOAD", `{"command": "node", "args": ["srv.js"], "env": {"LD_PRELOAD": ""}}`, ""},
		{"confined: docker -e", `{"command": "docker", "args": ["run", "-i", "--rm", "-e", "LD_PRELOAD", "img:1"], "env": {"LD_PRELOAD": "/x.so"}}`, ""},
		{"confined: python -c in docker", `{"command": "docker", "args": ["run", "-i", "--rm", "python:3.12", "python", "-c", "x"]}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := of(readOne(t, c.entry), readback.FlagUnconfinedShell)
			switch {
			case c.want == "" && len(got) != 0:
				t.Errorf("flagged %q", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("flags %q, want one holding %q", got, c.want)
			}
		})
	}
}

// TestClientEnvFileAndHeadersHelper: VS Code's envFile hands an
// unconfined server secrets; Claude Code's headersHelper is a command the
// client runs on the host.
func TestClientEnvFileAndHeadersHelper(t *testing.T) {
	tg := readOne(t, `{"command": "npx", "args": ["-y", "@x/gh"], "envFile": "${workspaceFolder}/.env"}`)
	if got := of(tg, readback.FlagUnconfinedSecret); len(got) != 1 || !strings.Contains(got[0], "env file ${workspaceFolder}/.env, which the client loads (envFile)") {
		t.Errorf("envFile: %q", got)
	}
	tg = readOne(t, `{"command": "docker", "args": ["run", "-i", "--rm", "img:1"], "envFile": ".env"}`)
	if got := of(tg, readback.FlagUnconfinedSecret); len(got) != 0 {
		t.Errorf("envFile of a container entry (passed only by -e NAME): %q", got)
	}
	tg = readOne(t, `{"type": "http", "url": "https://mcp.example.com/mcp", "headersHelper": "/opt/bin/token"}`)
	if got := of(tg, readback.FlagHeadersHelper); len(got) != 1 || !strings.Contains(got[0], `"/opt/bin/token"`) {
		t.Errorf("headersHelper: %q", got)
	}
}
