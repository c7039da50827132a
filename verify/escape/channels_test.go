package escape_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The engines' seccomp profile (seccomp.EngineProfile, which the launcher
// gives docker and podman alike): podman's own default allows keyctl, and
// a rootful podman's server, whose uid is the host user's, read and
// rewrote that user's keyring; both engines' defaults here allowed
// AF_VSOCK sockets, which no network namespace confines (red team).
var seccompScenarios = []scenario{
	{
		// A key in the user keyring of uid 1000, the server's user on the
		// host (a token cached there by that user's tools): the server
		// must not find or read it.
		name: "user-keyring", spec: projectSpec{helper: true}, backends: allBackends, weakBackends: []string{"podman"},
		real: func(t *testing.T, sb *sandbox) {
			desc, payload := plantUserKey(t, sb)
			before := sb.snapshot(t)
			steps := []step{denyWith("keyctl search @u user "+desc+", then read it", helperSh("userkeyring", desc), "ENOKEY", "ENOSYS", "EPERM", "EACCES")}
			o := sb.launchEntry(t, steps...)
			o.requireDenied(t, sb.backend)
			o.requireNotShown(t, sb.backend, payload)
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// podman's args without the launcher: its own default profile.
			desc, _ := plantUserKey(t, sb)
			steps := []step{may("keyctl search @u user "+desc+", then read it", helperSh("userkeyring", desc))}
			sb.launchWeakEngine(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
		},
	},
	{
		// An AF_VSOCK socket reaches the hypervisor's services (this VM's
		// too) whatever the network namespace: the server must not get one.
		name: "vsock", spec: projectSpec{helper: true}, backends: allBackends, weakBackends: []string{"docker", "podman"},
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			o := sb.launchEntry(t, denyWith("socket(AF_VSOCK)", helperSh("vsock"), "EPERM", "EAFNOSUPPORT", "EACCES", "ENOSYS"))
			o.requireDenied(t, sb.backend)
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The engine's args without the launcher: its own default.
			steps := []step{may("socket(AF_VSOCK)", helperSh("vsock"))}
			sb.launchWeakEngine(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
		},
	},
}

// devShmScenarios: bwrap's /dev is a tmpfs of its own, and /dev/shm in
// it was writable storage bounded by nothing but the host's memory (a red
// team wrote 200 MiB beside a 64m scratch), uncounted as a grant; docker's
// and podman's are masked read-only, Landlock's /dev refuses writes.
var devShmScenarios = []scenario{
	{
		name: "dev-shm", spec: projectSpec{}, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			o := sb.launchEntry(t, devShmSteps(true)...)
			o.requireDenied(t, sb.backend)
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			sb.devWritable = true
			steps := devShmSteps(false)
			sb.launchWeakBwrap(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
		},
	},
}

func devShmSteps(deny bool) []step {
	var out []step
	for _, s := range []struct{ name, sh string }{
		{"write 1 MiB to /dev/shm", "dd if=/dev/zero of=/dev/shm/mcpolicy-escape bs=64k count=16 2>&1 && test -s /dev/shm/mcpolicy-escape"},
		{"create a file in /dev", ": > /dev/mcpolicy-escape"},
	} {
		if deny {
			out = append(out, denyWith(s.name, s.sh, "EROFS", "EACCES", "ENOENT", "EPERM"))
		} else {
			out = append(out, may(s.name, s.sh))
		}
	}
	return out
}

// plantUserKey adds a user key to uid 1000's user keyring on the host, as
// that user (the helper run with its credentials), and removes it after.
func plantUserKey(t *testing.T, sb *sandbox) (desc, payload string) {
	t.Helper()
	requireRoot(t)
	desc, payload = "mcpolicy-escape-user-"+randHex(t, 6), "planted-user-keyring-secret-"+randHex(t, 8)
	asUser := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(sb.root, helperName), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{}}}
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	out, err := asUser("plant-user-key", desc, payload)
	if err != nil {
		t.Fatalf("planting a key in uid 1000's user keyring: %v: %s", err, out)
	}
	t.Logf("host, as uid 1000: %s", out)
	t.Cleanup(func() { asUser("unlink-user-key", desc) })
	return desc, payload
}
