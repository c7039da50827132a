// Package launchdiag induces the five failures a new user meets — a
// missing path, a read-only file system, a program not on the sandbox's
// PATH, a read-write grant the server's user cannot write, a refused
// launch — with a small Python MCP server started through its real
// client entry on bwrap and Landlock, and holds each to a line in the
// server's launch log and a `mcpolicy doctor --server` explanation that
// names the fix.
package launchdiag

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// server is a minimal stdio MCP server (initialize, tools/list) that
// first does what its argument says fails.
const server = `import sys, json, os, subprocess
mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode == "missing":
    open(os.environ.get("DIAG_DATA", "") or sys.argv[2]).read()
elif mode == "readonly":
    os.makedirs("/var/cache/diag-server", exist_ok=True)
elif mode == "nobinary":
    subprocess.run(["mcpdiag-tool", "--version"], check=True)
elif mode == "unwritable":
    open(sys.argv[2] + "/state.json", "w").write("{}")
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    r = {}
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "diag", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
`

const policy = `version: "v1"
servers: {
	ok:         {command: ["python3", "/srv/server.py"], mounts: [{source: "srv", target: "/srv"}], backends: ["bwrap", "landlock"]}
	missing:    {command: ["python3", "/srv/server.py", "missing", "DATA/config.json"], mounts: [{source: "srv", target: "/srv"}], backends: ["bwrap", "landlock"]}
	readonly:   {command: ["python3", "/srv/server.py", "readonly"], mounts: [{source: "srv", target: "/srv"}], backends: ["bwrap", "landlock"]}
	nobinary:   {command: ["python3", "/srv/server.py", "nobinary"], mounts: [{source: "srv", target: "/srv"}], backends: ["bwrap", "landlock"]}
	unwritable: {command: ["python3", "/srv/server.py", "unwritable", "OUT"], mounts: [{source: "srv", target: "/srv"}, {source: "OUT", target: "OUT", mode: "rw"}], backends: ["bwrap", "landlock"]}
}
`

type fixture struct {
	project, state, tools, out, data string
	mcpolicy                         string
}

func setup(t *testing.T) *fixture {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	for _, name := range []string{"bwrap", "landlock"} {
		b, err := registry.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if why := testenv.Unavailable(b.Runtime()); why != "" {
			skipOrFail(t, "%s: %s", name, why)
		}
	}
	if _, err := exec.LookPath("python3"); err != nil {
		skipOrFail(t, "python3: %v", err)
	}
	base := t.TempDir()
	// A root launcher runs the server as the plan's 1000:1000: every
	// folder on the way to a grant is one it can reach.
	for d := base; d != "/"; d = filepath.Dir(d) {
		if d == os.TempDir() {
			break
		}
		os.Chmod(d, 0o755)
	}
	f := &fixture{project: filepath.Join(base, "proj"), state: filepath.Join(base, "state"), tools: filepath.Join(base, "tools"),
		out: filepath.Join(base, "out"), data: filepath.Join(base, "data")}
	bin := filepath.Join(base, "bin")
	testbin.Install(t, testbin.Mcpolicy(t), filepath.Join(bin, "mcpolicy"))
	testbin.Install(t, testbin.Launch(t), filepath.Join(bin, "mcpolicy-launch"))
	f.mcpolicy = filepath.Join(bin, "mcpolicy")
	for _, d := range []string{filepath.Join(f.project, "srv"), f.tools, f.out, f.data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(f.project, "srv", "server.py"), server, 0o644)
	write(t, filepath.Join(f.data, "config.json"), "{}\n", 0o644)
	write(t, filepath.Join(f.tools, "mcpdiag-tool"), "#!/bin/sh\necho 1.0\n", 0o755)
	pol := strings.ReplaceAll(strings.ReplaceAll(policy, "DATA", f.data), "OUT", f.out)
	write(t, filepath.Join(f.project, "mcpolicy.cue"), pol, 0o644)
	if out, err := f.run(t, "build"); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return f
}

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, so not skipping: "+format, args...)
	}
	t.Skipf(format, args...)
}

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, mode)
}

// run runs mcpolicy in the project, with the fixture's state folder and
// the tools folder on its PATH (not on the sandbox's).
func (f *fixture) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(f.mcpolicy, args...)
	cmd.Dir = f.project
	cmd.Env = []string{"HOME=" + os.Getenv("HOME"), "XDG_STATE_HOME=" + f.state, "PATH=" + filepath.Dir(f.mcpolicy) + ":" + f.tools + ":/usr/local/bin:/usr/bin:/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// record is the newest record of server on backend since start.
func (f *fixture) record(t *testing.T, server, backend string, since time.Time) *launchlog.Record {
	t.Helper()
	r, err := launchlog.Last(launchlog.Path(filepath.Join(f.state, "mcpolicy"), f.project, server), backend, since)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFiveFailures(t *testing.T) {
	f := setup(t)
	t.Run("control", func(t *testing.T) {
		out, err := f.run(t, "doctor", "--server", "ok", "--timeout", "60s")
		if err != nil || strings.Count(out, ": ok, 1 tools") != 2 {
			t.Fatalf("the control server does not answer on both backends: %v\n%s", err, out)
		}
	})
	cases := []struct {
		server string
		fix    []string // what doctor's fix must say, per backend
		root   bool     // only a root launcher meets it
	}{
		{server: "missing", fix: []string{`add {source: "` + filepath.Join(f.data, "config.json") + `", target: "` + filepath.Join(f.data, "config.json") + `"} to mounts`}},
		{server: "readonly", fix: []string{`set scratch: {target: "/var`}},
		{server: "nobinary", fix: []string{`add {source: "` + f.tools + `", target: "` + f.tools + `"} to mounts`}},
		{server: "unwritable", fix: []string{"chown -R 1000:1000 " + f.out, `user: "invoker"`}, root: true},
	}
	for _, c := range cases {
		t.Run(c.server, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("a server runs as its plan's user only when root starts it")
			}
			start := time.Now()
			out, err := f.run(t, "doctor", "--server", c.server, "--timeout", "60s")
			if err == nil {
				t.Fatalf("doctor --server %s passed:\n%s", c.server, out)
			}
			for _, backend := range []string{"bwrap", "landlock"} {
				if !strings.Contains(out, c.server+" on "+backend+": FAILED") {
					t.Errorf("%s: no failure reported:\n%s", backend, out)
				}
				if r := f.record(t, c.server, backend, start); r == nil || !r.Failed() || len(r.Stderr) == 0 {
					t.Errorf("%s: no failed launch with stderr in the log: %+v", backend, r)
				}
			}
			for _, want := range c.fix {
				if n := strings.Count(out, want); n < 2 {
					t.Errorf("the fix %q is named on %d backends, want both:\n%s", want, n, out)
				}
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		if out, err := f.run(t, "client", "claude-code", "--server", "ok", "--write"); err != nil {
			t.Fatalf("client --write: %v\n%s", err, out)
		}
		// The artefact changes after the entry pinned it: the launcher
		// refuses (exit 8), and the client would see EOF.
		art := filepath.Join(f.project, ".mcpolicy", "bwrap", "ok.json")
		b, err := os.ReadFile(art)
		if err != nil {
			t.Fatal(err)
		}
		write(t, art, string(b)+" ", 0o644)
		start := time.Now()
		out, err := f.run(t, "doctor", "--server", "ok", "--client", filepath.Join(f.project, ".mcp.json"), "--timeout", "60s")
		if err == nil {
			t.Fatalf("doctor passed a tampered artefact:\n%s", out)
		}
		r := f.record(t, "ok", "bwrap", start)
		if r == nil || r.Refused == "" || r.Fix == "" {
			t.Fatalf("no refusal with a fix in the log: %+v", r)
		}
		for _, want := range []string{"the launcher refused to start it", "mcpolicy build"} {
			if !strings.Contains(out, want) {
				t.Errorf("doctor does not say %q:\n%s", want, out)
			}
		}
	})
}
