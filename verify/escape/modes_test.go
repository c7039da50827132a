package escape_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The world-writable scenario: a server that can write a grant made a
// folder of it world-writable (chmod 777) under bwrap, docker and podman,
// and the folder stayed so on the host, where every local user could then
// plant files in it. The seccomp filter (the host backends') and the
// engines' profile refuse a mode with group or other write (chmod, fchmod,
// fchmodat, fchmodat2: EPERM), leave a umask without 022 unset, refuse
// extended attributes, where a POSIX ACL grants write too (ENOTSUP); the
// launcher starts the server with 022 in its umask whatever the client's.
var modeScenarios = []scenario{
	{
		name: "world-writable", spec: projectSpec{helper: true}, backends: allBackends, weakBackends: []string{"bwrap", "docker", "podman"},
		real: func(t *testing.T, sb *sandbox) {
			plantModeTargets(t, sb)
			before := sb.snapshot(t)
			o := sb.launchWith(t, "entry, spawned under umask 0", sb.entry.Command, sb.entry.Args, umaskZero(sb.entry.Env), modeSteps(true))
			o.requireDenied(t, sb.backend)
			if bad := groupOtherWritable(t, sb); len(bad) > 0 {
				t.Errorf("%s: in the grant, other users may now write: %s", sb.backend, strings.Join(bad, ", "))
			}
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// bwrap's argv without the launcher (no --seccomp), the
			// engines' args without it (their stock profiles).
			plantModeTargets(t, sb)
			steps := modeSteps(false)
			var o outcome
			if sb.backend == "bwrap" {
				o = sb.launchWeakBwrapWith(t, nil, umaskZero(nil), steps...)
			} else {
				engine, args := sb.weakEngineArgs(t)
				o = sb.launchWith(t, "weakened engine args (no launcher)", engine, args, umaskZero(sb.entry.Env), steps)
			}
			want := names(steps)[:4]
			if sb.backend != "bwrap" {
				// The engines' stock profiles predate fchmodat2: ENOSYS.
				want = slices.Delete(want, 2, 3)
			}
			o.requireSucceeded(t, sb.backend, want...)
			bad := groupOtherWritable(t, sb)
			if !strings.Contains(strings.Join(bad, " "), "modes-dir ") {
				t.Errorf("weakened %s: the folder is not world-writable on the host (%v): the suite cannot see a chmod 777", sb.backend, bad)
			} else {
				t.Logf("weakened %s: other users may write, as they must here: %s", sb.backend, strings.Join(bad, ", "))
			}
		},
	},
}

// modesDir is where the scenario works: a read-write grant on every
// backend (data/ of the Landlock project; the whole project elsewhere).
const modesDir = "data"

// modeTargets are what the payload attacks, below modesDir, planted 0755
// (folders) and 0644 (files); the payload creates modeCreated.
var (
	modeTargets = []string{"modes-dir", "modes-file", "modes-at2", "modes-acl"}
	modeCreated = []string{"made-umask0", "made-plain", "made-file"}
)

// plantModeTargets makes the targets, owned by the server's user (uid 1000
// in the containers, root under bwrap and Landlock here), so that only the
// confinement can refuse their owner a mode change.
func plantModeTargets(t *testing.T, sb *sandbox) {
	t.Helper()
	uid := os.Getuid()
	if isEngine(sb.backend) {
		uid = 1000
	}
	for _, n := range modeTargets {
		p := filepath.Join(sb.root, modesDir, n)
		mode := os.FileMode(0o644)
		if strings.HasSuffix(n, "-dir") {
			must(t, os.Mkdir(p, 0o755))
			mode = 0o755
		} else {
			must(t, os.WriteFile(p, []byte("x\n"), 0o644))
		}
		must(t, os.Chmod(p, mode))
		must(t, os.Chown(p, uid, uid))
	}
}

// umaskZero spawns the command under umask 0, as a client started with
// one would: what the server creates must not take it.
func umaskZero(env map[string]string) launchOpts {
	return launchOpts{env: env, prefix: []string{"/bin/sh", "-c", `umask 0; exec "$@"`, "sh"}}
}

func modeSteps(deny bool) []step {
	attempt := func(name, sh string, errnos ...string) step {
		if deny {
			return denyWith(name, sh, errnos...)
		}
		return may(name, sh)
	}
	d := modesDir + "/"
	return []step{
		attempt("chmod 777 a folder of the grant", "chmod 777 "+d+"modes-dir", "EPERM"),
		attempt("chmod o+w a file of the grant", "chmod o+w "+d+"modes-file", "EPERM"),
		attempt("fchmodat2 0666 a file of the grant", helperSh("fchmodat2", d+"modes-at2", "666"), "EPERM"),
		attempt("setxattr system.posix_acl_access o::rw- (setfacl)", helperSh("setfacl", d+"modes-acl"), "ENOTSUP", "EOPNOTSUPP"),
		// Creation: the mode asked for, less the umask in force. The
		// host check below says what they became.
		may("umask 0, then mkdir", "umask 0 && mkdir "+d+"made-umask0"),
		may("mkdir under the client's umask 0", "mkdir "+d+"made-plain"),
		may("create a file under the client's umask 0", ": > "+d+"made-file"),
	}
}

// groupOtherWritable lists the scenario's files that group or other may
// write on the host, by mode or by ACL (an ACL's other entry shows in the
// mode's low bits).
func groupOtherWritable(t *testing.T, sb *sandbox) []string {
	t.Helper()
	var bad []string
	for _, n := range append(append([]string{}, modeTargets...), modeCreated...) {
		fi, err := os.Lstat(filepath.Join(sb.root, modesDir, n))
		if os.IsNotExist(err) && slices.Contains(modeCreated, n) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			bad = append(bad, fmt.Sprintf("%s %v", n, fi.Mode()))
		}
	}
	return bad
}
