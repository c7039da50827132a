package e2e_test

// The policies `mcpolicy import` should write for the five entries of the
// real-server test (its expected output, less the comments), written by
// hand until import is on main; then the test runs import and logs how
// its output differs from these.

import (
	"fmt"
	"strings"
)

// realPolicy is the expected policy of the five servers, one file. %[1]s
// is the empty image, %[2]s the project (gopls's workspace), %[3]s the npx
// cache folder's name.
//
// Facts that hold whoever writes the policy:
//   - go install puts each Go server in ~/go/bin; the three are static
//     (CGO_ENABLED=0, as the module proxy builds them here), so runtime
//     "static": no loader, nothing of /usr.
//   - gopls serves its working directory (os.Getwd at start; `gopls mcp`
//     has no folder flag), runs `go list` (GOROOT, the module cache, a
//     build cache: the go pack) and reads /proc/self/exe (os.Executable).
//     It refuses to start without a writable cache folder (its index:
//     GOPLSCACHE, else the user's cache folder, else the temporary one):
//     a bounded /tmp, until the go pack's cache is mounted.
//     It finds go on PATH: the go pack sets the sandbox's PATH to the
//     toolchains' bin folders.
//   - mcp-grafana needs GRAFANA_URL (a constant: setenv) and reads a
//     token (a secret: a name, its value in the env file).
//   - the memory example rewrites the file -memory names in place
//     (os.WriteFile): that one file read-write.
//   - npx -y @example/mcp-notes@1.0.0 runs node_modules/.bin/mcp-notes of
//     ~/.npm/_npx/HASH, a link to the package's index.js: run with node
//     directly, the package folder read-only, no npx, no registry.
//   - uv tool install's environment runs bin/mcp-server-notes, a script
//     whose #! is the environment's python (a link to /usr/bin/python3).
//   - docker and podman start an empty image: everything the server runs
//     reaches it through mounts (the go pack's GOROOT; /usr for node and
//     python, which the host backends' runtime baseline binds too). The
//     image holds only the merged-/usr links (/bin, /lib, /lib64).
const realPolicy = `version: "v1"

servers: gopls: {
	description: "gopls v0.23.0 (gopls mcp), serving the project"
	image:       %[1]q
	command: ["~/go/bin/gopls", "mcp"]
	workdir: %[2]q
	runtime: "static"
	backends: ["bwrap", "landlock", "docker"]
	packs: ["go"]
	mounts: [{source: %[2]q, target: %[2]q}]
	scratch: {target: "/tmp", size: "256m"}
}

servers: grafana: {
	description: "mcp-grafana v1.6.3"
	image:       %[1]q
	command: ["~/go/bin/mcp-grafana"]
	runtime: "static"
	backends: ["bwrap", "landlock", "docker"]
	mounts: [{source: "~/go/bin/mcp-grafana", target: "~/go/bin/mcp-grafana"}]
	env: ["GRAFANA_SERVICE_ACCOUNT_TOKEN"]
	setenv: GRAFANA_URL: "http://grafana.internal.example:3000"
}

servers: memory: {
	description: "the go-sdk v1.8.0 memory example"
	image:       %[1]q
	command: ["~/go/bin/memory", "-memory", "~/memory.json"]
	runtime: "static"
	backends: ["bwrap", "landlock", "docker"]
	mounts: [
		{source: "~/go/bin/memory", target: "~/go/bin/memory"},
		{source: "~/memory.json", target: "~/memory.json", mode: "rw"},
	]
}

servers: "notes-node": {
	description: "npx -y @example/mcp-notes@1.0.0 ~/notes"
	image:       %[1]q
	command: ["node", "~/.npm/_npx/%[3]s/node_modules/@example/mcp-notes/index.js", "~/notes"]
	runtime: "node"
	backends: ["bwrap", "landlock", "docker"]
	packs: ["npx"]
	mounts: [
		{source: "~/.npm/_npx/%[3]s/node_modules", target: "~/.npm/_npx/%[3]s/node_modules"},
		{source: "~/notes", target: "~/notes"},
		{source: "/usr", target: "/usr"},
	]
	scratch: {target: "/tmp", size: "64m"}
}

servers: "notes-python": {
	description: "uvx mcp-server-notes ~/notes"
	image:       %[1]q
	command: ["~/.local/share/uv/tools/mcp-server-notes/bin/mcp-server-notes", "~/notes"]
	runtime: "python"
	backends: ["bwrap", "landlock", "docker"]
	packs: ["uvx"]
	mounts: [
		{source: "~/.local/share/uv/tools/mcp-server-notes", target: "~/.local/share/uv/tools/mcp-server-notes"},
		{source: "~/notes", target: "~/notes"},
		{source: "/usr", target: "/usr"},
	]
	scratch: {target: "/tmp", size: "64m"}
}
`

// expectedPolicy renders realPolicy for w.
func (w *realWorld) expectedPolicy() string {
	return fmt.Sprintf(realPolicy, w.image, w.proj, strings.TrimPrefix(w.npxDir, w.home+"/.npm/_npx/"))
}
