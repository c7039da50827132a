package prove_test

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/evidence/prove"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
)

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	exec.Command("chmod", "-R", "a+rwX", to).Run()
}

// workspace makes a folder outside /tmp (the scratch hides /tmp) holding
// a static mcpolicy (it is the probe in a container too).
func workspace(t *testing.T, prefix string) (base, bin string) {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	bin = filepath.Join(base, "mcpolicy")
	testbin.Install(t, testbin.Mcpolicy(t), bin)
	return base, bin
}

// plantCredentials makes a HOME below base holding ~/.aws/credentials.
func plantCredentials(base string) (home, creds string) {
	home = filepath.Join(base, "home")
	creds = filepath.Join(home, ".aws", "credentials")
	os.MkdirAll(filepath.Dir(creds), 0o755)
	os.WriteFile(creds, []byte("[default]\naws_secret_access_key = planted\n"), 0o644)
	return home, creds
}

// proveReport runs mcpolicy prove on project with HOME set and reads the
// evidence it wrote.
func proveReport(t *testing.T, bin, project, home, out string, args ...string) prove.Report {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"prove", "-p", project, "--out", out}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcpolicy prove: %v\n%s", err, o)
	}
	var rep prove.Report
	b, err := os.ReadFile(filepath.Join(out, "evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestProveSeedExample is the acceptance case: on the seed's example, with
// credentials planted in a temporary HOME, the credential rows are ENOENT
// under every backend the server is built for (docker, and podman, which
// runs its artefact), the project read succeeds, and a row's reproduce
// command, run in a shell, says the same thing.
func TestProveSeedExample(t *testing.T) {
	needEngines(t)
	ci := os.Getenv("CI") == "true"
	base, bin := workspace(t, "mcpolicy-prove-test-")
	project := filepath.Join(base, "code-index")
	copyDir(t, "../../examples/code-index", project)
	os.RemoveAll(filepath.Join(project, ".mcpolicy"))
	home, creds := plantCredentials(base)
	out := filepath.Join(base, "evidence")
	// The docker and podman reproduce commands run the stand-in image:
	// kept for them, and removed here.
	rep := proveReport(t, bin, project, home, out, "--keep-image")
	t.Cleanup(func() { removeStandIn(bin) })
	if _, err := os.Stat(filepath.Join(out, "evidence.md")); err != nil {
		t.Error(err)
	}
	want := map[string]string{"bwrap": "ENOENT", "landlock": "ENOENT", "docker": "ENOENT", "podman": "ENOENT"}
	for _, be := range rep.Backends {
		if be.Skipped != "" {
			if ci {
				t.Errorf("%s was not run in CI: %s", be.Backend, be.Skipped)
			} else {
				t.Logf("%s not run here: %s", be.Backend, be.Skipped)
			}
			continue
		}
		found := map[string]bool{}
		for _, row := range be.Rows {
			if !row.Agrees {
				t.Errorf("%s: %s %s: kernel said %s, plan says %s", be.Backend, row.Op, row.Target, row.Result, row.Expect)
			}
			switch {
			case row.Target == creds && row.Op == "read":
				found["creds"] = true
				if row.Result != want[be.Backend] {
					t.Errorf("%s: credentials: %s, want %s", be.Backend, row.Result, want[be.Backend])
				}
				// The reproduce command, pasted into a shell, says the same.
				if be.Backend == "docker" || be.Backend == "podman" {
					o, _ := exec.Command("sh", "-c", row.Reproduce).CombinedOutput()
					if !strings.Contains(string(o), `"result":"ENOENT"`) {
						t.Errorf("%s: reproduce %q said %q", be.Backend, row.Reproduce, o)
					}
				}
				if be.Backend == "bwrap" || be.Backend == "landlock" {
					sh := exec.Command("sh", "-c", strings.Replace(row.Reproduce, "mcpolicy exec", bin+" exec", 1))
					sh.Env = append(os.Environ(), "HOME="+home)
					o, _ := sh.CombinedOutput()
					msg := map[string]string{"ENOENT": "No such file or directory", "EACCES": "Permission denied"}[row.Result]
					if !strings.Contains(string(o), msg) {
						t.Errorf("%s: reproduce %q said %q, want %q", be.Backend, row.Reproduce, o, msg)
					}
				}
			case strings.HasSuffix(row.Target, "README.md"):
				found["project"] = true
				if row.Result != "ok" {
					t.Errorf("%s: the project read failed: %s", be.Backend, row.Result)
				}
			}
		}
		if !found["creds"] || !found["project"] {
			t.Errorf("%s: rows missing: %v", be.Backend, found)
		}
	}
}

// TestCanaryUnderEveryBackend is the seed's demonstration, two instruments
// on one build: the canary's tools behave (the mcpcall tests show the tool
// matrix green), but its startup reads a credentials file. Under each
// Linux backend, prove starts the real canary in the same confinement as
// its probe: the probe's read of the file and the canary's own startup
// read fail alike — ENOENT under every backend —
// while the tool still answers.
func TestCanaryUnderEveryBackend(t *testing.T) {
	needEngines(t)
	ci := os.Getenv("CI") == "true"
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-canary-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	project := filepath.Join(base, "canary")
	copyDir(t, "../../examples/canary", project)
	bin := filepath.Join(base, "mcpolicy")
	testbin.Install(t, testbin.Mcpolicy(t), bin)
	testbin.Install(t, testbin.Canary(t), filepath.Join(project, "bin", "canary"))
	exec.Command("chmod", "-R", "a+rX", project).Run()
	// The canary's image is empty: its binary comes through the bin mount.
	for _, engine := range []string{"docker", "podman"} {
		if exec.Command(engine, "info").Run() != nil {
			continue
		}
		cmd := exec.Command(engine, "import", "-", "mcpolicy-canary:empty")
		cmd.Stdin = strings.NewReader(emptyTar())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s import: %v\n%s", engine, err, out)
		}
		t.Cleanup(func() { exec.Command(engine, "rmi", "-f", "mcpolicy-canary:empty").Run() })
	}
	home := filepath.Join(base, "home")
	creds := filepath.Join(home, ".aws", "credentials")
	os.MkdirAll(filepath.Dir(creds), 0o755)
	os.WriteFile(creds, []byte("[default]\naws_secret_access_key = planted\n"), 0o644)

	out := filepath.Join(base, "evidence")
	cmd := exec.Command(bin, "prove", "-p", project, "--out", out, "--tool", "list_dir", "--probe", creds)
	cmd.Env = append(os.Environ(), "HOME="+home, "CANARY_TARGET="+creds)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcpolicy prove: %v\n%s", err, o)
	}
	var rep prove.Report
	b, _ := os.ReadFile(filepath.Join(out, "evidence.json"))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"bwrap": "ENOENT", "landlock": "ENOENT", "docker": "ENOENT", "podman": "ENOENT"}
	ran := 0
	for _, be := range rep.Backends {
		if be.Skipped != "" || be.Server == nil || be.Server.Skipped != "" {
			reason := be.Skipped
			if be.Server != nil && reason == "" {
				reason = be.Server.Skipped
			}
			if ci {
				t.Errorf("%s: not run in CI: %s", be.Backend, reason)
			}
			continue
		}
		ran++
		line := "canary: startup read " + creds + ": " + want[be.Backend]
		if !strings.Contains(be.Server.Stderr, line) {
			t.Errorf("%s: the canary's stderr lacks %q:\n%s", be.Backend, line, be.Server.Stderr)
		}
		if be.Server.IsError || !strings.Contains(be.Server.Text, "hello.txt") {
			t.Errorf("%s: the tool did not answer as unconfined: %+v", be.Backend, be.Server)
		}
		for _, row := range be.Rows {
			if row.Target == creds && row.Op == "read" && row.Result != want[be.Backend] {
				t.Errorf("%s: the probe's read: %s, want %s", be.Backend, row.Result, want[be.Backend])
			}
		}
	}
	if ran == 0 {
		t.Fatal("no backend ran the canary")
	}
}

// standInTag is the docker tag of the probe bin's stand-in image.
func standInTag(bin string) string {
	b, _ := os.ReadFile(bin)
	sum := sha256.Sum256(b)
	return "mcpolicy-prove:" + hex.EncodeToString(sum[:6])
}

// removeStandIn removes the stand-in images of the probe bin, which
// --keep-image kept.
func removeStandIn(bin string) {
	tag := standInTag(bin)
	exec.Command("docker", "rmi", tag).Run()
	exec.Command("podman", "rmi", "localhost/"+tag).Run()
}

// emptyTar is a tar archive with one empty folder.
func emptyTar() string {
	var buf strings.Builder
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777})
	tw.Close()
	return buf.String()
}

// TestProveWithEgressAllowlist: a server that may reach one host is proved
// the way mcpolicy run starts it, behind the egress proxy: credentials are
// still ENOENT under bwrap, docker and podman, the grant still reads, the
// bwrap reproduce command (mcpolicy run -- cat ...) says the same in a
// shell, Landlock is refused as unable to enforce hosts, and no egress
// sidecar is left behind.
func TestProveWithEgressAllowlist(t *testing.T) {
	needEngines(t)
	ci := os.Getenv("CI") == "true"
	base, bin := workspace(t, "mcpolicy-prove-egress-")
	project := filepath.Join(base, "proj")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "README.md"), []byte("hello\n"), 0o644)
	os.WriteFile(filepath.Join(project, "mcpolicy.cue"), []byte(`version: "v1"
servers: fetcher: {
	image: "fetcher:1"
	command: ["/bin/true"]
	runtime: "system"
	backends: ["bwrap", "docker", "landlock"]
	mounts: [{source: ".", target: "/w"}]
	network: allow: ["api.example.test:443"]
}
`), 0o644)
	home, _ := plantCredentials(base)
	rep := proveReport(t, bin, project, home, filepath.Join(base, "evidence"))
	ran := 0
	for _, be := range rep.Backends {
		if be.Backend == "landlock" {
			if !strings.Contains(be.Skipped, "not enforceable by backend landlock") {
				t.Errorf("landlock with an allowlist: %q, want a not-enforceable refusal", be.Skipped)
			}
			continue
		}
		if be.Skipped != "" {
			if ci {
				t.Errorf("%s was not run in CI: %s", be.Backend, be.Skipped)
			}
			continue
		}
		ran++
		creds, project := false, false
		for _, row := range be.Rows {
			if !row.Agrees {
				t.Errorf("%s: %s %s: kernel said %s, plan says %s", be.Backend, row.Op, row.Target, row.Result, row.Expect)
			}
			switch {
			case strings.HasSuffix(row.Target, ".aws/credentials") && row.Op == "read":
				creds = row.Result == "ENOENT"
				if !strings.HasPrefix(row.Reproduce, "mcpolicy run ") {
					t.Errorf("%s: reproduce %q does not start the proxy", be.Backend, row.Reproduce)
				}
				if be.Backend == "bwrap" {
					sh := exec.Command("sh", "-c", strings.Replace(row.Reproduce, "mcpolicy run", bin+" run", 1))
					sh.Env = append(os.Environ(), "HOME="+home)
					if o, _ := sh.CombinedOutput(); !strings.Contains(string(o), "No such file or directory") {
						t.Errorf("bwrap: reproduce %q said %q", row.Reproduce, o)
					}
				}
			case row.Target == "/w/README.md":
				project = row.Result == "ok"
			}
		}
		if !creds || !project {
			t.Errorf("%s: credentials ENOENT %v, project readable %v", be.Backend, creds, project)
		}
		if be.Backend == "docker" || be.Backend == "podman" {
			if o, _ := exec.Command(be.Backend, "ps", "-aq", "--filter", "label=org.mcpolicy.egress="+rep.Plan).Output(); strings.TrimSpace(string(o)) != "" {
				t.Errorf("%s: egress sidecars left behind: %s", be.Backend, o)
			}
		}
	}
	if ran == 0 && ci {
		t.Error("no backend ran")
	}
}
