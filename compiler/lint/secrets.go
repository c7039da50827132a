package lint

import (
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// secretRules flag what a client entry asks of its secrets beyond writing
// them inline (SECRET_INLINE): a placeholder that asks for one inline, a
// secret expanded into argv, and an image that is another party's copy of
// a server the secret is meant for (issue 35, docs/secrets.md).
func secretRules() []*Rule {
	return []*Rule{
		{
			ID: "SECRET_PLACEHOLDER", Name: "secret-placeholder", Severity: Warning,
			Purpose:     "Where a secret goes (an env or headers value whose name says secret, a value after Bearer, a secret-named option in args, a bare argument naming a secret, the password of a connection string), the config holds a placeholder: YOUR_TOKEN_HERE, <token>, <YOUR_API_KEY>, your-api-key, xxxx..., sk-..., ghp_your_token_here, changeme, Bearer YOUR_PAT, postgres://user:<password>@host; or ${GITHUB_TOKEN} in a client that expands nothing in env (Claude Desktop, Cline, Zed, Codex).",
			Rationale:   "A committed config is instructions: a placeholder where the secret goes tells every user to paste the real one into that file, where it is committed, shared and read by every process that reads the project. The value is fake today; the file's instruction is the finding. A placeholder is a value that asks for one (angle or double braces, YOUR_..., ..._HERE, insert/paste/replace ..., changeme, todo, xxx, ***, \"...\", a token prefix with no token after it) where a secret goes; values that say no secret is needed (none, null, dummy, not-needed, empty) are not placeholders, nor is a placeholder where no secret goes (JIRA_URL=https://your-domain.atlassian.net). A real-looking value is SECRET_INLINE, an error; an identifier (ACCOUNT_ID, PROJECT_ID, TENANT_ID, CLIENT_ID, REGION, *_URL, *_USER, *_EMAIL) is no secret whatever its shape. docs/secrets.md has the whole definition.",
			Remediation: "Reference the secret instead of asking for it: the client's own form (${env:GITHUB_TOKEN} in VS Code, Cursor and Windsurf, ${GITHUB_TOKEN} in Claude Code and Gemini CLI), a VS Code password input, or an env file outside the project (`mcpolicy client` writes entries that read ~/.config/mcpolicy/env); say in the README which variable to set.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"github": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN", "ghcr.io/github/github-mcp-server:v0.9.1"], "env": {"GITHUB_TOKEN": "YOUR_TOKEN_HERE"}}}}`},
			Good:        Example{Kind: "client", Text: `{"mcpServers": {"github": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN", "ghcr.io/github/github-mcp-server:v0.9.1"], "env": {"CLOUDFLARE_ACCOUNT_ID": "0123456789abcdef0123456789abcdef", "OPENAI_API_KEY": "not-needed"}}}}`},
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, f := range t.Flags {
					if f.Kind != readback.FlagSecretPlaceholder {
						continue
					}
					how := "pass it by reference"
					if strings.HasPrefix(f.Value, "-") || f.Value == "an argument" {
						how = "pass it in the server's env, by reference" // a reference in argv is SECRET_IN_ARGV
					}
					report(f.Pos, "%s holds a placeholder: the file asks for the secret inline; %s (%s)", f.Value, how, references(t.File, f.Value))
				}
			},
		},
		{
			ID: "SECRET_IN_ARGV", Name: "secret-in-argv", Severity: Warning,
			Purpose:     "A secret reference is expanded into the command line: a VS Code ${input:ID} whose input is a password, a secret-named variable (${env:GITHUB_TOKEN}, Claude Code's ${GITHUB_TOKEN}, $TOKEN in a sh -c string), or any reference as the value of a secret-named option (--token ${env:X}, -e GITHUB_TOKEN=${input:pat}, --header \"Authorization: Bearer ${env:X}\"), in args where the client (or the shell) expands it.",
			Rationale:   "The file no longer holds the secret, but the process does, in its argv: on Linux and macOS every local user and process can read a command line (ps, /proc/PID/cmdline), crash reports and process monitors record it, and a container engine's CLI keeps its arguments in its own. An environment variable is readable by the process's own user only.",
			Remediation: "Pass the secret in env: the entry's env with the same reference (\"GITHUB_TOKEN\": \"${input:github_token}\"), and -e GITHUB_TOKEN (by name) for a container, or the server's own variable instead of its --token option.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"github": {"command": "sh", "args": ["-c", "exec github-mcp-server stdio --token \"$GITHUB_TOKEN\""]}}}`},
			Good:        Example{Kind: "client", Text: `{"mcpServers": {"github": {"command": "sh", "args": ["-c", "exec github-mcp-server stdio --log-file \"$LOG_FILE\""]}}}`},
			check:       flagRule(readback.FlagSecretInArgv, "%s is expanded into argv: every local user and process can read it in ps and /proc; pass it in env"),
		},
		{
			ID: "IMAGE_MIRROR", Name: "image-mirror", Severity: Warning,
			Purpose:     "A container entry pulls a well-known MCP server's image (github-mcp-server, mcp-server-*, server-*: the reference servers, a few vendors') from a public registry under a namespace that is not its publisher's: someone/github-mcp-server, not ghcr.io/github/github-mcp-server. Docker's catalogue (docker.io/mcp/*) is a publisher; a private registry's copy and an image of another name are not judged.",
			Rationale:   "A copy is built by whoever owns that namespace, from sources and with changes no one reviews: the token the entry hands it (GITHUB_TOKEN, a database password) and the folders it mounts run through their build. Typosquatted and abandoned mirrors of popular servers are the first place a supply-chain attack on MCP users looks. The table of official images is data (compiler/lint/mirrors.go).",
			Remediation: "Pull the publisher's image (pinned by digest), or build the server yourself from its source and push it to a registry of your own.",
			Bad:         dockerRun(append(append([]string{}, confined...), "someone/github-mcp-server:latest")...),
			Good:        dockerRun(append(append([]string{}, confined...), "ghcr.io/github/github-mcp-server:v0.9.1")...),
			check: func(t *readback.Target, o Options, report reportFn) {
				if img, ok := entryImage(t); ok {
					if official := mirrorOf(img); official != "" {
						name, _, _ := imageRef(img)
						what := "what you hand it runs"
						if len(t.Plan.Env) > 0 {
							what = "the token you pass runs"
						}
						report(t.ImagePos, "image %s is a copy of %s published by another party: %s through their build", name, official, what)
					}
				}
			},
		},
	}
}

// envLike is a variable's name (not an option's, not a phrase).
var envLike = lazyre.New(`^[A-Z_][A-Z0-9_]*$`)

// references says how the client of file passes a secret by reference,
// for a variable name (or an option, a header: the server's own variable
// then).
func references(file, name string) string {
	v := "TOKEN"
	if envLike.MatchString(name) {
		v = name
	}
	s := filepath.ToSlash(file)
	base := filepath.Base(s)
	switch {
	case base == ".mcp.json" || base == ".claude.json" || strings.HasSuffix(s, ".gemini/settings.json"):
		return "${" + v + "}, an env file outside the project"
	case strings.HasSuffix(s, ".vscode/mcp.json") || strings.HasSuffix(s, "/User/mcp.json") || strings.HasSuffix(s, "/User/settings.json"):
		return "${env:" + v + "}, a password input, an env file outside the project"
	case strings.HasSuffix(s, ".cursor/mcp.json") || strings.HasSuffix(s, "windsurf/mcp_config.json"):
		return "${env:" + v + "}, an env file outside the project"
	case base == "claude_desktop_config.json" || base == "cline_mcp_settings.json" || base == "mcp_settings.json" ||
		strings.HasSuffix(s, "zed/settings.json") || strings.EqualFold(filepath.Ext(s), ".toml"):
		return "this client expands none: an env file outside the project, which `mcpolicy client` entries read"
	}
	return "${env:" + v + "}, an input, an env file outside the project"
}
