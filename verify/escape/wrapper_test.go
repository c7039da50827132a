package escape_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The by-hand scenarios (issue #32): the bind backends' attacks on the
// grants, run through what a person runs rather than the client entry —
// `sh .mcpolicy/bwrap/attacker.sh` on bwrap, `mcpolicy run` on bwrap,
// docker and podman, and `mcpolicy exec` on Landlock (onLandlock) — as a
// developer runs them: their own account (uid 1000 when the suite is
// root), pipes, their environment, the project as the working folder.
// Each must hold what the entry holds. The weakened wiring is the wrapper
// build wrote before: bwrap with the spec's arguments and plain binds, run
// by hand the same way; for Landlock, no confinement at all.
var wrapperScenarios = []scenario{
	onLandlock(byHand("by-hand-self-rewrite", projectSpec{}, func(t *testing.T, sb *sandbox, w wiring) {
		before := sb.snapshot(t)
		var steps []step
		if sb.backend == "landlock" {
			steps = landlockSelfRewrite(sb)
		} else {
			steps = selfRewrite(t, sb)
		}
		w.launch(t, sb, steps...).requireDenied(t, w.name)
		sb.requireUnchanged(t, before)
		sb.requireNoCommandRan(t)
		if !w.pinned {
			t.Logf("%s: out of band: not applicable, it compiles the policy and reads nothing under .mcpolicy", w.name)
			return
		}
		widen(t, filepath.Join(sb.root, ".mcpolicy", "bwrap", "attacker.json"))
		before = sb.snapshot(t)
		w.launch(t, sb, mustNotLeak("read ~/.aws/credentials through the widened artefact", "cat /home/.aws/credentials")).requireRefused(t, w.name)
		sb.requireUnchanged(t, before)
		sb.requireNoCommandRan(t)
	}, func(t *testing.T, sb *sandbox) {
		steps := selfRewrite(t, sb)
		sb.launchOldWrapper(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
		// The next run by hand runs what the attacker wrote there.
		sb.launchByHand(t, may("idle", "true"))
		if _, err := os.Stat(sb.marker("wrapper")); err != nil {
			t.Errorf("weakened: the rewritten wrapper did not run on the host: %v", err)
		} else {
			t.Logf("weakened: the next run by hand ran the attacker's wrapper: %s exists on the host", sb.marker("wrapper"))
		}
	}), func(t *testing.T, sb *sandbox) {
		steps := landlockSelfRewrite(sb)
		sb.launchBare(t, sb.developer(t), steps...).requireSucceeded(t, sb.backend, names(steps)...)
		// The next mcpolicy exec compiles the policy the attacker wrote.
		o := sb.launchExec(t, may("read ~/.aws/credentials through the rewritten policy", "cat "+shq(filepath.Join(sb.home, ".aws", "credentials"))))
		if !strings.Contains(o.stdout, secret) {
			t.Errorf("weakened: the next mcpolicy exec did not read the home through the rewritten policy (exit %d)\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, lastLines([]byte(o.stderr), 5))
		} else {
			t.Logf("weakened: the next mcpolicy exec ran the attacker's policy and read ~/.aws/credentials")
		}
	}),
	onLandlock(byHand("by-hand-git-takeover", projectSpec{files: vcsFiles}, func(t *testing.T, sb *sandbox, w wiring) {
		before := sb.snapshot(t)
		w.launch(t, sb, slices.Concat(gitTakeover(sb), vcsHookSteps(sb))...).requireDenied(t, w.name)
		sb.requireUnchanged(t, before)
		sb.requireNoCommandRan(t)
	}, func(t *testing.T, sb *sandbox) {
		steps := slices.Concat(gitTakeover(sb), vcsHookSteps(sb))
		sb.launchOldWrapper(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
		requireMarker(t, sb, "fresh-git-fsmonitor", "config-fsmonitor", "pre-commit", "post-index-change", "swapped-hooks")
	}), func(t *testing.T, sb *sandbox) {
		steps := slices.Concat(gitTakeover(sb), vcsHookSteps(sb))
		sb.launchBare(t, sb.developer(t), steps...).requireSucceeded(t, sb.backend, names(steps)...)
		requireMarker(t, sb, "fresh-git-fsmonitor", "config-fsmonitor", "pre-commit", "post-index-change", "swapped-hooks")
	}),
	onLandlock(byHand("by-hand-create-protected", projectSpec{noGit: true}, func(t *testing.T, sb *sandbox, w wiring) {
		before := sb.snapshot(t)
		w.launch(t, sb, createProtected(sb)...).requireDenied(t, w.name)
		sb.requireUnchanged(t, before)
		for _, name := range []string{".git", ".vscode", ".claude", "mcpolicy.d", ".envrc", "planted.txt"} {
			if _, err := os.Lstat(filepath.Join(sb.root, name)); err == nil {
				t.Errorf("%s: %s exists on the host", w.name, name)
			}
		}
		sb.requireNoCommandRan(t)
	}, func(t *testing.T, sb *sandbox) {
		steps := createProtected(sb)
		sb.launchOldWrapper(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
		requireMarker(t, sb, "created-git-fsmonitor")
	}), func(t *testing.T, sb *sandbox) {
		steps := createProtected(sb)
		sb.launchBare(t, sb.developer(t), steps...).requireSucceeded(t, sb.backend, names(steps)...)
		requireMarker(t, sb, "created-git-fsmonitor")
	}),
	byHand("by-hand-symlink-swap", projectSpec{}, func(t *testing.T, sb *sandbox, w wiring) {
		before := sb.snapshot(t)
		w.launch(t, sb, symlinkSwap()...).requireDenied(t, w.name)
		sb.requireUnchanged(t, before)
		o := w.launch(t, sb, readThroughSwaps()...)
		if fi, err := os.Lstat(filepath.Join(sb.root, "src", "gen")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			t.Logf("%s: the host's src/gen is now a symlink to the home", w.name)
			if w.pinned {
				o.requireRefused(t, w.name)
			} else {
				o.requireCompileRefused(t, w.name)
			}
		} else {
			t.Logf("%s: the swap of src/gen did not reach the host", w.name)
			o.requireDenied(t, w.name)
		}
		sb.requireUnchanged(t, before)
		sb.requireNoCommandRan(t)
	}, func(t *testing.T, sb *sandbox) {
		steps := symlinkSwap()
		sb.launchOldWrapper(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
		o := sb.launchOldWrapper(t, readThroughSwaps()...)
		o.requireSucceeded(t, sb.backend, readThroughSwaps()[0].name)
		if !strings.Contains(o.stdout, secret) {
			t.Errorf("weakened: the planted credentials were not read through /gen")
		}
	}),
}

// requireCompileRefused checks that mcpolicy run, which compiles the
// policy at each start, refused it (exit 2, a policy error with its
// position: the compiler cannot tell a swapped source from one the user
// linked) before anything of the payload ran.
func (o outcome) requireCompileRefused(t *testing.T, name string) {
	t.Helper()
	o.requireNoSecret(t, name)
	if o.code != exitInvalid || o.ran || !strings.Contains(o.stderr, "is a symlink") {
		t.Errorf("%s: exit %d, payload ran: %v; want exit %d, nothing run, and the symlink named\nstdout:\n%s\nstderr:\n%s",
			name, o.code, o.ran, exitInvalid, o.stdout, lastLines([]byte(o.stderr), 15))
		return
	}
	t.Logf("%s: the next start was refused: exit %d: %s", name, o.code, lastLines([]byte(o.stderr), 2))
}

// exitInvalid is mcpolicy's exit code for a policy it refuses.
const exitInvalid = 2

// A wiring is one way a person starts the server.
type wiring struct {
	name   string
	launch func(t *testing.T, sb *sandbox, steps ...step) outcome
	// pinned: it reads the committed spec, pinned by its digest, so an
	// edit made out of band must be refused.
	pinned bool
}

// wiringsFor are the ways a person starts the server on backend: on bwrap
// the wrapper by hand, and mcpolicy run; on an engine, mcpolicy run; on
// Landlock, mcpolicy exec.
func wiringsFor(backend string) []wiring {
	if backend == "landlock" {
		return []wiring{{name: "mcpolicy exec --server attacker", launch: func(t *testing.T, sb *sandbox, steps ...step) outcome {
			return sb.launchExec(t, steps...)
		}}}
	}
	run := wiring{name: "mcpolicy run --backend " + backend, launch: func(t *testing.T, sb *sandbox, steps ...step) outcome {
		return sb.launchRun(t, steps...)
	}}
	if isEngine(backend) {
		return []wiring{run}
	}
	return []wiring{{name: "sh .mcpolicy/bwrap/attacker.sh", pinned: true, launch: func(t *testing.T, sb *sandbox, steps ...step) outcome {
		return sb.launchByHand(t, steps...)
	}}, run}
}

// byHand is a scenario on the bind backends whose attack (attack) runs
// through each of the backend's wirings, each on a project of its own
// (a swap the first one made would stop the second at its start), and
// whose weakened wiring (weak) is the wrapper build wrote before, on
// bwrap.
func byHand(name string, spec projectSpec, attack func(*testing.T, *sandbox, wiring), weak func(*testing.T, *sandbox)) scenario {
	return scenario{
		name: name, spec: spec, backends: bindBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			for i, w := range wiringsFor(sb.backend) {
				t.Run(strings.NewReplacer(" ", "_", "/", "-").Replace(w.name), func(t *testing.T) {
					if i > 0 {
						sb = sb.s.sandbox(t, sb.backend, spec)
					}
					attack(t, sb, w)
				})
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			sb.writeOldWrapper(t)
			before := sb.snapshot(t)
			weak(t, sb)
			sb.requireChanged(t, before)
		},
	}
}

// onLandlock adds to a by-hand scenario its Landlock leg (mcpolicy exec,
// on the Landlock project: read-only, data/ read-write) and that leg's
// weakened wiring, weakBare: no confinement ("bare"), the payload run by
// the developer on the host, where every step succeeds.
func onLandlock(sc scenario, weakBare func(*testing.T, *sandbox)) scenario {
	sc.backends = allBackends
	sc.weakBackends = []string{sc.weakBackend, bare}
	weak := sc.weak
	sc.weak = func(t *testing.T, sb *sandbox) {
		if sb.backend != bare {
			weak(t, sb)
			return
		}
		before := sb.snapshot(t)
		weakBare(t, sb)
		sb.requireChanged(t, before)
	}
	return sc
}

// landlockSelfRewrite overwrites what decides the next start on the
// Landlock project: the ruleset, the client entry, and the policy, which
// mcpolicy exec compiles at each start (rewritten to grant the home's
// ~/.aws).
func landlockSelfRewrite(sb *sandbox) []step {
	widened := strings.Replace(landlockPolicy, `{source: "data", target: "/data", mode: "rw"},`, `{source: "data", target: "/data", mode: "rw"},
		{source: "~/.aws", target: "/aws"},`, 1)
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"attacker": map[string]any{
		"command": "/bin/sh", "args": []string{"-c", "touch " + sb.marker("mcp-json")},
	}}})
	return []step{
		deny("overwrite .mcpolicy/landlock/attacker.json", `printf '{}' > .mcpolicy/landlock/attacker.json`),
		deny("overwrite .mcp.json (the client entry)", "printf '%s' "+shq(string(entry))+" > .mcp.json"),
		deny("rewrite mcpolicy.cue to grant ~/.aws", "printf '%s' "+shq(widened)+" > mcpolicy.cue"),
		deny("replace .mcpolicy with a copy", "mv .mcpolicy .mcpolicy.old && cp -r .mcpolicy.old .mcpolicy"),
	}
}

// launchExec runs mcpolicy exec for the attacker, as a developer types
// it in the project.
func (sb *sandbox) launchExec(t *testing.T, steps ...step) outcome {
	t.Helper()
	return sb.launchWith(t, "mcpolicy exec --server attacker (by hand)", sb.s.mcpolicy, []string{"exec", "--policy", sb.root, "--server", "attacker"}, sb.developer(t), steps)
}

// developer is how a developer starts a server by hand: their own account
// (uid 1000 when the suite runs as root), their environment (PATH with
// where `go install` put mcpolicy and mcpolicy-launch first), a pipe as
// stdin, the project as the working folder (launchWith's). The markers
// folder becomes theirs to write: a command the attacker planted that the
// developer runs next must be able to leave its marker.
func (sb *sandbox) developer(t *testing.T) launchOpts {
	t.Helper()
	must(t, os.Chmod(sb.markers, 0o777))
	r, w, err := os.Pipe()
	must(t, err)
	w.Close()
	t.Cleanup(func() { r.Close() })
	opts := launchOpts{stdin: r, env: map[string]string{
		"PATH": filepath.Dir(sb.s.launcher) + ":" + os.Getenv("PATH"),
		"USER": "developer",
		"LANG": "C.UTF-8",
		"TERM": "xterm-256color",
	}}
	if os.Geteuid() == 0 {
		opts.cred = &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{}}
	}
	return opts
}

// launchByHand runs the wrapper build wrote, as a developer types it in
// the project: sh .mcpolicy/bwrap/attacker.sh.
func (sb *sandbox) launchByHand(t *testing.T, steps ...step) outcome {
	t.Helper()
	return sb.byHandAs(t, "sh .mcpolicy/bwrap/attacker.sh (by hand)", steps)
}

func (sb *sandbox) byHandAs(t *testing.T, how string, steps []step) outcome {
	t.Helper()
	return sb.launchWith(t, how, "/bin/sh", []string{".mcpolicy/bwrap/attacker.sh"}, sb.developer(t), steps)
}

// launchRun runs mcpolicy run for the backend: on bwrap as a developer,
// on an engine as the suite (an engine's user is root, or its group's),
// with the entry's environment (the engine's address).
func (sb *sandbox) launchRun(t *testing.T, steps ...step) outcome {
	t.Helper()
	opts := sb.developer(t)
	if isEngine(sb.backend) {
		opts.cred = nil
		for k, v := range sb.entry.Env {
			opts.env[k] = v
		}
	}
	return sb.launchWith(t, "mcpolicy run --backend "+sb.backend, sb.s.mcpolicy, []string{"run", "-p", sb.root, "--server", "attacker", "--backend", sb.backend}, opts, steps)
}

// launchOldWrapper is launchByHand of the wrapper writeOldWrapper wrote.
func (sb *sandbox) launchOldWrapper(t *testing.T, steps ...step) outcome {
	t.Helper()
	return sb.byHandAs(t, "the wrapper before #32 (bwrap, plain binds), by hand", steps)
}

// writeOldWrapper puts in place of .mcpolicy/bwrap/attacker.sh the wrapper
// build wrote before issue #32: bwrap with the spec's arguments, host
// paths from PROJECT_ROOT (the script's folder's grandparent unless set)
// and HOME, its project bound with a plain --bind. Its checks of the
// caller's terminal, descriptors and uid are left out: these attacks go
// through the grants, not through those.
func (sb *sandbox) writeOldWrapper(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sb.root, ".mcpolicy", "bwrap", "attacker.json"))
	must(t, err)
	var spec struct {
		Args []string `json:"args"`
	}
	must(t, json.Unmarshal(b, &spec))
	words := make([]string, len(spec.Args))
	for i, a := range spec.Args {
		q := shq(a)
		for _, v := range []string{"PROJECT_ROOT", "HOME"} {
			q = strings.ReplaceAll(q, "${"+v+"}", `'"${`+v+`}"'`)
		}
		words[i] = q
	}
	script := fmt.Sprintf(`#!/bin/sh
# Generated by mcpolicy build; do not edit. (The wrapper before #32.)
set -eu
: "${PROJECT_ROOT:=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd -P)}"
exec bwrap %s
`, strings.Join(words, " "))
	path := filepath.Join(sb.root, ".mcpolicy", "bwrap", "attacker.sh")
	must(t, os.WriteFile(path, []byte(script), 0o666))
	must(t, os.Chmod(path, 0o666))
}
