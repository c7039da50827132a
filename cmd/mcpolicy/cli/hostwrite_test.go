package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The files mcpolicy writes on the host, attacked as a server with a
// read-write grant on the project would: links planted where the command
// writes. Each attack must leave the file it aims at as it was.

const rwProject = `version: "v1"
servers: "indexer": {
	image: "indexer:1"
	backends: ["docker"]
	mounts: [{source: ".", target: "/workspace", mode: "rw"}]
}
`

// victim is a file outside every grant the attack aims at (~/.bashrc).
func victim(t *testing.T) (string, string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	f := filepath.Join(home, ".bashrc")
	const content = "# the user's own\n"
	writeFile(t, f, content)
	return f, content
}

func unchanged(t *testing.T, f, want string) {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil || string(b) != want {
		t.Fatalf("%s was written (the attack worked): %q, %v", f, b, err)
	}
}

// TestProveEvidenceNotThroughServerLink: a server that may write the
// project leaves evidence/evidence.md (or evidence itself) as a symlink;
// prove must not write the report through it.
func TestProveEvidenceNotThroughServerLink(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, evidence, bashrc string)
	}{
		{"file link", func(t *testing.T, evidence, bashrc string) {
			os.MkdirAll(evidence, 0o755)
			if err := os.Symlink(bashrc, filepath.Join(evidence, "evidence.md")); err != nil {
				t.Fatal(err)
			}
		}},
		{"folder link", func(t *testing.T, evidence, bashrc string) {
			writeFile(t, filepath.Join(filepath.Dir(bashrc), "evidence.md"), "# the user's own\n")
			if err := os.Symlink(filepath.Dir(bashrc), evidence); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bashrc, content := victim(t)
			writeFile(t, filepath.Join(dir, "mcpolicy.cue"), rwProject)
			// No engine on PATH: each backend is reported as not run, and
			// the evidence is written all the same.
			t.Setenv("PATH", t.TempDir())
			evidence := filepath.Join(dir, "evidence")
			tc.plant(t, evidence, bashrc)
			code, out, errs := run(t, "prove", "-p", dir, "--out", evidence)
			unchanged(t, bashrc, content)
			if tc.name == "folder link" {
				unchanged(t, filepath.Join(filepath.Dir(bashrc), "evidence.md"), content)
			}
			if code != ExitTampered || !strings.Contains(errs, "symlink") || !strings.Contains(errs, "refusing") {
				t.Errorf("prove through a planted link: exit %d\n%s%s", code, out, errs)
			}
		})
	}
	// With no link there, the evidence is written.
	dir := t.TempDir()
	victim(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), rwProject)
	t.Setenv("PATH", t.TempDir())
	if code, out, errs := run(t, "prove", "-p", dir, "--out", filepath.Join(dir, "evidence")); code != ExitOK {
		t.Fatalf("prove: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "evidence", "evidence.md")); err != nil {
		t.Fatal(err)
	}
}

// TestBuildOutNotThroughServerLink: build --out into a folder the server
// may write, where it made a backend's folder a link to one of the user's.
func TestBuildOutNotThroughServerLink(t *testing.T) {
	dir := t.TempDir()
	victim(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), rwProject)
	out := filepath.Join(dir, "build")
	if code, o, errs := run(t, "build", "--out", out, dir); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, o, errs)
	}
	// The server swaps build/docker for a link to a folder of the user's
	// holding a file of the same name, and leaves an extra file beside it.
	elsewhere := filepath.Join(os.Getenv("HOME"), "autostart")
	target := filepath.Join(elsewhere, "indexer.json")
	const content = `{"the user's": true}` + "\n"
	writeFile(t, target, content)
	if err := os.RemoveAll(filepath.Join(out, "docker")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(out, "docker")); err != nil {
		t.Fatal(err)
	}
	// A change of policy makes the build rewrite every artefact.
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), strings.Replace(rwProject, `"indexer:1"`, `"indexer:2"`, 1))
	code, o, errs := run(t, "build", "--out", out, dir)
	unchanged(t, target, content)
	if code != ExitTampered || !strings.Contains(errs, "symlink inside") {
		t.Errorf("build through a planted link: exit %d\n%s%s", code, o, errs)
	}
}

// TestClientFileInAnyServersGrant: `client --server a` writes a file that
// starts a; server b, which may write the folder holding it, must not be
// able to rewrite how a starts.
func TestClientFileInAnyServersGrant(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	fakeLauncher(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: "a": {
	image: "a:1"
	backends: ["docker"]
	mounts: [{source: "src", target: "/src"}]
}
servers: "b": {
	image: "b:1"
	backends: ["docker"]
	mounts: [{source: "work", target: "/work", mode: "rw"}]
}
`)
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	cfg := filepath.Join(dir, "work", "mcp.json")
	writeFile(t, cfg, "{}\n")
	code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--server", "a", "--file", cfg, "--write")
	unchanged(t, cfg, "{}\n")
	if code != ExitInvalid || !strings.Contains(errs, `server "b" can write`) {
		t.Errorf("client into another server's grant: exit %d\n%s%s", code, out, errs)
	}
}

// TestClientFileLinkInGrant: the client file named inside the server's
// grant is a symlink the server planted to a client config of the user's
// (outside every grant): the check must judge the link where it is, and
// nothing may be read through it (the backup would copy the user's file
// into the grant) or written.
func TestClientFileLinkInGrant(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	t.Setenv("HOME", home)
	fakeLauncher(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: "b": {
	image: "b:1"
	backends: ["docker"]
	mounts: [{source: "work", target: "/work", mode: "rw"}]
}
`)
	users := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	const content = `{"mcpServers": {"mine": {"command": "secret-token-here"}}}` + "\n"
	writeFile(t, users, content)
	cfg := filepath.Join(dir, "work", "mcp.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	if err := os.Symlink(users, cfg); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "client", "claude-desktop", "-p", dir, "--file", cfg, "--write")
	unchanged(t, users, content)
	if _, err := os.Lstat(cfg + ".mcpolicy.bak"); err == nil {
		t.Errorf("the user's config was copied into the server's grant")
	}
	if fi, err := os.Lstat(cfg); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a client config in the server's grant: %v", err)
	}
	if code != ExitInvalid || !strings.Contains(errs, `server "b" can write`) {
		t.Errorf("client through a link in the grant: exit %d\n%s%s", code, out, errs)
	}
}

// TestBuildOutFIFO: a FIFO the server left where an artefact goes must not
// hang the build (nor be written through): it is refused.
func TestBuildOutFIFO(t *testing.T) {
	dir := t.TempDir()
	victim(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), rwProject)
	out := filepath.Join(dir, "build")
	if code, o, errs := run(t, "build", "--out", out, dir); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, o, errs)
	}
	f := filepath.Join(out, "docker", "indexer.json")
	os.Remove(f)
	if err := syscall.Mkfifo(f, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var code int
	var o, errs string
	go func() {
		code, o, errs = run(t, "build", "--out", out, dir)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		// Unblock the reader, so the test ends and reports.
		if w, err := os.OpenFile(f, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatalf("build hung on a FIFO where an artefact goes")
	}
	if code != ExitTampered || !strings.Contains(errs, "FIFO") {
		t.Errorf("build over a FIFO: exit %d\n%s%s", code, o, errs)
	}
}

// TestProveTmpdirInsideGrant: prove's temporary folders hold the wrapper
// the host runs and a socket it opens up; with $TMPDIR in the project the
// server writes, it refuses to start.
func TestProveTmpdirInsideGrant(t *testing.T) {
	dir := t.TempDir()
	victim(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), rwProject)
	tmp := filepath.Join(dir, "tmp")
	os.MkdirAll(tmp, 0o700)
	t.Setenv("PATH", t.TempDir())
	t.Setenv("TMPDIR", tmp)
	code, out, errs := run(t, "prove", "-p", dir, "--out", filepath.Join(t.TempDir(), "evidence"))
	if code == ExitOK || !strings.Contains(errs, "set TMPDIR to a folder outside every read-write grant") {
		t.Errorf("prove with TMPDIR in the grant: exit %d\n%s%s", code, out, errs)
	}
	if made, _ := filepath.Glob(filepath.Join(tmp, "mcpolicy-*")); len(made) > 0 {
		t.Errorf("made %v inside the server's grant", made)
	}
}
