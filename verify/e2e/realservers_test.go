package e2e_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/testenv"
)

// TestRealServers is the acceptance run: gopls, mcp-grafana and the
// go-sdk memory example from the module proxy, and a Node and a Python
// server laid out as npx and uv leave them, each in a user's unconfined
// entry for Claude Code, Codex and Claude Desktop. The unconfined entries
// run first (the control: the Node and Python servers read the planted
// key, so the assertion below can fail); then the policies import writes
// are built, `mcpolicy client --write` replaces each client's entries per
// backend, and each confined entry, spawned as its client spawns it,
// initializes and answers its tools, while the planted ~/.ssh key and a
// file outside the grants stay unreadable through the servers' own tools
// and nothing else in the home or the project changes.
func TestRealServers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the end-to-end test runs the real backends")
	}
	for _, tool := range []string{"git", "node", "npx", systemPython} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, "%s is not installed", tool)
		}
	}
	start := time.Now()
	mcpolicy := tools(t)
	bins := map[string]string{}
	for _, g := range []*goServer{goplsServer, grafanaServer, memoryServer} {
		bins[g.name()] = g.path(t)
	}
	t.Logf("binaries ready in %s", time.Since(start).Round(time.Second))
	w := newRealWorld(t, mcpolicy, bins)
	w.npmRegistry(t)
	w.clientEnv["GRAFANA_SERVICE_ACCOUNT_TOKEN"] = grafanaToken // import's note: the clients that pass their own environment need it there
	for _, c := range realClients {
		must(t, w.writeClientFile(c, filepath.Join(w.base, "unconfined", c.name+c.ext)))
	}
	// Claude Code's user file, where import finds the entries.
	must(t, w.writeClientFile(realClients[0], filepath.Join(w.home, ".claude.json")))

	var bare map[string]time.Duration
	t.Run("unconfined", func(t *testing.T) { bare = w.unconfinedControl(t) })

	commands := w.confine(t)
	took := &timings{d: map[string]time.Duration{}}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			requireBackend(t, backend)
			if backend == "docker" || backend == "podman" {
				importUsrLinksImage(t, backend, w.image)
			}
			for _, c := range realClients {
				t.Run(c.name, func(t *testing.T) { w.confinedRun(t, c, backend, took) })
			}
		})
	}
	t.Cleanup(func() { w.logFigures(t, bare, took, commands) })
}

// unconfinedControl spawns each entry of Claude Code's file as it is, and
// shows what the confined runs must not: the Node and Python servers read
// the planted key and the file outside the grants through their own
// tools. It returns spawn-to-initialize per server.
func (w *realWorld) unconfinedControl(t *testing.T) map[string]time.Duration {
	c := realClients[0]
	file := filepath.Join(w.base, "unconfined", c.name+c.ext)
	bare := map[string]time.Duration{}
	for _, e := range w.entries() {
		spec, err := c.spawn(file, e.name, w.side())
		must(t, err)
		if spec.command == "uvx" {
			if _, err := lookPath("uvx", spec.env); err != nil {
				// uv is not on this machine: run what uvx runs, the
				// tool environment's script.
				spec.command = filepath.Join(w.home, ".local", "share", "uv", "tools", uvTool, "bin", uvTool)
				spec.args = spec.args[1:]
				t.Logf("%s: uvx is not installed here: spawned %s, what uvx runs", e.name, spec.command)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		s, err := spawn(ctx, spec)
		if err != nil {
			cancel()
			t.Errorf("%s does not start unconfined: %v", e.name, err)
			continue
		}
		o := w.probeServer(ctx, e.name, s)
		s.close()
		cancel()
		bare[e.name] = s.initTook
		if len(o.broken) > 0 {
			t.Errorf("%s unconfined: %v", e.name, o.broken)
		}
		for _, p := range o.probes {
			t.Logf("%s unconfined: %s", e.name, p)
		}
		// The weakened wiring: the assertion the confined runs make
		// fails here, for the servers whose tool reads any path.
		if e.name == "notes-node" || e.name == "notes-python" {
			if len(o.leaks) != 2 {
				t.Errorf("%s unconfined read %v of the planted files, want both: the confined runs' assertion proves nothing", e.name, o.leaks)
			}
		}
	}
	return bare
}

// confine writes the policies, as import writes them (with this test's
// hand edits) or, without an import command, as written in realPolicy,
// builds them, and returns per server the commands it took from its
// unconfined entry to a confined one, besides the one `client --write`
// per client.
func (w *realWorld) confine(t *testing.T) map[string]steps {
	out := filepath.Join(w.base, "servers")
	// The env file the launcher reads for clients that pass no
	// environment (Claude Desktop): where import puts the inline secret.
	writeFile(t, filepath.Join(w.home, ".config", "mcpolicy", "env"), "GRAFANA_SERVICE_ACCOUNT_TOKEN="+grafanaToken+"\n", 0o600)
	commands := map[string]steps{}
	if policies, edits, ok := w.importPolicies(t); ok {
		for name, p := range policies {
			writeFile(t, filepath.Join(out, "mcpolicy.d", name+".cue"), p, 0o644)
			// import (which builds), then each edit and a build,
			// then client --write.
			c := steps{host: 2, engine: 2}
			for _, why := range edits[name] {
				c.engine += 2
				if !strings.HasPrefix(why, engineEdit) {
					c.host += 2
				}
			}
			commands[name] = c
			if len(edits[name]) > 0 {
				t.Logf("%s: edited by hand after import: %s\n%s", name, strings.Join(edits[name], "; "), p)
			}
		}
	} else {
		t.Logf("mcpolicy has no import command yet: the expected policies (realPolicy) are built as written")
		writeFile(t, filepath.Join(out, "mcpolicy.cue"), w.expectedPolicy(), 0o644)
		for _, e := range w.entries() {
			commands[e.name] = steps{host: 2, engine: 2} // what import will be, then client --write
		}
	}
	if msg, err := w.run(t, "build", out); err != nil {
		t.Fatalf("the policies do not build: %v\n%s", err, msg)
	}
	return commands
}

// confinedRun writes c's entries for backend and runs every server
// through them.
func (w *realWorld) confinedRun(t *testing.T, c realClient, backend string, took *timings) {
	file := filepath.Join(w.clients, c.name+"-"+backend+c.ext)
	must(t, w.writeClientFile(c, file))
	args := []string{"client", c.name, "--backend", backend, "--file", file, "--write", "--force", "-p", filepath.Join(w.base, "servers")}
	built := map[string]bool{}
	for _, e := range w.entries() {
		if built[e.name] = w.builtFor(e.name, backend); built[e.name] {
			args = append(args, "--server", e.name)
		}
	}
	if msg, err := w.run(t, args...); err != nil {
		t.Fatalf("mcpolicy %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	for _, e := range w.entries() {
		t.Run(e.name, func(t *testing.T) {
			if !built[e.name] {
				t.Skipf("its policy does not list %s", backend)
			}
			spec, err := c.spawn(file, e.name, w.side())
			if err != nil {
				t.Fatalf("%s cannot read its entry: %v", c.name, err)
			}
			home, proj := snap(t, w.home, stateDir), snap(t, w.proj)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			s, err := spawn(ctx, spec)
			if err != nil {
				t.Fatalf("the confined entry does not start as %s spawns it: %v\nentry: %s %s", c.name, err, spec.command, strings.Join(spec.args, " "))
			}
			o := w.probeServer(ctx, e.name, s)
			if exit := s.close(); exit != "" {
				t.Logf("exit after stdin closed: %s", exit)
			}
			took.set(backend+"/"+c.name+"/"+e.name, s.initTook)
			if len(o.broken) > 0 {
				t.Errorf("confined, a tool that must work did not: %v\nstderr:\n%s", o.broken, tail(s.stderr.String(), 15))
			}
			if len(o.leaks) > 0 {
				t.Errorf("confined, the server read the planted %v through its own tool", o.leaks)
			}
			if l := leaked(s, o); len(l) > 0 {
				t.Errorf("confined, a planted secret appears in the session: %v", l)
			}
			for _, p := range o.probes {
				t.Logf("%s", p)
			}
			if ch := home.changes(snap(t, w.home, stateDir)); len(ch) > 0 {
				t.Errorf("the home changed on the host: %v", ch)
			}
			if ch := proj.changes(snap(t, w.proj)); len(ch) > 0 {
				t.Errorf("the project changed on the host: %v", ch)
			}
		})
	}
}

// steps are the commands (hand edits counted as one each, and the build
// after them) from an unconfined entry to a confined one: on the host
// backends and on the engines.
type steps struct{ host, engine int }

// timings are spawn-to-initialize per backend/client/server.
type timings struct {
	mu sync.Mutex
	d  map[string]time.Duration
}

func (t *timings) set(k string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.d[k] = d
}

// logFigures logs the closing note's figures: per server, the commands
// from its unconfined entry to a confined one, and spawn-to-initialize per
// backend (Claude Code's entry) beside the unconfined start.
func (w *realWorld) logFigures(t *testing.T, bare map[string]time.Duration, took *timings, commands map[string]steps) {
	var b strings.Builder
	fmt.Fprintf(&b, "commands from the unconfined entry to a confined one (bwrap and landlock / docker and podman), and spawn to initialize (claude-code's entry):\n%-13s %8s %10s", "server", "commands", "unconfined")
	for _, backend := range backends {
		fmt.Fprintf(&b, " %10s", backend)
	}
	for _, e := range w.entries() {
		fmt.Fprintf(&b, "\n%-13s %8s %10s", e.name, fmt.Sprintf("%d/%d", commands[e.name].host, commands[e.name].engine), bare[e.name].Round(time.Millisecond))
		for _, backend := range backends {
			if d, ok := took.d[backend+"/claude-code/"+e.name]; ok {
				fmt.Fprintf(&b, " %10s", d.Round(time.Millisecond))
			} else {
				fmt.Fprintf(&b, " %10s", "-")
			}
		}
	}
	t.Log(b.String())
}

// builtFor reports whether build wrote server's artefact for backend
// (podman runs docker's).
func (w *realWorld) builtFor(server, backend string) bool {
	if backend == "podman" {
		backend = "docker"
	}
	_, err := os.Stat(filepath.Join(w.base, "servers", ".mcpolicy", backend, server+".json"))
	return err == nil
}

// importUsrLinksImage imports an image holding only the links a merged-/usr
// system has at its root (/bin, /lib, /lib64 into /usr), so that a /usr
// mounted from the host runs: node's and python's loader is
// /lib64/ld-linux-x86-64.so.2.
func importUsrLinksImage(t *testing.T, engine, image string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		must(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: l, Linkname: "usr/" + l, Mode: 0o777}))
	}
	must(t, tw.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	testenv.Import(ctx, t, engine, image, buf.Bytes())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, engine, "rmi", "-f", image).CombinedOutput(); err != nil {
			t.Logf("%s rmi %s: %v\n%s", engine, image, err, out)
		}
	})
}
