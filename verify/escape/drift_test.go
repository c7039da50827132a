package escape_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tailscale/hujson"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// driftScenarios: drift the launcher used to let through — "a mount added
// on a Tuesday to unblock someone is permanent, invisible in code review if
// it lives in a local client config". Not the server's writes this time:
// the user's own hand edits, which must be refused at spawn or reported by
// `mcpolicy check` (non-zero), never run unseen.
var driftScenarios = []scenario{
	{
		// The entry's --project-root edited by hand to the home: the digest
		// pins the artefact, the root decides where its ${PROJECT_ROOT}
		// grants land, so the launcher refuses a root that is not the
		// pinned artefact's project (exit 8). Weakened: the same edited
		// entry without its pin (the launcher's unverified mode), which
		// mounts the home where the project was: the server reads it.
		name: "entry-hand-root", backends: []string{"bwrap"}, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			handRoot(t, sb, false)
			before := sb.snapshot(t)
			sb.launchEntry(t, handRootSteps()...).requireRefused(t, sb.backend)
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			handRoot(t, sb, true)
			steps := handRootSteps()
			// The session records go elsewhere: in the moved root (the home)
			// the launcher would refuse to record them, and so to start.
			env := maps.Clone(sb.entry.Env)
			if env == nil {
				env = map[string]string{}
			}
			env["XDG_STATE_HOME"] = filepath.Join(filepath.Dir(sb.home), "state")
			o := sb.launch(t, "the hand-edited entry without its pin", sb.entry.Command, sb.entry.Args, env, steps)
			o.requireSucceeded(t, sb.backend, steps[0].name)
			if !strings.Contains(o.stdout, secret) {
				t.Errorf("weakened %s: the home's secret was not read through the moved root", sb.backend)
			}
		},
	},
	{
		// A --mount of the planted home added by hand to the engine
		// entry's inline arguments: the launcher compares them with the
		// pinned artefact and refuses (exit 8) before any engine runs;
		// check reports the entry. Weakened: the same edited arguments
		// run by the engine without the launcher — the server reads the
		// home.
		name: "entry-hand-mount", backends: []string{"docker", "podman"}, weakBackends: []string{"docker", "podman"},
		real: func(t *testing.T, sb *sandbox) {
			handMount(t, sb)
			before := sb.snapshot(t)
			sb.launchEntry(t,
				mustNotLeak("read ~/.aws/credentials through the hand-added mount", "cat /home/.aws/credentials"),
			).requireRefused(t, sb.backend)
			sb.requireUnchanged(t, before)
			if code, out := sb.mcpolicyTry(t, nil, "check", "-p", sb.root); code == 0 || !strings.Contains(out, ".mcp.json") {
				t.Errorf("%s: check after a hand-added --mount: exit %d, want drift naming .mcp.json\n%s", sb.backend, code, out)
			} else {
				t.Logf("%s: check: exit %d: %s", sb.backend, code, lastLines([]byte(out), 3))
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			handMount(t, sb)
			i := slices.Index(sb.entry.Args, "--")
			engine := sb.entry.Args[slices.Index(sb.entry.Args, "--engine")+1]
			var args []string
			for _, a := range sb.entry.Args[i+1:] {
				args = append(args, sb.expand(a))
			}
			steps := []step{mustNotLeak("read ~/.aws/credentials through the hand-added mount", "cat /home/.aws/credentials")}
			o := sb.launch(t, "the hand-edited engine args, no launcher", engine, args, sb.entry.Env, steps)
			o.requireSucceeded(t, sb.backend, steps[0].name)
			if !strings.Contains(o.stdout, secret) {
				t.Errorf("weakened %s: the secret was not read through the hand-added mount", sb.backend)
			}
		},
	},
	{
		// The bwrap artefact edited by hand (the home bound at /home) and
		// the entry's digest re-pinned to match: the launcher runs what the
		// entry pins, so only comparing the artefact with its policy, as
		// build --check does, sees it — check exits 8. Weakened: the
		// re-pinned entry, which nothing else stops, reads the home.
		name: "artefact-repinned", backends: []string{"bwrap"}, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			repin(t, sb)
			if code, out := sb.mcpolicyTry(t, nil, "check", "-p", sb.root); code != exitTampered || !strings.Contains(out, "TAMPERED") {
				t.Errorf("check after an artefact edit re-pinned in the entry: exit %d, want %d (TAMPERED)\n%s", code, exitTampered, out)
			} else {
				t.Logf("check: exit %d: %s", code, lastLines([]byte(out), 3))
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			repin(t, sb)
			steps := []step{mustNotLeak("read ~/.aws/credentials through the re-pinned artefact", "cat /home/.aws/credentials")}
			o := sb.launchEntry(t, steps...)
			o.requireSucceeded(t, sb.backend, steps[0].name)
		},
	},
	{
		// The entry in the user's ~/.claude.json (this project's scope)
		// replaced by a hand-written bwrap command: no longer mcpolicy's,
		// so nothing judged it; check reads the user-scope file and
		// reports it at its position (exit 6). Weakened: the hand-written
		// entry runs, and reads the home.
		name: "entry-unmanaged", backends: []string{"bwrap"}, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			handWritten(t, sb)
			code, out := sb.mcpolicyTry(t, nil, "check", "-p", sb.root)
			if code == 0 || !strings.Contains(out, filepath.Join(sb.home, ".claude.json")+":") || !strings.Contains(out, "UNMANAGED") && !strings.Contains(out, "not mcpolicy's entry") {
				t.Errorf("check with a hand-written entry in ~/.claude.json: exit %d, want it reported\n%s", code, out)
			} else {
				t.Logf("check: exit %d: %s", code, lastLines([]byte(out), 3))
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			command, args := handWritten(t, sb)
			steps := []step{mustNotLeak("read ~/.aws/credentials from the hand-written entry", "cat "+shq(filepath.Join(sb.home, ".aws", "credentials")))}
			o := sb.launchWith(t, "the hand-written entry", command, args, launchOpts{onHost: true}, steps)
			o.requireSucceeded(t, sb.backend, steps[0].name)
		},
	},
}

// editEntry rewrites the attacker's entry in the project's .mcp.json by
// hand, as a user would, and reads it back.
func editEntry(t *testing.T, sb *sandbox, edit func(args []string) []string) {
	t.Helper()
	file := sb.entryFile()
	b, err := os.ReadFile(file)
	must(t, err)
	b, err = hujson.Standardize(b)
	must(t, err)
	var doc map[string]any
	must(t, json.Unmarshal(b, &doc))
	e := doc["mcpServers"].(map[string]any)["attacker"].(map[string]any)
	var args []string
	for _, a := range e["args"].([]any) {
		args = append(args, a.(string))
	}
	e["args"] = edit(args)
	b, err = json.MarshalIndent(doc, "", "  ")
	must(t, err)
	must(t, os.WriteFile(file, b, 0o644))
	sb.entry = sb.readEntry(t)
	t.Logf("%s: entry edited by hand: %s %s", sb.backend, sb.entry.Command, shellQuote(sb.entry.Args))
}

// handMount adds a read-only --mount of the planted home at /home to the
// engine entry's inline arguments, right after "run".
func handMount(t *testing.T, sb *sandbox) {
	editEntry(t, sb, func(args []string) []string {
		i := slices.Index(args, "--")
		if i < 0 || i+1 >= len(args) || args[i+1] != "run" {
			t.Fatalf("no -- run in the engine entry: %q", args)
		}
		return slices.Insert(args, i+2, "--mount", "type=bind,source="+sb.home+",target=/home,readonly")
	})
}

// repin widens the entry's bwrap artefact (the home at /home) and puts
// its new digest in the entry.
func repin(t *testing.T, sb *sandbox) {
	art := sb.entryArtefact()
	if art == "" {
		t.Fatalf("the entry pins no artefact: %q", sb.entry.Args)
	}
	widen(t, art)
	b, err := os.ReadFile(art)
	must(t, err)
	editEntry(t, sb, func(args []string) []string {
		i := slices.Index(args, "--sha256")
		if i < 0 {
			t.Fatalf("no --sha256 in the entry: %q", args)
		}
		args[i+1] = artefact.Digest(b)
		return args
	})
}

// handWritten puts, in the planted home's ~/.claude.json for this
// project, an entry for the policy's server that runs it under a bwrap
// command written by hand (the whole host read-only, the project
// writable), and returns it.
func handWritten(t *testing.T, sb *sandbox) (string, []string) {
	t.Helper()
	args := []string{"--ro-bind", "/", "/", "--bind", sb.root, sb.root, "--dev", "/dev", "--proc", "/proc", "--chdir", sb.root, "/bin/sh", filepath.Join(sb.root, "attack.sh")}
	doc := map[string]any{"projects": map[string]any{sb.root: map[string]any{"mcpServers": map[string]any{
		"attacker": map[string]any{"command": "bwrap", "args": args}}}}}
	b, err := json.MarshalIndent(doc, "", "  ")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(sb.home, ".claude.json"), b, 0o600))
	return "bwrap", args
}

// handRoot edits the entry's --project-root to the planted home; for the
// weakened wiring it also drops the entry's --sha256 pin and hard-links the
// payload into the home, so that the moved root runs it.
func handRoot(t *testing.T, sb *sandbox, unpinned bool) {
	t.Helper()
	if unpinned {
		attack := filepath.Join(sb.root, "attack.sh")
		must(t, os.WriteFile(attack, nil, 0o666))
		must(t, os.Link(attack, filepath.Join(sb.home, "attack.sh")))
		// The policy's nested source, and where the payload says it ran.
		must(t, os.MkdirAll(filepath.Join(sb.home, "src", "gen"), 0o755))
		must(t, os.Chmod(filepath.Join(sb.home, "src"), 0o777))
	}
	editEntry(t, sb, func(args []string) []string {
		i := slices.Index(args, "--project-root")
		if i < 0 {
			t.Fatalf("no --project-root in the entry: %q", args)
		}
		args[i+1] = sb.home
		if j := slices.Index(args, "--sha256"); unpinned && j >= 0 {
			args = slices.Delete(args, j, j+2)
		}
		return args
	})
}

func handRootSteps() []step {
	return []step{mustNotLeak("read the home's .aws/credentials at the moved root", "cat /workspace/.aws/credentials")}
}
