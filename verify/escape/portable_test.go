package escape_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscale/hujson"
)

// The committed-entry scenarios (issue #34): a project's .mcp.json names
// the launcher, the engine and bwrap without a path, and takes the project
// root from the CLAUDE_PROJECT_DIR Claude Code sets for a project's
// servers, with every project path relative to it.

// claudeCode is how Claude Code spawns a project server of root: the
// command found on the client's PATH (here the launcher's folder first),
// CLAUDE_PROJECT_DIR in its environment, in the project's folder.
func claudeCode(t *testing.T, sb *sandbox, path string) launchOpts {
	t.Helper()
	t.Setenv("PATH", path) // exec.Command finds a command by name on the test's own PATH
	env := map[string]string{"CLAUDE_PROJECT_DIR": sb.root}
	for k, v := range sb.entry.Env {
		env[k] = v
	}
	return launchOpts{env: env}
}

// requireNeutral fails when the committed file names a path of this
// machine: the test's folders, the planted home, the launcher's folder,
// a system program's path; or sets a PATH of its own.
func requireNeutral(t *testing.T, sb *sandbox) {
	t.Helper()
	b, err := os.ReadFile(sb.entryFile())
	must(t, err)
	bad := []string{sb.s.base, sb.dir, sb.home, filepath.Dir(sb.s.launcher), os.TempDir() + "/", "/home/", "/root"}
	for _, prog := range []string{"bwrap", "docker", "podman", "mcpolicy-launch"} {
		if p, err := exec.LookPath(prog); err == nil {
			bad = append(bad, p)
		}
	}
	for _, bad := range bad {
		if strings.Contains(string(b), bad) {
			t.Errorf("%s: the committed .mcp.json holds %q, a path of this machine:\n%s", sb.backend, bad, b)
		}
	}
	if strings.Contains(sb.entry.Command, "/") {
		t.Errorf("%s: the entry runs %q by path, not by name", sb.backend, sb.entry.Command)
	}
	if _, ok := sb.entry.Env["PATH"]; ok {
		t.Errorf("%s: the entry sets PATH (%q): the client's own must find the launcher", sb.backend, sb.entry.Env["PATH"])
	}
}

// moved copies the sandbox's project and home to another folder, as a
// teammate's clone on another machine: another path, another HOME.
func (sb *sandbox) moved(t *testing.T) *sandbox {
	t.Helper()
	dir := sb.dir + "-clone"
	if out, err := exec.Command("cp", "-a", sb.dir, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	m := *sb
	m.dir, m.root, m.home, m.markers = dir, filepath.Join(dir, "proj"), filepath.Join(dir, "home-of-another"), filepath.Join(dir, "markers")
	must(t, os.Rename(filepath.Join(dir, "home"), m.home))
	if m.cwd == sb.root {
		m.cwd = m.root
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return &m
}

// TestPortableEntryMoves writes claude-code's committed entry for a
// project, copies the project to another folder with another HOME, and
// spawns the copy's entry as Claude Code would there: it must start the
// server confined, its grant the new folder (a write lands in the clone,
// not in the original), the home's secret unreadable; and `mcpolicy
// check` there must find no drift.
func TestPortableEntryMoves(t *testing.T) {
	s := newSuite(t)
	for _, backend := range allBackends {
		t.Run(backend, func(t *testing.T) {
			s.require(t, backend)
			sb := s.sandbox(t, backend, projectSpec{portable: true, landlock: backend == "landlock"})
			requireNeutral(t, sb)
			m := sb.moved(t)
			// Before any session: a write report is check's too (exit 5).
			if code, out := m.mcpolicyTry(t, nil, "check", "-p", m.root); code != 0 {
				t.Errorf("%s: mcpolicy check in the moved project: exit %d\n%s", backend, code, out)
			}
			opts := claudeCode(t, m, filepath.Dir(s.launcher)+":"+os.Getenv("PATH"))
			ran := filepath.Join(m.ranDir, "moved.txt")
			steps := []step{
				may("write in the grant", fmt.Sprintf("echo moved > %s", ran)),
				mustNotLeak("read the planted home", "cat "+shq(m.home)+"/.aws/credentials "+shq(sb.home)+"/.aws/credentials"),
			}
			o := m.launchWith(t, "the moved project's committed entry", m.entry.Command, m.entry.Args, opts, steps)
			if o.code != 0 || !o.done {
				t.Fatalf("%s: the moved entry did not run the server (exit %d)\nstdout:\n%s\nstderr:\n%s", backend, o.code, o.stdout, lastLines([]byte(o.stderr), 15))
			}
			o.requireSucceeded(t, backend, "write in the grant")
			if r := o.results["read the planted home"]; r.ok {
				t.Errorf("%s: the server read the home: %s", backend, r.msg)
			}
			o.requireNoSecret(t, backend)
			if _, err := os.Stat(filepath.Join(m.root, ran)); err != nil {
				t.Errorf("%s: the write did not land in the moved project: %v", backend, err)
			}
			if _, err := os.Stat(filepath.Join(sb.root, ran)); err == nil {
				t.Errorf("%s: the moved entry wrote into the original project", backend)
			}
			// Without the variable (a client older than Claude Code 2.1.141),
			// nothing starts.
			delete(opts.env, "CLAUDE_PROJECT_DIR")
			if o := m.launchWith(t, "no CLAUDE_PROJECT_DIR", m.entry.Command, m.entry.Args, opts, steps); o.code == 0 || o.ran {
				t.Errorf("%s: the entry started without CLAUDE_PROJECT_DIR (exit %d)", backend, o.code)
			}
		})
	}
}

// sharedPolicy: the attacker may write ~/shared, where the user keeps
// programs (on PATH); victim is another server of the project.
const sharedPolicy = `version: "v1"
servers: {
	attacker: {
		command: ["/bin/sh", "/workspace/attack.sh"]
		mounts: [
			{source: ".", target: "/workspace", mode: "rw"},
			{source: "~/shared", target: "/shared", mode: "rw"},
		]
		backends: ["bwrap"]
	}
	victim: {
		command: ["/bin/true"]
		backends: ["bwrap"]
	}
}
`

// TestPortableLauncherInGrant: the user installed mcpolicy-launch in
// ~/shared/bin, on PATH, and a server of the project may write ~/shared.
// The committed entry names the launcher, so PATH decides what runs: the
// launcher must refuse (exit 8) to start any server of the project while
// it lies in a read-write grant, so the attacker never runs to rewrite it
// and the victim's next launch runs the real launcher. Weakened: the
// launcher does not know the attacker's grant (its plan is gone from
// .mcpolicy/plan): the attacker runs, replaces ~/shared/bin/mcpolicy-launch,
// and the victim's entry runs the attacker's program on the host.
func TestPortableLauncherInGrant(t *testing.T) {
	s := newSuite(t)
	const backend = "bwrap"
	s.require(t, backend)
	setup := func(t *testing.T) (*sandbox, launchOpts, []step) {
		sb := s.sandbox(t, backend, projectSpec{portable: true, noBuild: true, policy: [2]string{"mcpolicy.cue", sharedPolicy}})
		bin := filepath.Join(sb.home, "shared", "bin")
		must(t, os.MkdirAll(bin, 0o777))
		must(t, os.Chmod(filepath.Dir(bin), 0o777))
		must(t, os.Chmod(bin, 0o777))
		b, err := os.ReadFile(s.launcher)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(bin, "mcpolicy-launch"), b, 0o777))
		sb.mcpolicyRun(t, "build", sb.root)
		sb.mcpolicyRun(t, sb.clientArgs(backend)...)
		if out, err := exec.Command("chmod", "-R", "a+rwX", sb.root).CombinedOutput(); err != nil {
			t.Fatalf("chmod: %v\n%s", err, out)
		}
		must(t, os.Chmod(sb.markers, 0o777))
		sb.entry = sb.readEntry(t)
		requireNeutral(t, sb)
		opts := claudeCode(t, sb, bin+":"+os.Getenv("PATH"))
		planted := fmt.Sprintf("#!/bin/sh\necho planted >&2\n: > %s\n", shq(sb.marker("planted-launcher")))
		steps := []step{may("replace ~/shared/bin/mcpolicy-launch", fmt.Sprintf("printf '%%s' %s > /shared/bin/mcpolicy-launch.new && chmod 755 /shared/bin/mcpolicy-launch.new && mv /shared/bin/mcpolicy-launch.new /shared/bin/mcpolicy-launch", shq(planted)))}
		return sb, opts, steps
	}
	victim := func(t *testing.T, sb *sandbox, opts launchOpts) outcome {
		e := entryOf(t, sb, "victim")
		return sb.launchWith(t, "the victim's committed entry", e.Command, e.Args, opts, nil)
	}
	t.Run(backend, func(t *testing.T) {
		sb, opts, steps := setup(t)
		before := sb.snapshot(t)
		o := sb.launchWith(t, "the attacker's committed entry", sb.entry.Command, sb.entry.Args, opts, steps)
		o.requireRefused(t, backend)
		if !strings.Contains(o.stderr, filepath.Join(sb.home, "shared")) {
			t.Errorf("the refusal does not name the grant:\n%s", o.stderr)
		}
		v := victim(t, sb, opts)
		if v.code != exitTampered {
			t.Errorf("the victim's entry: exit %d, want %d (the launcher lies in the attacker's grant)\nstderr:\n%s", v.code, exitTampered, v.stderr)
		}
		if m := sb.markersFound(t); len(m) > 0 {
			t.Fatalf("the attacker's program ran on the host: %v", m)
		}
		sb.requireUnchanged(t, before)
	})
	t.Run("weakened-"+backend, func(t *testing.T) {
		sb, opts, steps := setup(t)
		must(t, os.Remove(filepath.Join(sb.root, ".mcpolicy", "plan", "attacker.json")))
		o := sb.launchWith(t, "the attacker's entry, its grant unknown to the launcher", sb.entry.Command, sb.entry.Args, opts, steps)
		o.requireSucceeded(t, backend, names(steps)...)
		victim(t, sb, opts)
		if m := sb.markersFound(t); len(m) == 0 {
			t.Errorf("weakened: the victim's entry did not run the planted launcher: the test cannot see the attack")
		} else {
			t.Logf("weakened: the victim's entry ran the attacker's %v on the host", m)
		}
	})
}

// entryOf is server's entry in the sandbox's client file.
func entryOf(t *testing.T, sb *sandbox, server string) entry {
	t.Helper()
	b, err := os.ReadFile(sb.entryFile())
	must(t, err)
	b, err = hujson.Standardize(b)
	must(t, err)
	var cfg struct {
		MCPServers map[string]entry `json:"mcpServers"`
	}
	must(t, json.Unmarshal(b, &cfg))
	e, ok := cfg.MCPServers[server]
	if !ok {
		t.Fatalf("no entry for %s:\n%s", server, b)
	}
	return e
}
