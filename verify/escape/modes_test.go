package escape_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/testenv"
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

// scratchScenarios: the docker and podman scratch is a tmpfs that runc
// gives the mode of the image's folder under it, whatever mode= says: an
// image whose /tmp is 0755 root left the scratch unwritable for the
// container's uid 1000, which pushed users towards user: "0:0". The
// launcher gives the scratch to the container's user.
var scratchScenarios = []scenario{
	{
		name: "scratch-image-tmp", backends: []string{"docker", "podman"}, weakBackends: []string{"docker", "podman"},
		spec: projectSpec{policy: [2]string{"mcpolicy.cue", scratchPolicy}},
		real: func(t *testing.T, sb *sandbox) {
			sb.s.importTmp755(t, sb.backend)
			// Not a denial: the scratch must take the server's files.
			steps := []step{may("write a file in the scratch (/tmp)", "id -u && : > /tmp/scratch-file && ls -ld /tmp")}
			o := sb.launchEntry(t, steps...)
			if r := o.results[steps[0].name]; !r.ok {
				t.Errorf("%s: the server (uid 1000) cannot write its scratch over the image's /tmp 0755 root: %s\nstdout:\n%s\nstderr:\n%s", sb.backend, r.describe(), o.stdout, lastLines([]byte(o.stderr), 15))
			} else {
				t.Logf("%s: the server wrote its scratch: %s", sb.backend, r.msg)
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			sb.s.importTmp755(t, sb.backend)
			// The engine's args without the launcher: /tmp is the image's 0755 root.
			steps := []step{may("write a file in the scratch (/tmp)", "id -u && : > /tmp/scratch-file && ls -ld /tmp")}
			engine, args := sb.weakEngineArgs(t)
			o := sb.launchWith(t, "weakened engine args (no launcher)", engine, args, launchOpts{env: sb.entry.Env}, steps)
			if r := o.results[steps[0].name]; r.ok || r.errno != "EACCES" {
				t.Errorf("weakened %s: writing the scratch: %s, want EACCES: the suite cannot see an unwritable scratch\nstdout:\n%s\nstderr:\n%s", sb.backend, r.describe(), o.stdout, lastLines([]byte(o.stderr), 15))
			}
		},
	},
}

// scratchPolicy is bindPolicy's server with a scratch at /tmp, in
// tmp755Image, as uid 1000 (the default user).
var scratchPolicy = `version: "v1"
servers: attacker: {
	command: ["/bin/sh", "/workspace/attack.sh"]
	image:   "` + tmp755Image + `"
	scratch: size: "16m"
	mounts: [
		{source: ".", target: "/workspace", mode: "rw"},
		{source: "src/gen", target: "/gen", mode: "rw"},
	]
	backends: ["docker"]
}
`

// tmp755Image is the busybox image with /tmp 0755 root (importTmp755).
var tmp755Image = fmt.Sprintf("mcpolicy-escape-tmp755:t%d", os.Getpid())

// importTmp755 imports tmp755Image into engine, once: busyboxRootfs with
// tmp/ 0755. The suite removes it with its own images.
func (s *suite) importTmp755(t *testing.T, engine string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]string{engine, tmp755Image}
	err, done := s.imported[key]
	if !done {
		err = func() error {
			rootfs, err := busyboxRootfs(nil)
			if err != nil {
				return err
			}
			var out bytes.Buffer
			tr, tw := tar.NewReader(bytes.NewReader(rootfs)), tar.NewWriter(&out)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					return err
				}
				if h.Name == "tmp/" {
					h.Mode = 0o755
				}
				if err := tw.WriteHeader(h); err != nil {
					return err
				}
				if _, err := io.Copy(tw, tr); err != nil {
					return err
				}
			}
			if err := tw.Close(); err != nil {
				return err
			}
			return testenv.ImportImage(context.Background(), engine, tmp755Image, out.Bytes())
		}()
		s.imported[key] = err
	}
	if err != nil {
		t.Fatalf("importing %s into %s: %v", tmp755Image, engine, err)
	}
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
