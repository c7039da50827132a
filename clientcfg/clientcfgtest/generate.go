// Package clientcfgtest makes MCP client configs for tests and benchmarks.
package clientcfgtest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// users are the home folders the generated entries name, as the configs
// people publish write them: macOS, Linux, Windows (both separators), and
// the forms a client or a shell would have to expand.
var homes = []string{"/Users/alice", "/home/bob", `C:\Users\carol`, "C:/Users/dave", "~", "$HOME", "${HOME}", "%USERPROFILE%"}

// Config returns a Claude-style config ({"mcpServers": ...}) with n server
// entries, a deterministic mix of docker, podman, npx, uvx, bwrap and
// sandbox-exec launches: confined and not, with workspace, home, credential
// store, drive root and system folder mounts, env and inline values.
func Config(n int) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"mcpServers\": {\n")
	for i := 0; i < n; i++ {
		home := homes[i%len(homes)]
		sep := "/"
		if strings.Contains(home, `\`) || strings.HasPrefix(home, "%") {
			sep = `\`
		}
		at := func(rel string) string {
			if rel == "" {
				return home
			}
			return home + sep + strings.ReplaceAll(rel, "/", sep)
		}
		var cmd string
		var args []string
		env := map[string]string{}
		switch i % 12 {
		case 0: // a README's docker entry
			cmd = "docker"
			args = []string{"run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", fmt.Sprintf("ghcr.io/github/github-mcp-server:v%d", i)}
			env["GITHUB_PERSONAL_ACCESS_TOKEN"] = "<YOUR_TOKEN>"
		case 1: // a confined docker entry on the workspace
			cmd = "docker"
			args = []string{"run", "-i", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL",
				"--security-opt", "no-new-privileges", "--user", "1000:1000", "-v", "${workspaceFolder}:/workspace",
				"--tmpfs", "/tmp:size=64m", fmt.Sprintf("example/indexer:%d", i)}
		case 2: // docker with a home's credential store and a project under it
			cmd = "docker"
			args = []string{"run", "-i", "--rm", "-v", at(".aws") + ":/root/.aws:ro", "-v", at("src/app") + ":/app",
				"-e", "AWS_REGION=us-east-1", fmt.Sprintf("example/aws-mcp:%d", i)}
		case 3: // podman, a whole home and an ssh folder
			cmd = "podman"
			args = []string{"run", "-i", "--rm", "--userns", "keep-id", "-v", at("") + ":/home/u", "-v", at(".ssh") + ":/home/u/.ssh:ro",
				fmt.Sprintf("quay.io/example/git-mcp:%d", i)}
		case 4: // the filesystem server on the host
			cmd = "npx"
			args = []string{"-y", "@modelcontextprotocol/server-filesystem", at("Documents"), at("src")}
		case 5: // uvx on the host
			cmd = "uvx"
			args = []string{"mcp-server-git", "--repository", at(fmt.Sprintf("repos/r%d", i))}
		case 6: // bwrap with the system folders and the workspace
			cmd = "bwrap"
			args = []string{"--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr",
				"--ro-bind", "/etc", "/etc", "--symlink", "usr/lib", "/lib", "--proc", "/proc", "--dev", "/dev",
				"--bind", "${workspaceFolder}", "/w", "--chdir", "/w", "--", "/usr/bin/node", "server.js"}
		case 7: // bwrap with / and the network
			cmd = "bwrap"
			args = []string{"--bind", "/", "/", "--share-net", "--ro-bind", "/usr", "/usr", "--bind", ".", "/w", "--", "/usr/bin/python3", "-m", "server"}
		case 8: // sandbox-exec with an inline profile
			cmd = "sandbox-exec"
			args = []string{"-p", `(version 1)(deny default)(allow file-read* (subpath "/usr/lib"))(allow file-read* (subpath (param "ROOT")))`,
				"-D", "ROOT=" + at("src/app"), "/usr/local/bin/server"}
		case 9: // sandbox-exec with a profile file beside the config
			cmd = "sandbox-exec"
			args = []string{"-f", "profiles/server.sb", "-D", "HOME=" + at(""), "/usr/local/bin/server"}
		case 10: // docker with a drive root and the engine socket
			cmd = "docker"
			root := "C:/"
			if i%24 == 10 {
				root = `C:\`
			}
			args = []string{"run", "-i", "--rm", "-v", root + ":/host:ro", "-v", "/var/run/docker.sock:/var/run/docker.sock",
				fmt.Sprintf("example/ops:%d", i)}
		case 11: // node on the host, with a relative path and a token
			cmd = "node"
			args = []string{"./build/index.js", "--root", at(".claude"), "--token", "ghp_" + strings.Repeat("a1B2", 9)}
			env["API_KEY"] = "sk-" + strings.Repeat("Zx9", 12)
		}
		fmt.Fprintf(&b, "    %s: {\n      \"command\": %s,\n      \"args\": [", q(fmt.Sprintf("%s-%d", cmd, i)), q(cmd))
		for j, a := range args {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(q(a))
		}
		b.WriteString("]")
		if len(env) > 0 {
			b.WriteString(",\n      \"env\": {")
			first := true
			for _, k := range []string{"GITHUB_PERSONAL_ACCESS_TOKEN", "API_KEY"} {
				if v, ok := env[k]; ok {
					if !first {
						b.WriteString(", ")
					}
					first = false
					b.WriteString(q(k) + ": " + q(v))
				}
			}
			b.WriteString("}")
		}
		b.WriteString("\n    }")
		if i < n-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  }\n}\n")
	return []byte(b.String())
}

// q quotes s as JSON, leaving <, > and & as they are.
func q(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
