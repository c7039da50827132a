package launch_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
)

// invokerUID is a user that is neither root nor the default 1000: what a
// developer whose files are not uid 1000 is.
const invokerUID = 1001

// TestInvokerUser: with `user: "invoker"` the server runs with the ids of
// whoever starts it, so a read-write mount of that user's files (mode 0700)
// is writable under docker (where the default 1000:1000 is refused) and
// bwrap; started by root it is refused before anything runs.
func TestInvokerUser(t *testing.T) {
	kernelTest(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to start the launcher as another user")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is not installed; CI must install it")
		}
		t.Skip("bwrap not installed")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("docker is not installed; CI must install it")
		}
		t.Skip("docker not installed")
	}
	var sock syscall.Stat_t
	if err := syscall.Stat("/run/docker.sock", &sock); err != nil {
		t.Fatalf("docker socket: %v", err)
	}
	base := workdir(t)
	goBuild(t, base, "mcpolicy", "mcpolicy-launch")
	image := "mcpolicy-invoker-test:1"
	importBusybox(t, docker, image)

	proj := filepath.Join(base, "proj")
	home := filepath.Join(base, "home")
	for _, d := range []string{proj, filepath.Join(proj, "notes"), home} {
		os.MkdirAll(d, 0o700)
		os.Chown(d, invokerUID, invokerUID)
	}
	policy := `version: "v1"
servers: {
	mine: {
		image: "` + image + `"
		command: ["/bin/sh", "-c", "id -u > /w/by-$(id -u) && echo wrote"]
		user: "invoker"
		backends: ["docker", "bwrap"]
		mounts: [{source: "notes", target: "/w", mode: "rw"}]
		accept: ["rw-holds-other-server"] // both write notes/
	}
	fixed: {
		image: "` + image + `"
		command: ["/bin/sh", "-c", "id -u > /w/by-$(id -u) && echo wrote"]
		backends: ["docker", "bwrap"]
		mounts: [{source: "notes", target: "/w", mode: "rw"}]
		accept: ["rw-holds-other-server"] // both write notes/
	}
}
`
	os.WriteFile(filepath.Join(proj, "mcpolicy.cue"), []byte(policy), 0o644)
	build := exec.Command(filepath.Join(base, "bin", "mcpolicy"), "build", proj)
	build.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("mcpolicy build: %v\n%s", err, out)
	}
	filepath.Walk(proj, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, invokerUID, invokerUID) })

	launcher := filepath.Join(base, "bin", "mcpolicy-launch")
	start := func(uid int, server, backend string) (string, int) {
		var cmd *exec.Cmd
		if backend == "bwrap" {
			file := filepath.Join(proj, ".mcpolicy", "bwrap", server+".json")
			data, _ := os.ReadFile(file)
			cmd = exec.Command(launcher, "--project-root", proj, "--sha256", artefact.Digest(data), file)
		} else {
			file := filepath.Join(proj, ".mcpolicy", "docker", server+".json")
			data, _ := os.ReadFile(file)
			run, err := artefact.EngineArgs(data, proj, home)
			if err != nil {
				t.Fatal(err)
			}
			cmd = exec.Command(launcher, append([]string{"--engine", docker, "--project-root", proj, "--sha256", artefact.Digest(data), file, "--"}, run...)...)
		}
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		if uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{sock.Gid}}}
		}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("%s %s: %v", server, backend, err)
		}
		return string(out), 0
	}
	for _, backend := range []string{"docker", "bwrap"} {
		os.Remove(filepath.Join(proj, "notes", fmt.Sprintf("by-%d", invokerUID)))
		out, code := start(invokerUID, "mine", backend)
		written, err := os.ReadFile(filepath.Join(proj, "notes", fmt.Sprintf("by-%d", invokerUID)))
		if code != 0 || err != nil || strings.TrimSpace(string(written)) != fmt.Sprint(invokerUID) {
			t.Errorf("%s, invoker: exit %d, %q; the server must write the user's 0700 folder as uid %d (%v %q)", backend, code, out, invokerUID, err, written)
		}
		if out, code := start(0, "mine", backend); code == 0 || !strings.Contains(out, "that is root here") {
			t.Errorf("%s, invoker started by root: exit %d, %q; want a refusal", backend, code, out)
		}
	}
	// The control: the default user cannot write the same folder under
	// docker (the container's uid 1000 is not the folder's owner).
	if out, code := start(invokerUID, "fixed", "docker"); code == 0 || !strings.Contains(out, "Permission denied") {
		t.Errorf("docker, user 1000:1000 on a uid %d folder: exit %d, %q; want EACCES", invokerUID, code, out)
	}
}

// importBusybox imports a busybox image (no registry) and removes it at the end.
func importBusybox(t *testing.T, engine, image string) {
	t.Helper()
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("%v (install busybox-static)", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	for _, d := range []string{"bin/", "tmp/", "w/"} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: mtime})
	}
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb)), ModTime: mtime})
	tw.Write(bb)
	for _, a := range []string{"sh", "id", "echo"} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: mtime})
	}
	tw.Close()
	testenv.Import(context.Background(), t, engine, image, buf.Bytes())
	t.Cleanup(func() { exec.Command(engine, "rmi", "-f", image).Run() })
}
