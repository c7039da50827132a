package escape_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// scenario is one attack. real runs it through the client entry on each of
// backends and must see it fail with the host unchanged; weak runs it once
// on weakBackend (or on each of weakBackends) through a weakened wiring and
// must see it succeed. On "landlock" the project is always the Landlock
// one (landlockPolicy); "bare" (weakBackend only) is no confinement at all.
type scenario struct {
	name string
	spec projectSpec
	// landlockSpec, when set, is the project on "landlock" instead
	// (spec's read-write project root does not compile there).
	landlockSpec *projectSpec
	backends     []string
	weakBackend  string
	weakBackends []string
	real         func(t *testing.T, sb *sandbox)
	weak         func(t *testing.T, sb *sandbox)
}

var (
	bindBackends = []string{"bwrap", "docker", "podman"}
	allBackends  = []string{"bwrap", "docker", "podman", "landlock"}
)

// specFor is the scenario's project on backend.
func (sc scenario) specFor(backend string) projectSpec {
	spec := sc.spec
	if backend == "landlock" && sc.landlockSpec != nil {
		spec = *sc.landlockSpec
	}
	if backend == "landlock" {
		spec.landlock = true
	}
	return spec
}

func TestEscape(t *testing.T) {
	start := time.Now()
	s := newSuite(t)
	t.Cleanup(func() { s.removeImages(t) })
	for _, sc := range slices.Concat(scenarios, issue14Scenarios, envFileScenarios, invokerScenarios, daemonScenarios, terminalScenarios, throttleScenarios, policyScenarios, seccompScenarios, landlockAloneScenarios, devShmScenarios,
		wrapperScenarios,
		crossServerScenarios,
		writeReportScenarios,
		bytecodeScenarios,
		modeScenarios,
		scratchScenarios,
		driftScenarios,
		engineEntryScenarios,
		setenvScenarios,
		scratchManyScenarios,
		seedScenarios,
		hideScenarios,
		hiddenWayScenarios,
	) {
		t.Run(sc.name, func(t *testing.T) {
			for _, b := range sc.backends {
				t.Run(b, func(t *testing.T) {
					s.require(t, b)
					sc.real(t, s.sandbox(t, b, sc.specFor(b)))
				})
			}
			weak := sc.weakBackends
			if len(weak) == 0 {
				weak = []string{sc.weakBackend}
			}
			for _, b := range weak {
				t.Run("weakened-"+b, func(t *testing.T) {
					s.require(t, b)
					sc.weak(t, s.sandbox(t, b, sc.specFor(b)))
				})
			}
		})
	}
	t.Logf("escape suite: %s", time.Since(start).Round(time.Millisecond))
}

var scenarios = []scenario{
	{
		// The attacker rewrites what decides its next launch: the
		// artefacts, the client entry, the policy. Out of band, an edit
		// the attacker might have made must stop the next launch (exit 8).
		name: "self-rewrite", backends: bindBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			sb.launchEntry(t, selfRewrite(t, sb)...).requireDenied(t, sb.backend)
			sb.requireUnchanged(t, before)
			sb.requireNoCommandRan(t)

			art := sb.entryArtefact()
			if art == "" { // engine entries pin theirs too
				t.Fatalf("%s: the entry reads no artefact under .mcpolicy: %s %q", sb.backend, sb.entry.Command, sb.entry.Args)
			}
			widen(t, art)
			t.Logf("%s: out of band: widened %s (the home at /home)", sb.backend, art)
			before = sb.snapshot(t)
			sb.launchEntry(t,
				mustNotLeak("read ~/.aws/credentials through the widened artefact", "cat /home/.aws/credentials"),
			).requireRefused(t, sb.backend)
			sb.requireUnchanged(t, before)
			sb.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			steps := selfRewrite(t, sb)
			sb.launchWeakBwrap(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
			sb.requireChanged(t, before)
			// The next launch reads the argv the attacker wrote: its
			// command runs with the host's / bound at /host.
			sb.launchWeakBwrap(t, may("idle", "true"))
			if _, err := os.Stat(sb.marker("self-rewrite-argv")); err != nil {
				t.Errorf("weakened bwrap: the rewritten argv did not run on the host: %v", err)
			} else {
				t.Logf("weakened bwrap: the next launch ran the attacker's argv: %s exists on the host", sb.marker("self-rewrite-argv"))
			}
		},
	},
	{
		// .git decides what the user's next git command runs: replace it
		// (rename the folder, plant a fresh one), or write its config and
		// hooks.
		// So do a nested VCS's and a build tool's project configs
		// (nested-vcs-hook): .hg/hgrc's [hooks] run on the user's next hg
		// command, .mvn/jvm.config's options on every mvn command.
		name: "git-takeover", spec: projectSpec{files: vcsFiles}, backends: bindBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			sb.launchEntry(t, slices.Concat(gitTakeover(sb), vcsHookSteps(sb))...).requireDenied(t, sb.backend)
			sb.requireUnchanged(t, before)
			if sb.backend == bindBackends[0] { // once: mvn takes seconds
				if m := sb.hostTools(t); len(m) > 0 {
					t.Errorf("%s: the user's next hg or mvn command ran a planted command: markers %v", sb.backend, m)
				}
			}
			sb.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			steps := slices.Concat(gitTakeover(sb), vcsHookSteps(sb))
			sb.launchWeakBwrap(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
			sb.requireChanged(t, before)
			requireToolMarkers(t, sb)
			// Later steps write into the planted .git: whichever of its
			// commands git runs, one must run.
			requireMarker(t, sb, "fresh-git-fsmonitor", "config-fsmonitor", "pre-commit", "post-index-change", "swapped-hooks")
		},
	},
	{
		// Names that are absent cannot be bound read-only: the top level
		// is fixed, so they cannot be created either. The project has no
		// .git, so .git is one of them.
		name: "create-protected", spec: projectSpec{noGit: true}, backends: bindBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			sb.launchEntry(t, createProtected(sb)...).requireDenied(t, sb.backend)
			sb.requireUnchanged(t, before)
			for _, name := range []string{".git", ".vscode", ".claude", "mcpolicy.d", "mcpolicy.pins", ".envrc"} {
				if _, err := os.Lstat(filepath.Join(sb.root, name)); err == nil {
					t.Errorf("%s: %s exists on the host", sb.backend, name)
				}
			}
			sb.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			steps := createProtected(sb)
			sb.launchWeakBwrap(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
			sb.requireChanged(t, before)
			requireMarker(t, sb, "created-git-fsmonitor")
		},
	},
	{
		// A mount source swapped for a symlink to the home folder: the
		// swap of a nested source may succeed (src is writable), but the
		// next launch must refuse (exit 8) rather than bind the home. A
		// protected entry cannot be swapped at all.
		name: "symlink-swap", backends: bindBackends, weakBackend: "docker",
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			sb.launchEntry(t, symlinkSwap()...).requireDenied(t, sb.backend)
			sb.requireUnchanged(t, before)
			o := sb.launchEntry(t, readThroughSwaps()...)
			if fi, err := os.Lstat(filepath.Join(sb.root, "src", "gen")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				t.Logf("%s: the host's src/gen is now a symlink to the home", sb.backend)
				o.requireRefused(t, sb.backend)
			} else {
				t.Logf("%s: the swap of src/gen did not reach the host", sb.backend)
				o.requireDenied(t, sb.backend)
			}
			sb.requireUnchanged(t, before)
			sb.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			launch := sb.launchWeakEngine
			if sb.backend == "bwrap" {
				launch = func(t *testing.T, steps ...step) outcome { return sb.launchWeakBwrap(t, steps...) }
			}
			steps := symlinkSwap()
			launch(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
			sb.requireChanged(t, before)
			o := launch(t, readThroughSwaps()...)
			o.requireSucceeded(t, sb.backend, readThroughSwaps()[0].name)
			if !strings.Contains(o.stdout, secret) {
				t.Errorf("weakened %s: the planted credentials were not read through /gen", sb.backend)
			}
		},
	},
	{
		// Landlock: the project read-only, data/ read-write. The ruleset
		// is edited out of band to widen readWrite; the next launch
		// through the entry must refuse (exit 8).
		name: "landlock-ruleset", spec: projectSpec{landlock: true}, backends: []string{"landlock"}, weakBackend: "landlock",
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			sb.launchEntry(t,
				deny("overwrite .mcpolicy/landlock/attacker.json", `printf '{}' > .mcpolicy/landlock/attacker.json`),
				deny("set core.fsmonitor in .git/config", gitConfigFsmonitor(sb, "landlock-config-fsmonitor")),
				deny("create .vscode/tasks.json", vscodeTasks(sb)),
			).requireDenied(t, sb.backend)
			sb.requireUnchanged(t, before)
			sb.requireNoCommandRan(t)

			ruleset := filepath.Join(sb.root, ".mcpolicy", "landlock", "attacker.json")
			if art := sb.entryArtefact(); art != ruleset {
				t.Errorf("landlock: the entry does not launch the committed ruleset %s: %s %q", ruleset, sb.entry.Command, sb.entry.Args)
			}
			widen(t, ruleset)
			before = sb.snapshot(t)
			sb.launchEntry(t, widenedLandlock(sb)...).requireRefused(t, sb.backend)
			sb.requireUnchanged(t, before)
			sb.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, sb *sandbox) {
			widen(t, filepath.Join(sb.root, ".mcpolicy", "landlock", "attacker.json"))
			before := sb.snapshot(t)
			steps := widenedLandlock(sb)
			sb.launchWeakLandlock(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
			sb.requireChanged(t, before)
			requireMarker(t, sb, "landlock-widened-fsmonitor")
		},
	},
}

// requireMarker is the weakened wiring's check that the user's next git
// commands ran a command the attacker planted: one of the named markers.
func requireMarker(t *testing.T, sb *sandbox, names ...string) {
	t.Helper()
	found := sb.hostGit(t)
	if !slices.ContainsFunc(found, func(m string) bool { return slices.Contains(names, m) }) {
		t.Errorf("weakened %s: host git ran no planted command (markers %v, want one of %v)", sb.backend, found, names)
		return
	}
	t.Logf("weakened %s: host git ran the attacker's commands: markers %v", sb.backend, found)
}

func names(steps []step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.name)
	}
	return out
}

// selfRewrite overwrites what decides the next launch. The bwrap argv it
// writes is the current one plus the host's / at /host, running a command
// that leaves a marker on the host.
func selfRewrite(t *testing.T, sb *sandbox) []step {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sb.root, ".mcpolicy", "bwrap", "attacker.json"))
	if err != nil {
		t.Fatal(err)
	}
	argv, rewrap, err := bwrapArgv(b)
	if err != nil {
		t.Fatalf(".mcpolicy/bwrap/attacker.json: %v", err)
	}
	evil := []string{"--bind", "/", "/host"}
	if i := slices.Index(argv, "--"); i >= 0 {
		evil = append(evil, argv[:i]...)
	}
	evil = append(evil, "--", "/bin/sh", "-c", "touch "+shq("/host"+sb.marker("self-rewrite-argv")))
	evilJSON := rewrap(evil)
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"attacker": map[string]any{
		"command": "/bin/sh", "args": []string{"-c", "touch " + sb.marker("mcp-json")},
	}}})
	return []step{
		deny("overwrite .mcpolicy/bwrap/attacker.json (an argv binding the host's /)", "printf '%s' "+shq(string(evilJSON))+" > .mcpolicy/bwrap/attacker.json"),
		deny("overwrite .mcpolicy/bwrap/attacker.sh", fmt.Sprintf(`printf '#!/bin/sh\ntouch %%s\n' %s > .mcpolicy/bwrap/attacker.sh`, shq(sb.marker("wrapper")))),
		deny("overwrite .mcpolicy/docker/attacker.json", "printf '%s' "+shq(`["run","--rm","--privileged","-v","/:/host","`+sb.s.image+`","touch","/host`+sb.marker("docker-args")+`"]`)+" > .mcpolicy/docker/attacker.json"),
		deny("overwrite .mcp.json (the client entry)", "printf '%s' "+shq(string(entry))+" > .mcp.json"),
		// The tool surface the relay enforces (issue #40), were the
		// launcher not to check its digest.
		deny("create .mcpolicy/tools/attacker.json (a tool surface allowing every tool)", `mkdir -p .mcpolicy/tools && printf '{"server":"attacker","allow":[{"pattern":"*"}]}' > .mcpolicy/tools/attacker.json`),
		deny("append to mcpolicy.cue", `printf '\n// widened\n' >> mcpolicy.cue`),
		deny("replace .mcpolicy with a copy", "mv .mcpolicy .mcpolicy.old && cp -r .mcpolicy.old .mcpolicy"),
	}
}

func gitConfigFsmonitor(sb *sandbox, marker string) string {
	return fmt.Sprintf(`printf '[core]\n\tfsmonitor = touch %%s\n' %s >> .git/config`, shq(sb.marker(marker)))
}

// freshGit writes a git folder that host git takes for a repository, with
// core.fsmonitor running a command.
func freshGit(sb *sandbox, marker string) string {
	return fmt.Sprintf(`mkdir -p .git/objects .git/refs .git/hooks && echo 'ref: refs/heads/main' > .git/HEAD && printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch %%s\n' %s > .git/config`, shq(sb.marker(marker)))
}

func hook(sb *sandbox, path, marker string) string {
	return fmt.Sprintf(`printf '#!/bin/sh\ntouch %%s\n' %s > %s && chmod +x %s`, shq(sb.marker(marker)), path, path)
}

func gitTakeover(sb *sandbox) []step {
	return []step{
		deny("rename .git and plant a fresh one with core.fsmonitor", "mv .git .git.old && "+freshGit(sb, "fresh-git-fsmonitor")),
		deny("set core.fsmonitor in .git/config", gitConfigFsmonitor(sb, "config-fsmonitor")),
		deny("plant .git/hooks/pre-commit", hook(sb, ".git/hooks/pre-commit", "pre-commit")),
		deny("plant .git/hooks/post-index-change", hook(sb, ".git/hooks/post-index-change", "post-index-change")),
		deny("swap .git/hooks for a planted folder", "mv .git/hooks .git/hooks.old && mkdir .git/hooks && "+hook(sb, ".git/hooks/pre-commit", "swapped-hooks")),
	}
}

func vscodeTasks(sb *sandbox) string {
	tasks := `{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"touch ` + sb.marker("vscode-task") + `","runOptions":{"runOn":"folderOpen"}}]}`
	return "mkdir -p .vscode && printf '%s' " + shq(tasks) + " > .vscode/tasks.json"
}

func createProtected(sb *sandbox) []step {
	settings := `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch ` + sb.marker("claude-hook") + `"}]}]}}`
	return []step{
		deny("create .git with core.fsmonitor", freshGit(sb, "created-git-fsmonitor")),
		deny("create .vscode/tasks.json", vscodeTasks(sb)),
		deny("create .claude/settings.json", "mkdir -p .claude && printf '%s' "+shq(settings)+" > .claude/settings.json"),
		deny("create mcpolicy.d/x.cue", `mkdir -p mcpolicy.d && printf 'servers: attacker: mounts: [{source: "/", target: "/host", mode: "rw"}]\n' > mcpolicy.d/x.cue`),
		// A pin of the server's own tools (issue #40): what the relay
		// compares its tools/list with.
		deny("create mcpolicy.pins/victim.json", `mkdir -p mcpolicy.pins && printf '{"server":"victim","tools":[]}\n' > mcpolicy.pins/victim.json`),
		deny("create .envrc", "printf 'touch %s\\n' "+shq(sb.marker("envrc"))+" > .envrc"),
		deny("create an unlisted top-level name", ": > planted.txt"),
	}
}

// symlinkSwap replaces two mount sources by symlinks to the planted home:
// a nested one (src/gen, at /gen) and a protected one (.env.local).
func symlinkSwap() []step {
	return []step{
		may("swap src/gen for a symlink to the home", "rm -rf src/gen && ln -s ../../home src/gen"),
		deny("swap .env.local for a symlink to the home", "rm -f .env.local && ln -s ../home .env.local"),
	}
}

func readThroughSwaps() []step {
	return []step{
		mustNotLeak("read ~/.aws/credentials through /gen", "cat /gen/.aws/credentials"),
		mustNotLeak("read ~/.aws/credentials through .env.local", "cat .env.local/.aws/credentials"),
	}
}

// widenedLandlock is what a widened ruleset would let through.
func widenedLandlock(sb *sandbox) []step {
	return []step{
		deny("set core.fsmonitor in .git/config", gitConfigFsmonitor(sb, "landlock-widened-fsmonitor")),
		mustNotLeak("read ~/.aws/credentials", "cat "+shq(filepath.Join(sb.home, ".aws", "credentials"))),
	}
}
