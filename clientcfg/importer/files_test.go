package importer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// TestAddSecretsKeepsTheFile: the env file keeps every byte it had (its
// comments, other servers' values, a name already set to another value);
// the new values are added below, mode 600, and read back by the launcher's
// parser as they were.
func TestAddSecretsKeepsTheFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mcpolicy", "env")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	old := "# mine\nexport OTHER='x y'\nGITHUB_TOKEN=ghp_the_users_own\nSAME=v1" // no final newline
	if err := os.WriteFile(file, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := AddSecrets(file, []Secret{{"GITHUB_TOKEN", "ghp_from_the_entry"}, {"SAME", "v1"}, {"API_KEY", " padded "}, {"NEW", "n3w"}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Added, ",") != "API_KEY,NEW" || strings.Join(r.Kept, ",") != "GITHUB_TOKEN" || strings.Join(r.Same, ",") != "SAME" {
		t.Errorf("added %v, kept %v, same %v", r.Added, r.Kept, r.Same)
	}
	got, _ := os.ReadFile(file)
	if !bytes.HasPrefix(got, []byte(old+"\n")) {
		t.Errorf("the file lost bytes:\n%s", got)
	}
	vals, err := launch.ParseEnvFile(file, got)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"OTHER": "x y", "GITHUB_TOKEN": "ghp_the_users_own", "SAME": "v1", "API_KEY": " padded ", "NEW": "n3w"}
	for k, v := range want {
		if vals[k] != v {
			t.Errorf("%s = %q, want %q", k, vals[k], v)
		}
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	// Nothing new: the file is not rewritten.
	before, _ := os.Stat(file)
	if _, err := AddSecrets(file, []Secret{{"NEW", "n3w"}}, "test"); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(file); !after.ModTime().Equal(before.ModTime()) {
		t.Error("the file was rewritten with nothing to add")
	}
}

// TestAddSecretsRefuses: a file the launcher would refuse or could not
// read is not touched.
func TestAddSecretsRefuses(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.WriteFile(real, []byte("A=1\n"), 0o600)
	link := filepath.Join(dir, "env")
	os.Symlink(real, link)
	if _, err := AddSecrets(link, []Secret{{"B", "2"}}, "test"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("through a symlink: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("not a line\n"), 0o600)
	if _, err := AddSecrets(bad, []Secret{{"B", "2"}}, "test"); err == nil {
		t.Error("a file the launcher cannot parse was written")
	}
	if got, _ := os.ReadFile(bad); string(got) != "not a line\n" {
		t.Errorf("the file changed: %q", got)
	}
	if _, err := AddSecrets(filepath.Join(dir, "nl"), []Secret{{"B", "a\nb"}}, "test"); err == nil {
		t.Error("a value with a line break was written")
	}
}

// TestWritePolicy: a new file is written, the same bytes left alone,
// other bytes kept unless forced, and then copied to the backups first.
func TestWritePolicy(t *testing.T) {
	dir, backups := t.TempDir(), t.TempDir()
	w, err := WritePolicy(dir, "s", []byte("a\n"), false, backups, nil)
	if err != nil || w.Status != "wrote" {
		t.Fatalf("first: %+v %v", w, err)
	}
	if w, _ = WritePolicy(dir, "s", []byte("a\n"), false, backups, nil); w.Status != "unchanged" {
		t.Errorf("same bytes: %+v", w)
	}
	if w, _ = WritePolicy(dir, "s", []byte("b\n"), false, backups, nil); w.Status != "exists" {
		t.Errorf("other bytes: %+v", w)
	}
	if got, _ := os.ReadFile(PolicyFile(dir, "s")); string(got) != "a\n" {
		t.Errorf("replaced without --force: %q", got)
	}
	w, err = WritePolicy(dir, "s", []byte("b\n"), true, backups, nil)
	if err != nil || w.Status != "replaced" {
		t.Fatalf("forced: %+v %v", w, err)
	}
	if got, _ := os.ReadFile(w.Backup); string(got) != "a\n" || !strings.HasPrefix(w.Backup, backups) {
		t.Errorf("backup %s holds %q", w.Backup, got)
	}
	if got, _ := os.ReadFile(PolicyFile(dir, "s")); string(got) != "b\n" {
		t.Errorf("forced write: %q", got)
	}
}

// TestAddSecretsConcurrentImports: imports run at once (two terminals, a
// script) each add their own secret; every line survives, as each one
// reads the file only after the other has written it.
func TestAddSecretsConcurrentImports(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mcpolicy", "env")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := AddSecrets(file, []Secret{{fmt.Sprintf("TOKEN_%d", i), fmt.Sprintf("v%d", i)}}, "test")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if !strings.Contains(string(got), fmt.Sprintf("TOKEN_%d=v%d\n", i, i)) {
			t.Errorf("TOKEN_%d lost:\n%s", i, got)
		}
	}
}
