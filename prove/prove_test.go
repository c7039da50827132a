package prove_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/prove"
)

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	exec.Command("chmod", "-R", "a+rwX", to).Run()
}

// TestProveSeedExample is the acceptance case: on the seed's example, with
// credentials planted in a temporary HOME, the credential rows are ENOENT
// under bwrap, docker and podman and EACCES under Landlock, the project
// read succeeds, and a row's reproduce command, run in a shell, says the
// same thing.
func TestProveSeedExample(t *testing.T) {
	ci := os.Getenv("CI") == "true"
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-prove-test-") // outside /tmp: the scratch hides /tmp
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	bin := filepath.Join(base, "mcpolicy")
	build := exec.Command("go", "build", "-o", bin, "../cmd/mcpolicy")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static: it is the probe in a container too
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	project := filepath.Join(base, "code-index")
	copyDir(t, "../examples/code-index", project)
	os.RemoveAll(filepath.Join(project, ".mcpolicy"))
	home := filepath.Join(base, "home")
	creds := filepath.Join(home, ".aws", "credentials")
	os.MkdirAll(filepath.Dir(creds), 0o755)
	os.WriteFile(creds, []byte("[default]\naws_secret_access_key = planted\n"), 0o644)

	out := filepath.Join(base, "evidence")
	cmd := exec.Command(bin, "prove", "-p", project, "--out", out)
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
	if _, err := os.Stat(filepath.Join(out, "evidence.md")); err != nil {
		t.Error(err)
	}
	want := map[string]string{"bwrap": "ENOENT", "landlock": "EACCES", "docker": "ENOENT", "podman": "ENOENT"}
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
