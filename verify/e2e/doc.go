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
// -short skips the package (make test-short). Under CI=true a missing
// backend, git, or an unreachable module proxy fails the test; elsewhere it
// skips with the reason.
package e2e
