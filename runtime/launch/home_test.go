package launch_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// A "~/..." target, workdir, scratch, value and command word reach bwrap
// as the starting user's home: the spec's ${HOME} is expanded at spawn.
func TestPrepareBwrapExpandsHomeTargets(t *testing.T) {
	root, _ := project(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--unshare-all", "--clearenv", "--setenv", "HOME", "${HOME}", "--setenv", "D", "${HOME}/data",
		"--proc", "/proc", "--dev", "/dev", "--ro-bind", "/usr", "/usr",
		"--ro-bind", "${HOME}/data", "${HOME}/data", "--size", "1024", "--tmpfs", "${HOME}/cache",
		"--remount-ro", "/", "--chdir", "${HOME}/data", "--",
		"/usr/bin/cat", "${HOME}/data/f", "--in=${HOME}/data", "${HOMEX}/y", "${PROJECT_ROOT}/z"}
	spec := &launch.BwrapSpec{BwrapSpec: artefact.BwrapSpec{Backend: "bwrap", Server: "s", Plan: "sha256:00", Args: args}}
	b, err := launch.PrepareBwrapAt(spec, root, home, nil, "/usr/bin/bwrap")
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(b.Argv, " ")
	for _, want := range []string{"--setenv HOME " + home + " ", "--setenv D " + home + "/data ", " " + home + "/data --size",
		"--tmpfs " + home + "/cache ", "--chdir " + home + "/data --", "/usr/bin/cat " + home + "/data/f --in=" + home + "/data ${HOMEX}/y ${PROJECT_ROOT}/z"} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv lacks %q: %s", want, argv)
		}
	}
	if i := slices.Index(b.Argv, "--"); i < 0 || strings.Contains(strings.Join(b.Argv[:i], " "), "${HOME}") {
		t.Errorf("a ${HOME} placeholder was left before the command: %s", argv)
	}
}

// The engines' ${HOME} words: a target, a --tmpfs with its options, the
// workdir and a command word; HOME must be absolute.
func TestEngineArgsExpandHomeTargets(t *testing.T) {
	b := []byte(`["run", "--tmpfs", "${HOME}/c:rw,size=1m", "--mount", "type=bind,source=${HOME}/d,target=${HOME}/d,readonly",
		"-e", "HOME=${HOME}", "--workdir", "${HOME}/d", "img:1", "/bin/cat", "${HOME}/d/f", "--x=${HOME}/d", "${HOMEX}"]`)
	got, err := artefact.EngineArgs(b, "/p", "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "--tmpfs", "/home/u/c:rw,size=1m", "--mount", "type=bind,source=/home/u/d,target=/home/u/d,readonly",
		"-e", "HOME=/home/u", "--workdir", "/home/u/d", "img:1", "/bin/cat", "/home/u/d/f", "--x=/home/u/d", "${HOMEX}"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if _, err := artefact.EngineArgs(b, "/p", ""); err == nil {
		t.Errorf("an empty HOME was accepted")
	}
}

// A home of "/" would put "~/proc" on the runtime's /proc: refused.
func TestHomeTargetsRefuseRootHome(t *testing.T) {
	root, _ := project(t)
	spec := &launch.BwrapSpec{BwrapSpec: artefact.BwrapSpec{Backend: "bwrap", Server: "s", Plan: "sha256:00",
		Args: []string{"--unshare-all", "--size", "1024", "--tmpfs", "${HOME}/proc", "--", "/bin/true"}}}
	if _, err := launch.PrepareBwrapAt(spec, root, "/", nil, "/usr/bin/bwrap"); err == nil || !strings.Contains(err.Error(), "HOME is /") {
		t.Errorf("bwrap: got %v, want HOME is / refused", err)
	}
	b := []byte(`["run", "--mount", "type=bind,source=${HOME}/d,target=${HOME}/proc,readonly", "img:1"]`)
	if _, err := artefact.EngineArgs(b, "/p", "/"); err == nil || !strings.Contains(err.Error(), "HOME is /") {
		t.Errorf("engine: got %v, want HOME is / refused", err)
	}
}
