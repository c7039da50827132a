package lint

import "github.com/mcpolicy/mcpolicy/compiler/readback"

// homeVarRule lives here, with the lexical reading of host paths it
// belongs to; Registry sorts rules by ID, wherever they are declared.
func homeVarRule() *Rule {
	return &Rule{
		ID: "HOME_NOT_EXPANDED", Name: "home-not-expanded", Severity: Warning,
		Purpose:     "A stdio entry's command or argument names the home folder as ~, $HOME, ${HOME}, %USERPROFILE%... in a form its client does not expand: the server receives the text as written.",
		Rationale:   "Clients start stdio servers without a shell, so nothing expands ~ or $HOME, and each client expands only its own variables: VS Code and Cursor ${userHome} and ${env:HOME}, Claude Code ${HOME}, Gemini CLI $HOME and ${HOME}, Claude Desktop, Cline, Zed and Codex none. docker then takes ~/.aws for a volume name and refuses to start, bwrap binds a folder named ~ below its working directory, a filesystem server is handed a path that does not exist; and a reviewer of the config cannot tell which folder on whose machine was meant. Lint still judges the path as the home it names.",
		Remediation: "Write the absolute path, or the variable this client expands (${userHome} in VS Code and Cursor, ${HOME} in Claude Code and Gemini CLI).",
		Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "~/Documents"]}}}`},
		Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Documents"]}}}`},
		check:       flagRule(readback.FlagHomeUnexpanded, "%s"),
	}
}
