package launch_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// fakeInspect is a stand-in engine's answer to `image inspect`: an ID and
// a configuration with a command.
const fakeInspect = "echo '{\"ID\": \"sha256:" + fakeID + "\", \"Config\": {\"Cmd\": [\"/server\"]}}'\n"

const fakeID = "abababababababababababababababababababababababababababababababab"

// TestEngineExplicitMountOnATopLevelEntry: a policy mounting one of the
// project's top-level entries again below the read-write project mount
// ("docs" -> /workspace/docs, read-only) gets that mount in the entry's
// place. The fixed top level bound the entry too, and docker and podman
// refused the duplicate mount point (prove found it; bwrap's later bind
// already won). Protected entries keep their read-only bind.
func TestEngineExplicitMountOnATopLevelEntry(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"docs", "src", ".git"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The engine is a stand-in for `docker image inspect` only: what is
	// checked is the argv Prepare builds, not a run.
	engine := filepath.Join(t.TempDir(), "docker")
	if err := os.WriteFile(engine, []byte("#!/bin/sh\n"+fakeInspect), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--rm", "-i",
		"--mount", "type=bind,source=" + root + ",target=/workspace",
		"--mount", "type=bind,source=" + filepath.Join(root, "docs") + ",target=/workspace/docs,readonly",
		"--mount", "type=bind,source=" + filepath.Join(root, ".git") + ",target=/workspace/.git,readonly",
		"img:1"}
	out, err := (launch.Engine{Path: engine, Root: root, Home: "/nonexistent", Verifier: "/usr/local/bin/mcpolicy-launch", Seccomp: "/proc/self/fd/3"}).Prepare(args)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string][]string{}
	for i := 0; i+1 < len(out); i++ {
		if out[i] != "--mount" {
			continue
		}
		for _, f := range strings.Split(out[i+1], ",") {
			if v, ok := strings.CutPrefix(f, "target="); ok {
				targets[v] = append(targets[v], out[i+1])
			}
		}
	}
	for target, want := range map[string]bool{"/workspace": true, "/workspace/docs": true, "/workspace/src": false, "/workspace/.git": true} {
		ms := targets[target]
		if len(ms) != 1 {
			t.Errorf("%s is mounted %d times: %q", target, len(ms), ms)
			continue
		}
		if ro := strings.Contains(ms[0], "readonly"); ro != want {
			t.Errorf("%s: %s, want read-only %v", target, ms[0], want)
		}
	}
}

// TestEngineRefusesWhatItDoesNotEmit: a --mount of another type (the
// engine reads "BIND" as a bind; no type is a volume), one naming its
// source twice, and a --security-opt but no-new-privileges are refused
// before any engine is asked: each would mount or run past the checks.
func TestEngineRefusesWhatItDoesNotEmit(t *testing.T) {
	root := t.TempDir()
	engine := filepath.Join(t.TempDir(), "docker") // answers image inspect only
	if err := os.WriteFile(engine, []byte("#!/bin/sh\n"+fakeInspect), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := (launch.Engine{Path: engine, Root: root, Verifier: "/v", Seccomp: "/proc/self/fd/3"}).Prepare([]string{"run", "--rm", "img:1"}); err != nil {
		t.Fatalf("the control: %v", err)
	}
	for _, args := range [][]string{
		{"run", "--mount", "type=BIND,source=/,target=/host", "img:1"},
		{"run", "--mount", "source=/,target=/host", "img:1"},
		{"run", "--mount", "type=volume,source=data,target=/data", "img:1"},
		{"run", "--mount", "type=tmpfs,target=/x", "img:1"},
		{"run", "--mount", "type=bind,source=" + root + ",src=/,target=/w", "img:1"},
		{"run", "--security-opt", "seccomp=unconfined", "img:1"},
		{"run", "--security-opt", "apparmor=unconfined", "img:1"},
		{"run", "--security-opt=seccomp=unconfined", "img:1"},
		{"run", "--privileged", "img:1"},
	} {
		if out, err := (launch.Engine{Path: engine, Root: root, Verifier: "/v", Seccomp: "/proc/self/fd/3"}).Prepare(args); err == nil {
			t.Errorf("%q: prepared as %q", args, out)
		}
	}
	if _, err := (launch.Engine{Path: engine, Root: root, Verifier: "/v"}).Prepare([]string{"run", "img:1"}); err == nil || !strings.Contains(err.Error(), "seccomp") {
		t.Errorf("no profile: %v, want a refusal", err)
	}
}

// TestEngineScratchOwner: the scratch tmpfs is given to --user's ids, as
// each engine takes it (docker: uid= and gid=; podman: U), and the masks
// are left alone. runc gives a tmpfs the mode of the image's folder under
// it, whatever mode= says: an image's /tmp 0755 root made the scratch
// unwritable for uid 1000.
func TestEngineScratchOwner(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct{ version, want string }{
		{"Docker version 20.10.24+dfsg1, build 297e128", "/tmp:rw,nosuid,nodev,noexec,size=64m,uid=1000,gid=1001"},
		{"podman version 4.3.1", "/tmp:rw,nosuid,nodev,noexec,size=64m,U"},
	} {
		engine := filepath.Join(t.TempDir(), "docker")
		script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '" + c.version + "'; exit; fi\n" + fakeInspect
		if err := os.WriteFile(engine, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		args := []string{"run", "--rm", "-i", "--user", "1000:1001",
			"--tmpfs", "/run:ro,nosuid,nodev,noexec,size=4k",
			"--tmpfs", "/tmp:rw,nosuid,nodev,noexec,size=64m", "img:1"}
		out, err := (launch.Engine{Path: engine, Root: root, Home: "/nonexistent", Verifier: "/usr/local/bin/mcpolicy-launch", Seccomp: "/proc/self/fd/3"}).Prepare(args)
		if err != nil {
			t.Fatal(err)
		}
		var tmpfs []string
		for i := 0; i+1 < len(out); i++ {
			if out[i] == "--tmpfs" {
				tmpfs = append(tmpfs, out[i+1])
			}
		}
		if want := []string{"/run:ro,nosuid,nodev,noexec,size=4k", c.want}; strings.Join(tmpfs, " ") != strings.Join(want, " ") {
			t.Errorf("%s: --tmpfs %q, want %q", c.version, tmpfs, want)
		}
	}
}

// TestEnginePodmanUmask: podman is given the server's umask (--umask: the
// launcher's with 022 added): it takes containers.conf's otherwise, which
// CONTAINERS_CONF in the client's environment may set to 0000. docker has
// no such option (runc's 022), and gets none.
func TestEnginePodmanUmask(t *testing.T) {
	root := t.TempDir()
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	for _, c := range []struct {
		version string
		umask   int
		want    string
	}{
		{"podman version 4.3.1", 0, "0022"},
		{"podman version 4.3.1", 0o077, "0077"},
		{"podman version 4.3.1", 0o002, "0022"},
		{"Docker version 20.10.24+dfsg1, build 297e128", 0, ""},
	} {
		engine := filepath.Join(t.TempDir(), "podman")
		script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '" + c.version + "'; exit; fi\n" + fakeInspect
		if err := os.WriteFile(engine, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		syscall.Umask(c.umask)
		out, err := (launch.Engine{Path: engine, Root: root, Home: "/nonexistent", Verifier: "/v", Seccomp: "/proc/self/fd/3"}).Prepare([]string{"run", "--rm", "-i", "img:1"})
		syscall.Umask(0)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if i := slices.Index(out, "--umask"); i >= 0 && i+1 < len(out) {
			got = out[i+1]
		}
		if got != c.want {
			t.Errorf("%s, umask %04o: --umask %q, want %q (%q)", c.version, c.umask, got, c.want, out)
		}
	}
}

// TestEngineRunsByID: the container runs the image by the ID inspected,
// not by its tag: a tag moved in between (an image with other VOLUMEs,
// another entrypoint) cannot be what starts.
func TestEngineRunsByID(t *testing.T) {
	engine := filepath.Join(t.TempDir(), "docker")
	if err := os.WriteFile(engine, []byte("#!/bin/sh\n"+fakeInspect), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := (launch.Engine{Path: engine, Root: t.TempDir(), Verifier: "/v", Seccomp: "/proc/self/fd/3"}).Prepare([]string{"run", "--rm", "img:1"})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(out, launch.VerifierTarget)
	if i < 0 || i+2 >= len(out) || out[i+1] != "sha256:"+fakeID || out[i+2] != launch.VerifyMountsArg || slices.Contains(out, "img:1") {
		t.Errorf("prepared as %q, want the image's ID sha256:%s in the tag's place", out, fakeID)
	}
}
