package lint

import "github.com/mcpolicy/mcpolicy/compiler/readback"

// homeVarRule lives here, with the lexical reading of host paths it
// belongs to; Registry sorts rules by ID, wherever they are declared.
func homeVarRule() *Rule {
	return &Rule{
		ID: "HOME_NOT_EXPANDED", Name: "home-not-expanded", Severity: Warning,
		Purpose:     "A stdio entry's command, argument or env value names the home folder as ~, $HOME, ${HOME}, %USERPROFILE%... in a form its client does not expand: the server receives the text as written.",
		Rationale:   "Clients start stdio servers without a shell, so nothing expands ~ or $HOME, and each client expands only its own variables: VS Code and Cursor ${userHome} and ${env:HOME}, Claude Code ${HOME}, Gemini CLI $HOME and ${HOME}, Claude Desktop, Cline, Zed and Codex none. docker then takes ~/.aws for a volume name and refuses to start, bwrap binds a folder named ~ below its working directory, a filesystem server is handed a path that does not exist; and a reviewer of the config cannot tell which folder on whose machine was meant. Lint still judges the path as the home it names, but for a mount docker, podman or bwrap is handed unexpanded: they refuse it and the server does not start, so it grants nothing and no other finding is made of it.",
		Remediation: "Write the absolute path, or the variable this client expands (${userHome} in VS Code and Cursor, ${HOME} in Claude Code and Gemini CLI).",
		Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "~/Documents"]}}}`},
		Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Documents"]}}}`},
		check:       flagRule(readback.FlagHomeUnexpanded, "%s"),
	}
}

// varRule: a variable reference the client does not expand.
func varRule() *Rule {
	return &Rule{
		ID: "VAR_NOT_EXPANDED", Name: "var-not-expanded", Severity: Warning,
		Purpose:     "An argument or env value holds a variable reference its client does not expand (${TOKEN} in Cursor, VS Code or Windsurf, which expand ${env:TOKEN}; ${env:TOKEN} in Claude Code, which expands ${TOKEN}; any variable in Claude Desktop, Cline, Roo, Zed or Codex): the server receives the text as written.",
		Rationale:   "Each client expands its own forms and passes the rest as written, with no shell after it: the server gets the string \"${GITHUB_TOKEN}\" as its token and fails at its first call, or reads \"$DATA\" as a folder name; a config copied from one client's README to another's breaks silently. Lint judges the reference by the client the file belongs to, known by its name.",
		Remediation: "Write the form this client expands (${env:NAME} in VS Code, Cursor and Windsurf; ${NAME} in Claude Code and Gemini CLI), or, where the client expands nothing, pass the variable by name (Codex's env_vars) or set the value in the client's own environment.",
		Bad:         Example{Kind: "client", Text: `{"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_API_URL": "${GITHUB_URL}"}}}}`},
		Good:        Example{Kind: "client", Text: `{"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_API_URL": "https://api.github.com"}}}}`},
		check:       flagRule(readback.FlagVarUnexpanded, "%s"),
	}
}
