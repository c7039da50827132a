package lint

import (
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// SeverityModel is what makes a finding an error, a warning or info: every
// rule's severity follows it (docs/rules.md opens with it).
var SeverityModel = strings.NewReplacer("«", "`", "»", "`").Replace(severityModel)

const severityModel = `## Severity

A finding's severity says what a reviewer must do with it; «lint» exits 5 on an error («--fail-on»
moves the bar), so an error is what a gate must stop.

- **error**: the server can reach what the user did not mean to hand over, now, as written:
  - a local server that nothing confines (no policy, no sandbox) **and** that is handed a home folder,
    one of the user's folders (Desktop, Documents, Downloads, a OneDrive, ~/projects...), a drive or a
    drive's top-level folder, a mounted volume, the filesystem root, a credential store, a secret (by
    value or by reference), or a shell («sh -c», «bash -lc», «cmd /c», PowerShell «-Command»; inline
    code such as «python -c» or «node -e»; a server whose tools run the model's shell commands; code
    its environment loads, «LD_PRELOAD», «NODE_OPTIONS=--require»);
  - a dangerous mode of a runner or an engine: «deno -A» or «--allow-all», «--allow-run»,
    «--privileged», «--network host», the engine's socket, a host namespace, no seccomp or AppArmor, a
    capability added, a tool that skips its own approvals («--dangerously-*», «--yolo»);
  - a confined server whose grant is as wide as none: a home, a root, a credential store, a folder
    above the project, a shared /tmp, a read-write grant of what the host runs next (a code cache,
    a writable .git or client config, at the top of a mount or nested in it);
  - a secret written inline in the file;
  - a sandbox that can exhaust the host (a tmpfs without a size bound);
  - what mcpolicy wrote and no longer matches (a pinned digest, a plan a backend cannot enforce).
- **warning**: a risk a reviewer should weigh, not a hole by itself: a server nothing confines,
  handed only its project (or nothing); a client sandbox, which confines writes but not reads; the
  network open; a container without its hardening flags; a read-write bind to confirm; tools
  approved in advance by name; a placeholder that asks for a secret inline; a variable the client
  does not expand.
- **info**: a fact for the record: a remote server, an image pinned by tag rather than digest, a
  repair lint made to read a file («PARSE»), a disabled entry's findings.

A file lint cannot use at all (no server it can read, a format it does not know) is a «PARSE» error
and exit 1: a gate never passes what it did not read. Each rule below shows, under its flagged
example, what «mcpolicy lint» says of it, severity included.

`

// severityRules are the rules the severity model adds for a server
// nothing confines: handed a shell, or a secret.
func severityRules() []*Rule {
	return []*Rule{
		{
			ID: "UNCONFINED_SHELL", Name: "unconfined-shell", Severity: Error,
			Purpose:     "A server nothing confines runs what a string decides, not a program the entry names: a shell's command string (sh -c, bash -lc, zsh -c, cmd /c, PowerShell -Command, wsl without --exec), an interpreter's inline code (python -c, node -e, perl -e, deno eval), a server whose tools run the shell commands the model writes (desktop-commander, mcp-shell-server, mcp-server-commands, claude mcp serve...), or code its environment makes it load (LD_PRELOAD, NODE_OPTIONS=--require, BASH_ENV, JAVA_TOOL_OPTIONS=-javaagent:).",
			Rationale:   "The client hands the shell a program, not a server: whatever the string says runs, with the user's every right, and a login or interactive shell (bash -l, -i) first runs the start-up files (~/.bashrc, ~/.profile) that any program of the user can rewrite. Inline code is the same string in another language; a shell server hands that string to the model, so a prompt injection in anything it reads runs commands as the user; a preloaded library or a required module runs inside every program the server starts, and whoever can write that file decides what runs. Nothing in the config can say what actually starts, and nothing confines it.",
			Remediation: "Confine the server (a policy, then `mcpolicy client`); if it must run on the host, name the program itself in command, its words in args, no shell (on Windows, npx.cmd needs cmd /c: confine it instead).",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "bash", "args": ["-lc", "cd ~/work/shop && npx -y @modelcontextprotocol/server-filesystem ."]}}}`},
			Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/work/shop"]}}}`},
			check:       flagRule(readback.FlagUnconfinedShell, "%s"),
		},
		{
			ID: "UNCONFINED_SECRET", Name: "unconfined-secret", Severity: Error,
			Purpose:     "A server nothing confines is handed a secret: a variable or option whose name says token, key, secret, password or credential, by value or by reference (${env:GITHUB_TOKEN}, ${input:pat}, Codex's env_vars), or secrets op run resolves.",
			Rationale:   "The secret is the server's to use, but nothing says where it may send it: an unconfined process reaches every host on the network and every file of the user, so a compromised dependency or a prompt injection takes the token with it. A reference keeps the secret out of the file, not out of the process.",
			Remediation: "Confine the server with a policy whose network is an allowlist of the API it calls (the secret passed by name), then `mcpolicy client`; until then, give it a token scoped to the least it needs.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}}}}`},
			Good:        Example{Kind: "client", Text: `{"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_API_URL": "https://api.github.com"}}}}`},
			check:       flagRule(readback.FlagUnconfinedSecret, "%s"),
		},
	}
}
