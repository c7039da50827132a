package prove_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/testenv"
)

// busyboxTar is an image with busybox's cat, ls and sh, or "" when the
// host has no static busybox (.ci/run installs busybox-static).
func busyboxTar(t *testing.T) []byte {
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no /bin/busybox: CI installs busybox-static: %v", err)
		}
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777})
	tw.WriteHeader(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bb))})
	tw.Write(bb)
	for _, n := range []string{"cat", "ls", "sh"} {
		tw.WriteHeader(&tar.Header{Name: "bin/" + n, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	tw.Close()
	return buf.Bytes()
}

// TestReproduceLinesRunAsPrinted: each reproduce line of the evidence is
// pasted into a shell as printed, with no mcpolicy on PATH and no stand-in
// image kept: under bwrap the bwrap line itself, under docker and podman
// the artefact's flags in the server's own image — its own cat and sh
// where it has them (busybox), the static probe bound in read-only where
// it has none (an empty image). Each says what its row says: the
// credentials ENOENT, a write into the read-only grant EROFS.
func TestReproduceLinesRunAsPrinted(t *testing.T) {
	needEngines(t)
	ci := os.Getenv("CI") == "true"
	images := map[string][]byte{"empty": []byte(emptyTar()), "busybox": busyboxTar(t)}
	for name, image := range images {
		if image == nil {
			t.Logf("%s: no static busybox here", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			base, bin := workspace(t, "mcpolicy-repro-test-")
			project := filepath.Join(base, "proj")
			os.MkdirAll(filepath.Join(project, "data"), 0o755)
			os.WriteFile(filepath.Join(project, "data", "x.txt"), []byte("x\n"), 0o644)
			tag := fmt.Sprintf("localhost/mcpolicy-repro-test:%s-%d", name, os.Getpid())
			os.WriteFile(filepath.Join(project, "mcpolicy.cue"), []byte(fmt.Sprintf(`version: "v1"
servers: s: {
	image: %q
	command: ["/bin/sh"]
	backends: ["bwrap", "docker", "podman"]
	mounts: [{source: "data", target: "/data"}]
}
`, tag)), 0o644)
			exec.Command("chmod", "-R", "a+rwX", project).Run()
			for _, engine := range []string{"docker", "podman"} {
				if exec.Command(engine, "info").Run() != nil {
					continue
				}
				testenv.Import(t.Context(), t, engine, tag, image)
				t.Cleanup(func() { exec.Command(engine, "rmi", "-f", tag).Run() })
			}
			home, creds := plantCredentials(base)
			rep := proveReport(t, bin, project, home, filepath.Join(base, "evidence"))
			ran := 0
			for _, be := range rep.Backends {
				if be.Skipped != "" {
					if ci {
						t.Errorf("%s was not run in CI: %s", be.Backend, be.Skipped)
					}
					continue
				}
				for _, row := range be.Rows {
					want := map[string]string{"ENOENT": "No such file or directory", "EROFS": "Read-only file system"}[row.Result]
					readCreds := row.Op == "read" && row.Target == creds
					writeRO := row.Op == "write" && strings.HasPrefix(row.Target, "/data") && row.Result == "EROFS"
					if !readCreds && !writeRO {
						continue
					}
					if row.Reproduce == "" || strings.Contains(row.Reproduce, "mcpolicy ") || strings.Contains(row.Reproduce, "mcpolicy-prove:") {
						t.Errorf("%s: %s %s: reproduce %q needs mcpolicy or the stand-in image", be.Backend, row.Op, row.Target, row.Reproduce)
						continue
					}
					if first, _, _ := strings.Cut(row.Reproduce, " "); first != map[string]string{"bwrap": "bwrap", "docker": "docker", "podman": "podman"}[be.Backend] {
						t.Errorf("%s: reproduce %q does not run %s", be.Backend, row.Reproduce, be.Backend)
					}
					sh := exec.Command("sh", "-c", row.Reproduce)
					sh.Env = append(os.Environ(), "HOME="+home, "PATH=/usr/local/bin:/usr/bin:/bin")
					out, err := sh.CombinedOutput()
					said := string(out)
					ok := err != nil && strings.Contains(said, want)
					if be.Backend != "bwrap" && name == "empty" {
						// The probe bound in answers as prove's probe did.
						ok = strings.Contains(said, `"result":"`+row.Result+`"`)
					}
					if !ok {
						t.Errorf("%s: %s %s (%s): reproduce\n  %s\nsaid (%v):\n%s", be.Backend, row.Op, row.Target, row.Result, row.Reproduce, err, said)
					}
					ran++
				}
			}
			if ran == 0 {
				t.Error("no reproduce line was run")
			}
		})
	}
}
