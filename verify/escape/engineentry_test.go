package escape_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// engineEntryScenarios: what a docker or podman entry's launcher enforces
// beyond the engine's own arguments, and what the engine takes from
// elsewhere than the entry (#32).
var engineEntryScenarios = []scenario{
	{
		// --unprotect NAME added by hand to an engine entry, among the
		// launcher's flags: the unprotected names were a flag of the
		// launcher's, outside the pinned arguments, so .git at the top of
		// the project's read-write mount was bound writable and check
		// saw nothing. They are labels in the pinned arguments now: the
		// launcher refuses the flag (exit 8), check reports the entry.
		// Weakened: .git unprotected where the launcher reads it, the
		// artefact's label (re-pinned): the payload plants the hook.
		name: "engine-hand-unprotect", backends: []string{"docker", "podman"}, weakBackends: []string{"docker"},
		real: func(t *testing.T, sb *sandbox) {
			handUnprotect(t, sb)
			// check before any launch: only the edited entry to report.
			if code, out := sb.mcpolicyTry(t, nil, "check", "-p", sb.root); code == 0 || !strings.Contains(out, "UNPROTECT_ADDED") {
				t.Errorf("%s: check after --unprotect .git added by hand to the engine entry: exit %d, want the entry reported\n%s", sb.backend, code, out)
			} else {
				t.Logf("%s: check: exit %d: %s", sb.backend, code, lastLines([]byte(out), 3))
			}
			before := sb.snapshot(t)
			sb.launchEntry(t, gitPlantSteps()...).requireRefused(t, sb.backend)
			sb.requireUnchanged(t, before)
			sb.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, sb *sandbox) {
			unprotectPinned(t, sb, ".git")
			steps := gitPlantSteps()
			o := sb.launchEntry(t, steps...)
			o.requireSucceeded(t, sb.backend, steps[0].name, steps[1].name)
		},
	},
	{
		// podman takes the container's umask from containers.conf
		// ([containers] umask), which the client's environment
		// (CONTAINERS_CONF) or the user's configuration sets, and runc
		// applies it before the seccomp profile, so refusing umask()
		// there does not help: the launcher passes --umask (its own with
		// 022 added). Weakened: the engine's arguments without the
		// launcher, where the server's mkdir, creat, mkfifo and mknod
		// leave world-writable files in its grant.
		name: "podman-conf-umask", backends: []string{"podman"}, weakBackends: []string{"podman"},
		spec: projectSpec{helper: true},
		real: func(t *testing.T, sb *sandbox) {
			env := withPodmanUmask0(t, sb.entry.Env)
			o := sb.launchWith(t, "entry, podman configured with umask 0000", sb.entry.Command, sb.entry.Args, launchOpts{env: env}, umaskCreateSteps())
			if !o.done {
				t.Fatalf("%s: the payload did not finish: code %d\nstdout:\n%s\nstderr:\n%s", sb.backend, o.code, o.stdout, lastLines([]byte(o.stderr), 15))
			}
			if bad := umaskWritable(t, sb); len(bad) > 0 {
				t.Errorf("%s: the server created what other users may write in its grant (containers.conf umask 0000): %s", sb.backend, strings.Join(bad, ", "))
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			env := withPodmanUmask0(t, sb.entry.Env)
			engine, args := sb.weakEngineArgs(t)
			o := sb.launchWith(t, "weakened engine args, umask 0000", engine, args, launchOpts{env: env}, umaskCreateSteps())
			if !o.done {
				t.Fatalf("weakened: the payload did not finish: code %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, lastLines([]byte(o.stderr), 15))
			}
			if bad := umaskWritable(t, sb); len(bad) == 0 {
				t.Errorf("weakened %s: nothing world-writable: the suite cannot see a umask 0000", sb.backend)
			} else {
				t.Logf("weakened %s: %s", sb.backend, strings.Join(bad, ", "))
			}
		},
	},
}

// withPodmanUmask0 is env with CONTAINERS_CONF naming a containers.conf
// like this machine's with umask = "0000", as a user who shares files with
// a group sets it.
func withPodmanUmask0(t *testing.T, env map[string]string) map[string]string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "containers.conf")
	sys, err := os.ReadFile("/etc/containers/containers.conf")
	if err != nil {
		sys = nil
	}
	s := string(sys)
	if strings.Contains(s, "[containers]") {
		s = strings.Replace(s, "[containers]", "[containers]\numask = \"0000\"", 1)
	} else {
		s = "[containers]\numask = \"0000\"\n" + s
	}
	must(t, os.WriteFile(conf, []byte(s), 0o644))
	out := map[string]string{"CONTAINERS_CONF": conf}
	for k, v := range env {
		out[k] = v
	}
	return out
}

var umaskCreated = []string{"umask-dir", "umask-file", "umask-fifo", "umask-nod"}

func umaskCreateSteps() []step {
	d := modesDir + "/"
	return []step{
		may("mkdir", "mkdir "+d+"umask-dir"),
		may("creat", ": > "+d+"umask-file"),
		may("mkfifo", "mkfifo "+d+"umask-fifo"),
		may("mknod p", "mknod "+d+"umask-nod p"),
	}
}

func umaskWritable(t *testing.T, sb *sandbox) []string {
	t.Helper()
	var bad []string
	for _, n := range umaskCreated {
		fi, err := os.Lstat(filepath.Join(sb.root, modesDir, n))
		if err != nil {
			continue
		}
		if fi.Mode().Perm()&0o022 != 0 {
			bad = append(bad, n+" "+fi.Mode().String())
		}
	}
	return bad
}

// handUnprotect adds --unprotect .git to the engine entry, among the
// launcher's flags (before --sha256).
func handUnprotect(t *testing.T, sb *sandbox) {
	editEntry(t, sb, func(args []string) []string {
		i := slices.Index(args, "--sha256")
		if i < 0 {
			t.Fatalf("no --sha256 in the engine entry: %q", args)
		}
		return slices.Insert(args, i, "--unprotect", ".git")
	})
}

// unprotectPinned adds the label that unprotects name to the engine
// artefact and to the entry's inline arguments, after the plan's label,
// and re-pins the artefact's digest in the entry: the launcher reads the
// unprotected names from there.
func unprotectPinned(t *testing.T, sb *sandbox, name string) {
	t.Helper()
	art := sb.entryArtefact()
	b, err := os.ReadFile(art)
	must(t, err)
	var args []string
	must(t, json.Unmarshal(b, &args))
	label := []string{"--label", artefact.LabelUnprotect + "=" + name}
	afterPlan := func(a []string) []string {
		i := slices.IndexFunc(a, func(s string) bool { return strings.HasPrefix(s, "org.mcpolicy.plan=") })
		if i < 0 {
			t.Fatalf("no plan label in %q", a)
		}
		return slices.Insert(a, i+1, label...)
	}
	b, err = json.MarshalIndent(afterPlan(args), "", "  ")
	must(t, err)
	must(t, os.WriteFile(art, b, 0o644))
	editEntry(t, sb, func(args []string) []string {
		i := slices.Index(args, "--sha256")
		if i < 0 {
			t.Fatalf("no --sha256 in the engine entry: %q", args)
		}
		args[i+1] = artefact.Digest(b)
		return afterPlan(args)
	})
}

// gitPlantSteps write what git runs next: a hook, core.fsmonitor.
func gitPlantSteps() []step {
	return []step{
		deny("plant a hook in .git/hooks", "printf '#!/bin/sh\\ntouch /dev/null\\n' > .git/hooks/pre-commit && chmod 755 .git/hooks/pre-commit"),
		deny("append core.fsmonitor to .git/config", "printf '[core]\\n\\tfsmonitor = true\\n' >> .git/config"),
	}
}
