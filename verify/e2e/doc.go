// Package e2e runs a real third-party MCP server through the client entries
// mcpolicy writes, the way each client spawns them. Its tests are the
// package; this file only documents it.
//
// The server is github.com/mark3labs/mcp-filesystem-server at a pinned
// version (serverVersion), fetched through the Go module proxy into a
// scratch module and built static, once per test binary. Its policy
// (fsPolicy) runs it with runtime "static": the binary sits in the
// project's bin/ folder and reaches every backend through the project's
// read-only mount at /workspace; data/ is the one read-write grant.
//
// For each backend (bwrap, landlock, docker, and podman running the docker
// artefact) the test runs `mcpolicy build` in a temporary git project, then
// `mcpolicy client TARGET --backend B --write` for Claude Desktop, VS Code
// (a user-scope file, and the project's .vscode/mcp.json with its
// ${workspaceFolder}) and Codex, parses each written file with a strict
// parser of that client's format, and spawns the entry with that client's
// rules for the environment, variable expansion and working directory
// (clients_test.go). Over stdio it speaks MCP (initialize,
// notifications/initialized, tools/list, tools/call) and asserts: a file
// inside the grant is read with its content; the planted
// $HOME/.aws/credentials is not, by its host path (the server's own check
// refuses it) nor through a symlink inside the grant (the server's check
// lets it through; the target is not in the sandbox: ENOENT), and its
// secret appears in no output (the raw stdout, stderr, tool texts); a write
// to .git/config fails with the kernel's denial and leaves it unchanged on
// the host; a write inside data/ reaches the host; nothing else in the
// project or the home changed.
//
// Spawn-to-initialize (process start to the initialize result) is logged
// per backend and client, never asserted.
//
// TestRealServers (realservers_test.go) is issue #34's acceptance run:
// gopls v0.23.0 (`gopls mcp`), grafana's mcp-grafana v1.6.3 and the go-sdk
// v1.8.0 memory example, built from the module proxy and installed in a
// test home's ~/go/bin as go install leaves them, and a Node and a Python
// server (examples/npx-notes, examples/uvx-notes) laid out as `npx -y` and
// `uv tool install` leave them, each in a user's unconfined entry for
// Claude Code, Codex and Claude Desktop. The unconfined entries run first:
// the Node and Python servers read the planted ~/.ssh/id_ed25519 and a
// file outside the grants through their own read_file, so the assertion
// the confined runs make is shown to fail on a weakened wiring. Then
// `mcpolicy import` writes the policies (with the hand edits a user makes,
// each logged and counted; without an import command, the expected
// policies of realpolicy_test.go), and for each backend and client
// `mcpolicy client --write` replaces the entries; each confined entry,
// spawned as its client spawns it, initializes and answers its tools, the
// planted files stay unreadable, no planted secret appears in any output,
// and the home and the project are unchanged. It logs the commands each
// server took and spawn-to-initialize per backend beside the unconfined
// start. TestExamples builds examples/ with `mcpolicy build --check`.
//
// TestPnpmFarm (pnpm_test.go) is issue #42's symlink farm: a pnpm
// monorepo's packages/checkout, whose node_modules links into the
// workspace's store above it. Lint writes the exact read-only mount that
// makes the link resolve in the sandbox; a Node server confined to the
// package requires lodash with it on bwrap, landlock and docker, and
// cannot without it (the control) nor, on bwrap and docker, with the store
// at another target, which lint reports too; the workspace's root mounted
// instead is MOUNT_PARENT's, in diff's words.
//
// TestToolSurface (tools_test.go) is issue #40's acceptance run of the
// tool relay: mcp-filesystem-server, the go-sdk memory example and gopls
// v0.23.0 (`gopls mcp`), each behind a tools section (denied tools, a path argument held under data/,
// a query held to a pattern and a size) beside the same server without
// one, and a server of the test's (testdata/rugpull) that changes a
// pinned tool's description, started through the Claude Desktop entry and
// through `mcpolicy run` (`exec` for Landlock) on bwrap, landlock, docker
// and podman. A denied tool is absent from tools/list and refused when
// called anyway, a constraint's breach is refused naming the policy's
// field, each refusal and the pin change is a line of the server's launch
// log, and allowed calls (a 3 MB file among them) answer with the
// unfiltered server's bytes. The same checks on entries whose artefact
// lost its tool-surface digest must fail.
//
// TestCredentialThroughClientEntries (credentials_test.go) is issue #41
// through real entries: a policy binds GITHUB_TOKEN to a stand-in HTTPS
// upstream on 203.0.113.10 in a network namespace of the test's (its
// certificate from a test CA, the run's roots by SSL_CERT_FILE), `mcpolicy
// client --write` writes Claude Desktop's entry (the value in the env file)
// and Claude Code's (its ${GITHUB_TOKEN}), and each is spawned as its client
// spawns it, in that namespace (nsenter), with --hosts added, on bwrap and
// docker. The server is runtime/supervise's hostile one: it sees only a
// placeholder of the value's shape, wherever it looks; the bound upstream
// receives the value, the other hosts and the decision log never do. With
// the credential turned into an env grant the same checks fail.
//
// -short skips the package (make test-short). Under CI=true a missing
// backend, git, or an unreachable module proxy fails the test; elsewhere it
// skips with the reason.
package e2e
