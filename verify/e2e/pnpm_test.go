package e2e_test

// Issue #42's symlink farm: a pnpm monorepo whose packages/checkout links
// lodash into the workspace's store, one folder above the package's own
// policy. Lint names the read-only mount that makes the link resolve in
// the sandbox; a Node server confined to the package requires lodash with
// that mount, on every backend, and fails to without it (the control).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// farmStore is lodash's folder in the workspace's store (pnpm's virtual
// store), relative to shop/, and farmMarker what its index.js exports.
const (
	farmStore  = "node_modules/.pnpm/lodash@4.17.21/node_modules"
	farmMarker = "lodash from the workspace store"
)

// farmServer is packages/checkout's server: a stdio MCP server (JSON-RPC,
// one message per line) whose tool "lodash" requires the package's
// dependency as Node resolves it (from the script's folder, through the
// node_modules link, to its real path) and answers what it exports, or
// the error.
const farmServer = `'use strict';
const readline = require('readline');
function lodash() {
  try {
    return { content: [{ type: 'text', text: require('lodash').marker }] };
  } catch (err) {
    return { isError: true, content: [{ type: 'text', text: err.code + ': ' + err.message }] };
  }
}
function answer(msg) {
  switch (msg.method) {
    case 'initialize':
      return { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'checkout', version: '1.0.0' } };
    case 'tools/list':
      return { tools: [{ name: 'lodash', description: 'require lodash', inputSchema: { type: 'object', properties: {} } }] };
    case 'tools/call':
      return lodash();
  }
  return undefined;
}
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch (err) { return; }
  if (msg.id === undefined) return;
  const result = answer(msg);
  process.stdout.write(JSON.stringify(result === undefined
    ? { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'method not found' } }
    : { jsonrpc: '2.0', id: msg.id, result }) + '\n');
});
rl.on('close', () => process.exit(0));
`

// farmPolicy confines the checkout server to its package, read-only at
// /workspace, with /usr for node (the engines' image is empty but for the
// merged-/usr links); %[2]s is the store's mount, or nothing.
const farmPolicy = `version: "v1"

servers: checkout: {
	image:   %[1]q
	command: ["node", "/workspace/server.js"]
	workdir: "/workspace"
	runtime: "node"
	backends: ["bwrap", "landlock", "docker"]
	mounts: [
		{source: ".", target: "/workspace"},
		{source: "/usr", target: "/usr"},%[2]s
	]
}
`

// mountLine is a mount as lint writes it, ready to paste.
var mountLine = regexp.MustCompile(`\{source: "[^"]*", target: "[^"]*", mode: "ro"\}`)

// TestPnpmFarm: lint, on the package's policy, writes the exact mount;
// pasted as written, lint is quiet and `require('lodash')` works in the
// sandbox on bwrap, landlock and docker; without it, it fails there.
func TestPnpmFarm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the end-to-end test runs the real backends")
	}
	if _, err := exec.LookPath("node"); err != nil {
		unavailable(t, "node is not installed")
	}
	mcpolicy := tools(t)
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-e2e-pnpm-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	base, err = filepath.EvalSymlinks(base)
	must(t, err)
	must(t, os.Chmod(base, 0o755))
	shop, home := filepath.Join(base, "shop"), filepath.Join(base, "home")
	checkout := filepath.Join(shop, "packages", "checkout")
	image := fmt.Sprintf("mcpolicy-e2e-pnpm:t%d-%d", os.Getpid(), time.Now().UnixNano())
	for p, body := range map[string]string{
		filepath.Join(shop, "package.json"):                      `{"private": true}` + "\n",
		filepath.Join(shop, "pnpm-workspace.yaml"):               "packages: [\"packages/*\"]\n",
		filepath.Join(shop, farmStore, "lodash", "package.json"): `{"name": "lodash", "version": "4.17.21", "main": "index.js"}` + "\n",
		filepath.Join(shop, farmStore, "lodash", "index.js"):     fmt.Sprintf("module.exports = { marker: %q };\n", farmMarker),
		filepath.Join(checkout, "package.json"):                  `{"name": "checkout", "dependencies": {"lodash": "4.17.21"}}` + "\n",
		filepath.Join(checkout, "server.js"):                     farmServer,
		filepath.Join(home, ".local", "state", ".keep"):          "",
	} {
		writeFile(t, p, body, 0o644)
	}
	must(t, os.MkdirAll(filepath.Join(checkout, "node_modules"), 0o755))
	// pnpm's link: from packages/checkout/node_modules up to the workspace.
	must(t, os.Symlink("../../../"+farmStore+"/lodash", filepath.Join(checkout, "node_modules", "lodash")))

	env := append(os.Environ(), "HOME="+home)
	mc := func(t *testing.T, ok bool, args ...string) string {
		t.Helper()
		cmd := exec.Command(mcpolicy, args...)
		cmd.Dir, cmd.Env = checkout, env
		out, err := cmd.CombinedOutput()
		if ok && err != nil {
			t.Fatalf("mcpolicy %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	policy := func(t *testing.T, store string) {
		t.Helper()
		if store != "" {
			store = "\n\t\t" + store + ","
		}
		writeFile(t, filepath.Join(checkout, "mcpolicy.cue"), fmt.Sprintf(farmPolicy, image, store), 0o644)
		mc(t, true, "build", checkout)
	}

	// Lint names the mount: the store's lodash@4.17.21/node_modules, at
	// the sandbox path ../../../ leads to from /workspace/node_modules (..
	// stops at /), read-only.
	policy(t, "")
	out := mc(t, false, "lint", checkout)
	line := mountLine.FindString(out)
	want := fmt.Sprintf(`{source: %q, target: %q, mode: "ro"}`, filepath.Join(shop, farmStore), "/"+farmStore)
	if line != want || !strings.Contains(out, "SYMLINK_ESCAPE") {
		t.Fatalf("lint does not name the exact mount %s:\n%s", want, out)
	}

	side := clientSide{env: envMap(env), workspace: checkout, cwd: "/"}
	side.env["PATH"] = filepath.Dir(mcpolicy) + string(filepath.ListSeparator) + side.env["PATH"]
	clients := filepath.Join(base, "clients")
	must(t, os.MkdirAll(clients, 0o755))
	// require runs the server on backend through its Claude Desktop
	// entry and calls its tool: lodash's marker, or the error.
	require := func(t *testing.T, backend, phase string) result {
		t.Helper()
		file := filepath.Join(clients, phase+"-"+backend+".json")
		mc(t, true, "client", "claude-desktop", "--backend", backend, "--file", file, "--write", "-p", checkout)
		spec, err := claudeDesktopSpawn(file, "checkout", side)
		must(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		s, err := spawn(ctx, spec)
		if err != nil {
			t.Fatalf("the confined server does not start: %v\nentry: %s %s", err, spec.command, strings.Join(spec.args, " "))
		}
		defer s.close()
		r, err := s.call(ctx, "lodash", map[string]any{})
		if err != nil {
			t.Fatalf("%v\nstderr:\n%s", err, tail(s.stderr.String(), 15))
		}
		return r
	}
	farmBackends := []string{"bwrap", "landlock", "docker"}
	for _, b := range farmBackends {
		requireBackend(t, b)
	}
	importUsrLinksImage(t, "docker", image)

	// The control: without the mount the link dangles in the sandbox, on
	// every backend (on the host it resolves: lint's finding is the
	// sandbox's view).
	t.Run("without the mount", func(t *testing.T) {
		for _, b := range farmBackends {
			t.Run(b, func(t *testing.T) {
				if r := require(t, b, "control"); !r.isError || !strings.Contains(r.text, "MODULE_NOT_FOUND") {
					t.Errorf("require('lodash') without the store's mount: %+v, want MODULE_NOT_FOUND", r)
				}
			})
		}
	})

	// The store granted at another target: bwrap and docker show it
	// where the link does not lead, and it dangles there; lint does not
	// go quiet, and names the mount. Landlock shows host paths: it
	// resolves.
	t.Run("the store at another target", func(t *testing.T) {
		policy(t, strings.Replace(line, `target: "/`+farmStore+`"`, `target: "/store"`, 1))
		if out := mc(t, false, "lint", checkout); !strings.Contains(out, "SYMLINK_ESCAPE") || !strings.Contains(out, "mount /store ("+filepath.Join(shop, farmStore)+") holds their targets") {
			t.Errorf("lint does not name the mount at the wrong target:\n%s", out)
		}
		for _, b := range farmBackends {
			t.Run(b, func(t *testing.T) {
				r := require(t, b, "elsewhere")
				if resolves := !r.isError && r.text == farmMarker; resolves != (b == "landlock") {
					t.Errorf("require('lodash') with the store at /store: %+v", r)
				}
			})
		}
	})

	// The line, pasted as lint wrote it: lint is quiet, require works.
	t.Run("with the mount lint names", func(t *testing.T) {
		policy(t, line)
		if out := mc(t, false, "lint", checkout); strings.Contains(out, "SYMLINK_") {
			t.Errorf("lint still reports the links with its own mount:\n%s", out)
		}
		for _, b := range farmBackends {
			t.Run(b, func(t *testing.T) {
				if r := require(t, b, "fixed"); r.isError || r.text != farmMarker {
					t.Errorf("require('lodash') with %s: %+v, want %q", line, r, farmMarker)
				}
			})
		}
	})

	// The tempting fix, the workspace mounted where the package was:
	// lint reports it as diff does.
	t.Run("the parent mount", func(t *testing.T) {
		writeFile(t, filepath.Join(checkout, "mcpolicy.cue"), strings.Replace(fmt.Sprintf(farmPolicy, image, ""), `{source: ".", target: "/workspace"}`,
			fmt.Sprintf(`{source: %q, target: "/shop"}`, shop), 1), 0o644)
		out := mc(t, false, "lint", checkout)
		if !strings.Contains(out, "MOUNT_PARENT") || !strings.Contains(out, "mount /shop moved up: ${PROJECT_ROOT} -> "+shop+" (a parent holds more)") {
			t.Errorf("lint does not report the parent mount as widening:\n%s", out)
		}
	})
}
