package escape_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Red team (#32): what the mode rules leave. The launcher adds 022 to the
// umask on bwrap and Landlock and relies on the engine for docker and
// podman ("runc's 022"); the filters keep the server from lowering it. But
// podman takes the container's umask from containers.conf ([containers]
// umask), which the client's environment (CONTAINERS_CONF) or the user's
// configuration sets, and the launcher passes no --umask: runc sets it
// before the profile is loaded, so the server's mkdir and creat make
// world-writable folders and files in its grants.
var redteam2Scenarios = []scenario{
	{
		// --unprotect NAME added by hand to an engine entry, before its
		// pinned artefact: the launcher compares the inline run arguments
		// with the artefact word for word, but takes --unprotect from its
		// own flags, which nothing pins, so .git at the top of the
		// project's read-write mount is bound writable; check's drift
		// compares mounts, env and limits, not the unprotected names.
		name: "redteam2-engine-hand-unprotect", backends: []string{"docker", "podman"}, weakBackends: []string{"docker"},
		real: func(t *testing.T, sb *sandbox) {
			handUnprotect(t, sb)
			// check before any launch: only the edited entry to report.
			if code, out := sb.mcpolicyTry(t, nil, "check", "-p", sb.root); code == 0 {
				t.Errorf("%s: check after --unprotect .git added by hand to the engine entry: exit 0, want the entry reported\n%s", sb.backend, out)
			} else {
				t.Logf("%s: check: exit %d: %s", sb.backend, code, lastLines([]byte(out), 3))
			}
			before := sb.snapshot(t)
			o := sb.launchEntry(t, redteam2GitSteps()...)
			if o.code != exitTampered {
				o.requireDenied(t, sb.backend)
			}
			sb.requireUnchanged(t, before)
			sb.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The same payload through the unedited entry: .git is fixed
			// read-only, so the suite's steps must fail there; it is the
			// hand-edited flag alone that opens it.
			o := sb.launchEntry(t, redteam2GitSteps()...)
			o.requireDenied(t, sb.backend)
		},
	},
	{
		name: "redteam2-podman-conf-umask", backends: []string{"podman"}, weakBackends: []string{"podman"},
		spec: projectSpec{helper: true},
		real: func(t *testing.T, sb *sandbox) {
			env := withPodmanUmask0(t, sb.entry.Env)
			steps := redteam2CreateSteps()
			o := sb.launchWith(t, "entry, podman configured with umask 0000", sb.entry.Command, sb.entry.Args, launchOpts{env: env}, steps)
			if !o.done {
				t.Fatalf("%s: the payload did not finish: code %d\nstdout:\n%s\nstderr:\n%s", sb.backend, o.code, o.stdout, lastLines([]byte(o.stderr), 15))
			}
			if bad := redteam2Writable(t, sb); len(bad) > 0 {
				t.Errorf("%s: the server created what other users may write in its grant (containers.conf umask 0000, no --umask from the launcher): %s", sb.backend, strings.Join(bad, ", "))
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			env := withPodmanUmask0(t, sb.entry.Env)
			engine, args := sb.weakEngineArgs(t)
			o := sb.launchWith(t, "weakened engine args, umask 0000", engine, args, launchOpts{env: env}, redteam2CreateSteps())
			if !o.done {
				t.Fatalf("weakened: the payload did not finish: code %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, lastLines([]byte(o.stderr), 15))
			}
			if bad := redteam2Writable(t, sb); len(bad) == 0 {
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

var redteam2Created = []string{"rt2-dir", "rt2-file", "rt2-fifo", "rt2-nod"}

func redteam2CreateSteps() []step {
	d := modesDir + "/"
	return []step{
		may("mkdir", "mkdir "+d+"rt2-dir"),
		may("creat", ": > "+d+"rt2-file"),
		may("mkfifo", "mkfifo "+d+"rt2-fifo"),
		may("mknod p", "mknod "+d+"rt2-nod p"),
	}
}

func redteam2Writable(t *testing.T, sb *sandbox) []string {
	t.Helper()
	var bad []string
	for _, n := range redteam2Created {
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

func redteam2GitSteps() []step {
	return []step{
		deny("plant a hook in .git/hooks", "printf '#!/bin/sh\\ntouch /dev/null\\n' > .git/hooks/pre-commit && chmod 755 .git/hooks/pre-commit"),
		deny("append core.fsmonitor to .git/config", "printf '[core]\\n\\tfsmonitor = true\\n' >> .git/config"),
	}
}
