package lint_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// levels lists, for one rule, each server it flags with the severities of
// its findings ("server:error", sorted).
func levels(rep lint.Report, rule string) string {
	var s []string
	for _, f := range rep.Findings {
		if f.Rule == rule {
			s = append(s, f.Server+":"+f.Level)
		}
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// TestSharedTmpClient: the folders every program shares, as a client
// config writes them (docker -v and --mount, bwrap --bind and --ro-bind,
// $XDG_RUNTIME_DIR): an error, read-only too (its sockets stay reachable);
// a private folder below one, a socket
// in one, and a bounded tmpfs are not this rule's. The engine's socket is
// DOCKER_SOCKET's alone, and BIND_RW leaves the shared folders to this rule.
func TestSharedTmpClient(t *testing.T) {
	bwrap := func(args ...string) string {
		return `{"command": "bwrap", "args": ["--unshare-all", "--new-session", "--die-with-parent", "` + strings.Join(args, `", "`) + `", "--", "/bin/s"]}`
	}
	file := writeConfig(t, t.TempDir(), "claude_desktop_config.json", "mcpServers",
		"tmp-rw", dockerEntry("-v", "/tmp:/tmp"),
		"tmp-ro", dockerEntry("-v", "/tmp/:/tmp:ro"),
		"var-tmp", dockerEntry("--mount", "type=bind,src=/var/tmp,dst=/var/tmp,readonly"),
		"shm", dockerEntry("-v", "/dev/shm:/dev/shm"),
		"run-ro", dockerEntry("-v", "/run:/run:ro"),
		"var-run-ro", dockerEntry("-v", "/var/run:/host-run:ro"),
		"xdg", dockerEntry("-v", "$XDG_RUNTIME_DIR:/run/user/1000:ro"),
		"xdg-braces", dockerEntry("-v", "${XDG_RUNTIME_DIR}:/xdg"),
		"tmpdir", dockerEntry("-v", "${TMPDIR}:/t:ro"),
		"bwrap-user", bwrap("--bind", "/run/user/1000", "/run/user/1000"),
		"bwrap-user-ro", bwrap("--ro-bind", "/run/user/501", "/run/user/501"),
		"mac-tmp", dockerEntry("-v", "/private/tmp:/tmp"),
		// not this rule's
		"private", dockerEntry("-v", "/tmp/myproject:/w"),
		"socket", dockerEntry("-v", "/var/run/docker.sock:/var/run/docker.sock"),
		"bus", dockerEntry("-v", "${XDG_RUNTIME_DIR}/bus:/bus:ro"),
		"x11", bwrap("--ro-bind", "/tmp/.X11-unix", "/tmp/.X11-unix"),
		"tmpfs", dockerEntry("--tmpfs", "/tmp:size=64m"),
		"bwrap-tmpfs", bwrap("--size", "65536", "--tmpfs", "/tmp"),
		"var", dockerEntry("-v", "/var/lib/data:/d:ro"),
	)
	want := "bwrap-user-ro:error bwrap-user:error mac-tmp:error run-ro:error shm:error tmp-ro:error tmp-rw:error " +
		"tmpdir:error var-run-ro:error var-tmp:error xdg-braces:error xdg:error"
	for _, c := range []struct {
		name string
		read func() ([]*readback.Target, error)
	}{
		{"as written", func() ([]*readback.Target, error) {
			return clientcfg.ReadFor(file, clientcfg.Options{Home: "/home/linter"})
		}},
		{"this machine", func() ([]*readback.Target, error) { return clientcfg.Read(file, "/home/linter") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts, err := c.read()
			if err != nil {
				t.Fatal(err)
			}
			rep := lint.Run(ts, lint.Options{Only: []string{"MOUNT_SHARED_TMP", "DOCKER_SOCKET", "BIND_RW"}})
			if got := levels(rep, "MOUNT_SHARED_TMP"); got != want {
				t.Errorf("MOUNT_SHARED_TMP flags\n%s\nwant\n%s", got, want)
			}
			if got := byRule(rep, "DOCKER_SOCKET")["DOCKER_SOCKET"]; got != "socket" {
				t.Errorf("DOCKER_SOCKET flags %q, want the socket alone", got)
			}
			for _, s := range []string{"tmp-rw", "shm", "xdg-braces", "bwrap-user", "mac-tmp"} {
				if m := messages(rep, "BIND_RW", s); m != "" {
					t.Errorf("BIND_RW reports %s, a shared folder MOUNT_SHARED_TMP reports: %s", s, m)
				}
			}
			if m := messages(rep, "BIND_RW", "private"); m == "" {
				t.Errorf("BIND_RW does not report the private folder /tmp/myproject")
			}
			if m := messages(rep, "MOUNT_SHARED_TMP", "run-ro"); !strings.Contains(m, "docker.sock") || !strings.Contains(m, "does not stop connect(2)") {
				t.Errorf("run-ro: %s", m)
			}
			if m := messages(rep, "MOUNT_SHARED_TMP", "xdg"); !strings.Contains(m, "mounts $XDG_RUNTIME_DIR (ro) at /run/user/1000, a user's runtime folder") {
				t.Errorf("xdg: %s", m)
			}
		})
	}
}

// TestSharedTmpPolicy: a policy's grants of the same folders, at the
// mount's position, read-only or not; a scratch tmpfs at /tmp and a
// private folder are not flagged.
func TestSharedTmpPolicy(t *testing.T) {
	e := lint.Example{Kind: "policy", Text: `version: "v1"
servers: shared: {
	image: "x:1"
	mounts: [
		{source: "/run/user/4242", target: "/run/user/4242"},
		{source: "/dev/shm", target: "/shm", mode: "rw"},
	]
}
servers: private: {
	image: "x:1"
	mounts: [{source: "/run/user/4242/bus", target: "/bus"}]
	scratch: {target: "/tmp", size: "64m"}
}
`}
	rep := lint.Run(targets(t, e), lint.Options{Only: []string{"MOUNT_SHARED_TMP"}})
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Server+" "+f.Level+" "+f.Pos.String()[strings.LastIndex(f.Pos.String(), ".cue")+4:])
	}
	if want := "shared error :5:3; shared error :6:3"; strings.Join(got, "; ") != want {
		t.Errorf("findings %q, want %q", strings.Join(got, "; "), want)
	}
}

// TestSharedTmpManifest: a hostPath of the node's /tmp or /var/run is a
// mount like any other; the node's docker.sock is DOCKER_SOCKET's.
func TestSharedTmpManifest(t *testing.T) {
	e := lint.Example{Kind: "manifest", Text: `apiVersion: v1
kind: Pod
metadata: {name: s}
spec:
  containers:
  - name: s
    image: img:1
    volumeMounts:
    - {name: tmp, mountPath: /tmp}
    - {name: run, mountPath: /var/run, readOnly: true}
    - {name: sock, mountPath: /var/run/docker.sock, readOnly: true}
  volumes:
  - {name: tmp, hostPath: {path: /tmp}}
  - {name: run, hostPath: {path: /var/run}}
  - {name: sock, hostPath: {path: /var/run/docker.sock}}
`}
	rep := lint.Run(targets(t, e), lint.Options{Only: []string{"MOUNT_SHARED_TMP", "DOCKER_SOCKET"}})
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Rule+" "+f.Level+" "+f.Pos.String()[strings.LastIndex(f.Pos.String(), ".yaml")+5:])
	}
	if want := "MOUNT_SHARED_TMP error :13:34; MOUNT_SHARED_TMP error :14:34; DOCKER_SOCKET error :15:35"; strings.Join(got, "; ") != want {
		t.Errorf("findings %q, want %q", strings.Join(got, "; "), want)
	}
}
