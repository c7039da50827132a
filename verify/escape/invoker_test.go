package escape_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The user: "invoker" scenarios: the committed artefacts (and the docker
// and podman entries) say ${UID} and ${GID}, and the launcher resolves them
// at spawn to the ids it runs as, refusing root. Nothing the server can
// write may choose the ids of its next launch, and a root launch must not
// turn "invoker" into root.
var invokerScenarios = []scenario{
	{
		// Started by an ordinary user (uid 1000 when the test runs as
		// root), the server tries to make its next launch run as root: it
		// rewrites the artefact and the entry with uid 0, plants an
		// artefact saying uid 0 in its grant, widens the policy; the next
		// launch, from a client whose environment says UID=0, must still
		// run it as the invoking user, and the artefact rewritten out of
		// band must be refused. Docker runs as that user with the docker
		// group; rootless podman needs a user setup the suite does not
		// make, so podman is in invoker-root only.
		name: "invoker-next-uid", spec: invokerSpec, backends: []string{"bwrap", "docker", "landlock"}, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			inv := invokerOf(t, sb.backend)
			before := sb.snapshot(t)
			steps := invokerSteps(t, sb, true)
			o := sb.launchWith(t, "entry as "+inv.String(), sb.entry.Command, sb.entry.Args, launchOpts{env: sb.entry.Env, cred: inv.cred}, steps)
			o.requireDenied(t, sb.backend)
			o.requireIDs(t, sb.backend, inv)
			sb.requireUnchanged(t, before)

			// The client's environment may say anything: the ids are the
			// process's, never $UID.
			env := map[string]string{"UID": "0", "GID": "0", "EUID": "0", "USER": "root", "LOGNAME": "root"}
			for k, v := range sb.entry.Env {
				env[k] = v
			}
			o = sb.launchWith(t, "entry as "+inv.String()+", UID=0 in its environment", sb.entry.Command, sb.entry.Args, launchOpts{env: env, cred: inv.cred}, idSteps())
			o.requireDenied(t, sb.backend)
			o.requireIDs(t, sb.backend, inv)
			sb.requireUnchanged(t, before)

			art := sb.entryArtefact()
			if art == "" {
				t.Logf("%s: out of band: not applicable, the entry carries the engine args (and their ${UID}:${GID}) itself, in a file the server cannot write (above)", sb.backend)
				return
			}
			must(t, os.WriteFile(art, []byte(asRoot(t, art)), 0o666))
			t.Logf("%s: out of band: %s now says uid and gid 0", sb.backend, art)
			o = sb.launchWith(t, "entry as "+inv.String(), sb.entry.Command, sb.entry.Args, launchOpts{env: sb.entry.Env, cred: inv.cred}, idSteps())
			o.requireRefused(t, sb.backend)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// bwrap without the launcher, ${UID} and ${GID} put in as the
			// invoking user's ids by whatever reads the artefact: the
			// artefact the server rewrote decides its next uid.
			inv := invokerOf(t, sb.backend)
			sb.naiveIDs = []string{strconv.Itoa(inv.uid), strconv.Itoa(inv.gid)}
			steps := invokerSteps(t, sb, false)
			o := sb.launchWeakBwrapWith(t, nil, launchOpts{cred: inv.cred}, steps...)
			o.requireSucceeded(t, sb.backend, steps[2].name)
			o.requireIDs(t, sb.backend, inv)
			o = sb.launchWeakBwrapWith(t, nil, launchOpts{cred: inv.cred}, idSteps()...)
			if got := o.results[idSteps()[0].name]; !got.ok || got.msg != "0" {
				t.Errorf("weakened bwrap: the next launch after the rewrite runs as uid %q (%s), want 0: the suite cannot see the server choose its uid\nstderr:\n%s", got.msg, got.describe(), lastLines([]byte(o.stderr), 10))
			} else {
				t.Logf("weakened bwrap: the next launch read the rewritten artefact and ran the server as uid 0 in its user namespace (started by %s): the server chose its uid", inv)
			}
		},
	},
	{
		// A client running as root starts a server of the default user
		// (1000:1000): it must be that user on the host, as under docker's
		// --user, not root. bwrap maps the sandbox's uid to whoever starts
		// it, so through a root launcher the plan's 1000 was the host's
		// root: it wrote /proc/sys/kernel/core_pattern, and the next crash
		// ran its program as root (red team). Root's files in its grant,
		// a sysctl written with its own value, and the owner of what the
		// server writes tell.
		name: "root-launch", spec: projectSpec{}, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			requireRoot(t)
			plantRootFiles(t, sb)
			before := sb.snapshot(t)
			steps := rootLaunchSteps(sb, true)
			o := sb.launchEntry(t, steps...)
			o.requireDenied(t, sb.backend)
			o.requireIDs(t, sb.backend, invoker{uid: 1000, gid: 1000})
			requireOwner(t, sb, 1000)
			sb.requireUnchanged(t, before)
			// mcpolicy run (an egress server's entry; prove's real server)
			// starts bwrap and the engines its own way: its stdio setup
			// replaced bwrap's credential, and the server was root (red team).
			if sb.backend == "landlock" {
				return // mcpolicy exec is the entry itself
			}
			must(t, os.Remove(filepath.Join(sb.root, sb.ranDir, "written-by-server")))
			o = sb.launchWith(t, "mcpolicy run --backend "+sb.backend, sb.s.mcpolicy, []string{"run", "-p", sb.root, "--server", "attacker", "--backend", sb.backend},
				launchOpts{env: sb.entry.Env}, steps)
			o.requireDenied(t, sb.backend)
			o.requireIDs(t, sb.backend, invoker{uid: 1000, gid: 1000})
			requireOwner(t, sb, 1000)
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// bwrap without the launcher, started by root as the launcher
			// started it before: the plan's 1000 is the host's root.
			requireRoot(t)
			plantRootFiles(t, sb)
			steps := rootLaunchSteps(sb, false)
			o := sb.launchWeakBwrap(t, steps...)
			o.requireSucceeded(t, sb.backend, names(steps[1:])...)
			requireOwner(t, sb, 0)
			t.Logf("weakened bwrap: the server, uid %s in its namespace, wrote root's file, read root's secret and wrote a sysctl: %s", o.results["id -u"].msg, o.results["write a sysctl (its own value)"].describe())
		},
	},
	{
		// A client (or the launcher) running as root: "invoker" must not
		// become root, nor root's group. The entry must refuse to start,
		// on every backend, with nothing of the server run.
		name: "invoker-root", spec: invokerSpec, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			requireRoot(t)
			before := sb.snapshot(t)
			o := sb.launchEntry(t, rootSteps(sb)...)
			o.requireRootRefused(t, sb.backend)
			// An ordinary uid in root's group: refused before any engine
			// is asked, so podman needs no rootless setup here.
			cred := &syscall.Credential{Uid: 1000, Gid: 0, Groups: []uint32{}}
			o = sb.launchWith(t, "entry as uid 1000, gid 0", sb.entry.Command, sb.entry.Args, launchOpts{env: sb.entry.Env, cred: cred}, rootSteps(sb))
			o.requireRootRefused(t, sb.backend)
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// bwrap without the launcher, ${UID} and ${GID} put in as the
			// ids of whoever starts it, root too.
			requireRoot(t)
			sb.naiveIDs = []string{"0", "0"}
			steps := rootSteps(sb)
			o := sb.launchWeakBwrap(t, steps...)
			o.requireSucceeded(t, sb.backend, names(steps)...)
			if got := o.results[steps[0].name].msg; got != "0" {
				t.Errorf("weakened bwrap: the server runs as uid %q, want 0", got)
			}
			fi, err := os.Stat(filepath.Join(sb.root, sb.ranDir, "written-by-server"))
			if err != nil {
				t.Fatalf("weakened bwrap: the server's file did not reach the host: %v", err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
				t.Errorf("weakened bwrap: the server's file is owned by uid %d on the host, want 0 (root)", st.Uid)
			} else {
				t.Logf("weakened bwrap: the server ran as root: its file is owned by uid 0 on the host")
			}
		},
	},
}

// invokerSpec: the bind (or Landlock) policy with user: "invoker", the
// entry claude-code's .mcp.json, in the project: the server's own grant
// holds it, behind the protected names.
var invokerSpec = projectSpec{user: "invoker"}

// invoker is who starts the entry: uid 1000 when the test runs as root
// (the docker group's member for docker), else the test's own user.
type invoker struct {
	uid, gid int
	cred     *syscall.Credential
}

func (i invoker) String() string { return fmt.Sprintf("uid %d, gid %d", i.uid, i.gid) }

func invokerOf(t *testing.T, backend string) invoker {
	t.Helper()
	if os.Geteuid() != 0 {
		// The test's own user, who reaches the engines already.
		return invoker{uid: os.Getuid(), gid: os.Getgid()}
	}
	cred := &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{}}
	if isEngine(backend) {
		g, err := user.LookupGroup(backend)
		if err != nil {
			if ci {
				t.Fatalf("CI=true, so not skipping: %s as uid 1000 needs the %s group: %v", backend, backend, err)
			}
			t.Skipf("%s as uid 1000 needs the %s group: %v", backend, backend, err)
		}
		gid, _ := strconv.Atoi(g.Gid)
		cred.Groups = []uint32{uint32(gid)}
	}
	return invoker{uid: 1000, gid: 1000, cred: cred}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if ci {
		t.Fatalf("CI=true, so not skipping: a root launch needs the test to run as root (euid %d)", os.Geteuid())
	}
	t.Skipf("a root launch needs the test to run as root (euid %d)", os.Geteuid())
}

func idSteps() []step {
	return []step{may("id -u", "id -u"), may("id -g", "id -g")}
}

// requireIDs fails unless the server ran as the invoking user.
func (o outcome) requireIDs(t *testing.T, backend string, inv invoker) {
	t.Helper()
	for _, c := range []struct {
		step string
		want int
	}{{"id -u", inv.uid}, {"id -g", inv.gid}} {
		r := o.results[c.step]
		if !r.ok || r.msg != strconv.Itoa(c.want) {
			t.Errorf("%s via %s: %s: %q (%s), want %d\nstderr:\n%s", backend, o.how, c.step, r.msg, r.describe(), c.want, lastLines([]byte(o.stderr), 10))
			continue
		}
		t.Logf("%s via %s: %s: %s", backend, o.how, c.step, r.msg)
	}
}

// asRoot is the artefact at path with its ${UID} and ${GID} made 0.
func asRoot(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	if !strings.Contains(string(b), "${UID}") {
		t.Fatalf("%s says no ${UID}: user: \"invoker\" did not compile to placeholders", path)
	}
	return strings.NewReplacer("${UID}", "0", "${GID}", "0").Replace(string(b))
}

// invokerSteps try to choose the uid of the next launch: the artefacts and
// the entry rewritten with uid 0 (the entry pointing at an artefact planted
// in the grant, with its digest), the policy widened.
func invokerSteps(t *testing.T, sb *sandbox, confined bool) []step {
	t.Helper()
	backendDir := sb.backend
	if isEngine(backendDir) {
		backendDir = "docker"
	}
	art := ".mcpolicy/" + backendDir + "/attacker.json"
	evil := asRoot(t, filepath.Join(sb.root, art))
	sum := sha256.Sum256([]byte(evil))
	planted := sb.ranDir + "/evil.json"
	entryFile, err := os.ReadFile(sb.entryFile())
	must(t, err)
	entry := strings.NewReplacer("${UID}", "0", "${GID}", "0", filepath.Join(sb.root, art), filepath.Join(sb.root, planted)).Replace(string(entryFile))
	if d := sb.entryDigest(); d != "" {
		entry = strings.ReplaceAll(entry, d, "sha256:"+hex.EncodeToString(sum[:]))
	}
	denied := func(name, sh string) step {
		if confined {
			return deny(name, sh)
		}
		return may(name, sh)
	}
	return append(idSteps(),
		denied("rewrite "+art+" with uid and gid 0", "printf %s "+shq(evil)+" > "+art),
		denied("rewrite .mcp.json: uid 0, or the planted artefact", "printf %s "+shq(entry)+" > .mcp.json"),
		may("plant "+planted+": the artefact with uid 0", "printf %s "+shq(evil)+" > "+planted),
		denied("append user: \"0:0\" to mcpolicy.cue", `printf '\nservers: attacker: user: "0:0"\n' >> mcpolicy.cue`),
	)
}

// entryDigest is the --sha256 the entry pins, or "".
func (sb *sandbox) entryDigest() string {
	for i, a := range sb.entry.Args {
		if a == "--sha256" && i+1 < len(sb.entry.Args) {
			return sb.entry.Args[i+1]
		}
	}
	return ""
}

// rootSteps: whoever it runs as, and a file it writes in its grant.
// plantRootFiles puts two files of root's in the server's grant: one
// any user may read but only root write, one only root may read.
func plantRootFiles(t *testing.T, sb *sandbox) {
	t.Helper()
	dir := filepath.Join(sb.root, sb.ranDir)
	must(t, os.WriteFile(filepath.Join(dir, "roots-file"), []byte("root's\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "roots-secret"), []byte("root's secret\n"), 0o600))
	must(t, os.Chown(filepath.Join(dir, "roots-file"), 0, 0))
	must(t, os.Chown(filepath.Join(dir, "roots-secret"), 0, 0))
}

// rootLaunchSteps: each must fail for an ordinary user (deny) and works
// for root (may, in the weakened wiring).
func rootLaunchSteps(sb *sandbox, deny bool) []step {
	attempt := func(name, sh string) step {
		if deny {
			return denyWith(name, sh, "EACCES", "EPERM", "EROFS", "ENOENT")
		}
		return may(name, sh)
	}
	return []step{
		may("id -u", "id -u"), // first: the weakened wiring reads it
		may("id -g", "id -g"),
		attempt("write root's file in the grant", "echo x >> "+sb.ranDir+"/roots-file"),
		attempt("read root's secret in the grant", "cat "+sb.ranDir+"/roots-secret"),
		attempt("write a sysctl (its own value)", `v=$(cat /proc/sys/kernel/core_uses_pid) && echo "$v" > /proc/sys/kernel/core_uses_pid`),
		may("write a file in the grant", ": > "+sb.ranDir+"/written-by-server"),
	}
}

// requireOwner checks the host owner of the file the server wrote.
func requireOwner(t *testing.T, sb *sandbox, uid uint32) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(sb.root, sb.ranDir, "written-by-server"))
	if err != nil {
		t.Fatalf("%s: the server's file did not reach the host: %v", sb.backend, err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid {
		t.Errorf("%s: the server's file is owned by uid %d on the host, want %d", sb.backend, st.Uid, uid)
	} else {
		t.Logf("%s: the server's file is owned by uid %d on the host", sb.backend, st.Uid)
	}
}

func rootSteps(sb *sandbox) []step {
	return []step{may("id -u", "id -u"), may("write a file in the grant", ": > "+sb.ranDir+"/written-by-server")}
}

// requireRootRefused checks that the launch was refused for root: a
// non-zero exit naming it, nothing of the payload run.
func (o outcome) requireRootRefused(t *testing.T, backend string) {
	t.Helper()
	if o.code == 0 || o.ran || !strings.Contains(o.stderr, "refusing to run it as root") {
		t.Errorf("%s via %s: exit %d, payload ran: %v (%s); want a refusal to run the invoker as root, nothing run\nstderr:\n%s",
			backend, o.how, o.code, o.ran, o.results["id -u"].msg, lastLines([]byte(o.stderr), 10))
		return
	}
	t.Logf("%s via %s: refused: exit %d: %s", backend, o.how, o.code, lastLines([]byte(o.stderr), 1))
}
