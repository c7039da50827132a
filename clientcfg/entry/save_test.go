package entry

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
)

func managedLaunch(name string) *Launch {
	return &Launch{Command: "/usr/local/bin/" + clientcfg.LauncherName, Args: []string{"--sha256", name}, Env: map[string]string{}}
}

// addEntry is the edit one `client --write` run makes: its server's entry.
func addEntry(t testing.TB, file, client, server string) func([]byte) ([]byte, error) {
	c, err := clientcfg.LookupClient(client)
	if err != nil {
		t.Fatal(err)
	}
	return func(src []byte) ([]byte, error) { return Merge(file, src, c, server, managedLaunch(server), false) }
}

func hasEntry(src, client, server string) bool {
	if client == "codex" {
		return strings.Contains(src, "[mcp_servers."+server+"]")
	}
	return strings.Contains(src, `"`+server+`": {`)
}

// TestSaveWriterProcess is one writer of TestSaveConcurrentWriters, in a
// process of its own (the lock must hold across processes): ROUNDS saves,
// each adding an entry; it prints the entries whose Save said they were
// written.
func TestSaveWriterProcess(t *testing.T) {
	file := os.Getenv("SAVE_FILE")
	if file == "" {
		t.Skip("run by TestSaveConcurrentWriters")
	}
	rounds, _ := strconv.Atoi(os.Getenv("SAVE_ROUNDS"))
	for r := 0; r < rounds; r++ {
		name := fmt.Sprintf("%s-r%d", os.Getenv("SAVE_WRITER"), r)
		if _, err := Save(SaveOptions{File: file, StateDir: os.Getenv("SAVE_STATE"), Edit: addEntry(t, file, os.Getenv("SAVE_CLIENT"), name)}); err != nil {
			fmt.Printf("FAILED %s %v\n", name, err)
			continue
		}
		fmt.Printf("WROTE %s\n", name)
	}
}

// TestSaveConcurrentWriters: 4 processes × 100 saves on one file, in strict
// JSON, JSONC and TOML: every save that reported success left its entry, and none failed.
func TestSaveConcurrentWriters(t *testing.T) {
	writers, rounds := 4, 100
	if testing.Short() {
		rounds = 25
	}
	for _, client := range []string{"claude-code", "vscode", "codex"} { // strict JSON, JSONC, TOML
		t.Run(client, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "config")
			os.WriteFile(file, nil, 0o600)
			var wg sync.WaitGroup
			outs := make([]string, writers)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					cmd := exec.Command(os.Args[0], "-test.run=^TestSaveWriterProcess$", "-test.count=1")
					cmd.Env = append(os.Environ(), "SAVE_FILE="+file, "SAVE_CLIENT="+client, "SAVE_STATE="+filepath.Join(dir, "state"),
						"SAVE_ROUNDS="+strconv.Itoa(rounds), fmt.Sprintf("SAVE_WRITER=w%d", w))
					b, err := cmd.CombinedOutput()
					if err != nil {
						t.Errorf("writer %d: %v\n%s", w, err, b)
					}
					outs[w] = string(b)
				}(w)
			}
			wg.Wait()
			final, _ := os.ReadFile(file)
			wrote, lost := 0, 0
			for _, out := range outs {
				for _, line := range strings.Split(out, "\n") {
					if strings.HasPrefix(line, "FAILED ") {
						t.Errorf("a save failed: %s", line)
					}
					if name, ok := strings.CutPrefix(line, "WROTE "); ok {
						wrote++
						if !hasEntry(string(final), client, name) {
							lost++
						}
					}
				}
			}
			if wrote != writers*rounds || lost != 0 {
				t.Errorf("%d saves reported written of %d, %d of them lost", wrote, writers*rounds, lost)
			}
		})
	}
}

// TestSaveRacingEditor: the client rewrites the file (its own key) between
// Save's read and its rename: both the client's key and the entry remain.
func TestSaveRacingEditor(t *testing.T) {
	for _, client := range []string{"claude-code", "vscode", "codex"} { // strict JSON, JSONC, TOML
		t.Run(client, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "config")
			os.WriteFile(file, nil, 0o600)
			c, _ := clientcfg.LookupClient(client)
			defer func(f func(string)) { afterEdit = f }(afterEdit)
			rounds := 100
			if testing.Short() {
				rounds = 25
			}
			for r := 0; r < rounds; r++ {
				edited := false
				editor := fmt.Sprintf("editor-%d", r)
				afterEdit = func(f string) {
					if edited {
						return
					}
					edited = true
					src, _ := os.ReadFile(f)
					out, err := Merge(f, src, c, editor, &Launch{Command: "uvx", Args: []string{editor}}, true)
					if err != nil {
						t.Fatal(err)
					}
					tmp := f + ".editor"
					os.WriteFile(tmp, out, 0o600)
					os.Rename(tmp, f) // as editors save: a new file renamed over
				}
				entry := fmt.Sprintf("entry-%d", r)
				if _, err := Save(SaveOptions{File: file, StateDir: filepath.Join(dir, "state"), Edit: addEntry(t, file, client, entry)}); err != nil {
					t.Fatalf("round %d: %v", r, err)
				}
				b, _ := os.ReadFile(file)
				if !hasEntry(string(b), client, editor) || !hasEntry(string(b), client, entry) {
					t.Fatalf("round %d: the editor's key or the entry was lost:\n%s", r, b)
				}
			}
		})
	}
}

// TestSaveEditorNeverStops: a file rewritten at every attempt is not
// written, and the error names it.
func TestSaveEditorNeverStops(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(file, []byte("{}\n"), 0o600)
	defer func(f func(string)) { afterEdit = f }(afterEdit)
	n := 0
	afterEdit = func(f string) {
		n++
		os.WriteFile(f, []byte(fmt.Sprintf("{\"n\": %d}\n", n)), 0o600)
	}
	_, err := Save(SaveOptions{File: file, StateDir: t.TempDir(), Edit: addEntry(t, file, "claude-code", "x")})
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("want an error naming the file: %v", err)
	}
	if b, _ := os.ReadFile(file); hasEntry(string(b), "claude-code", "x") {
		t.Errorf("written anyway")
	}
}

// TestSaveKeepsModeOwnerAndLinks: a 0600 file stays 0600 and its owner's;
// a symlink stays a link and its target is written.
func TestSaveKeepsModeOwnerAndLinks(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	os.WriteFile(file, []byte("{\"mine\": 1}\n"), 0o600)
	os.Chmod(file, 0o600)
	root := os.Geteuid() == 0
	if root {
		os.Chown(file, 1234, 2345)
	}
	if _, err := Save(SaveOptions{File: file, StateDir: filepath.Join(dir, "state"), Edit: addEntry(t, file, "claude-code", "a")}); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(file)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o, want 0600", fi.Mode().Perm())
	}
	if st := fi.Sys().(*syscall.Stat_t); root && (st.Uid != 1234 || st.Gid != 2345) {
		t.Errorf("owner %d:%d, want 1234:2345", st.Uid, st.Gid)
	}

	link := filepath.Join(dir, "link.json")
	os.Symlink("config.json", link)
	saved, err := Save(SaveOptions{File: link, StateDir: filepath.Join(dir, "state"), Edit: addEntry(t, link, "claude-code", "b")})
	if err != nil {
		t.Fatal(err)
	}
	if li, err := os.Lstat(link); err != nil || li.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if b, _ := os.ReadFile(file); !hasEntry(string(b), "claude-code", "b") || !strings.Contains(string(b), `"mine"`) {
		t.Errorf("the link's target was not written:\n%s", b)
	}
	if saved.File != file {
		t.Errorf("wrote %s, want %s", saved.File, file)
	}
}

// TestSaveRefusesHardLinkedAndReadOnly: neither is replaced.
func TestSaveRefusesHardLinkedAndReadOnly(t *testing.T) {
	dir := t.TempDir()
	const content = "{\"mine\": 1}\n"
	hard := filepath.Join(dir, "hard.json")
	os.WriteFile(hard, []byte(content), 0o644)
	os.Link(hard, filepath.Join(dir, "other-name.json"))
	_, err := Save(SaveOptions{File: hard, StateDir: dir, Edit: addEntry(t, hard, "claude-code", "a")})
	if err == nil || !strings.Contains(err.Error(), "hard links") || !strings.Contains(err.Error(), hard) {
		t.Errorf("hard link: %v", err)
	}
	ro := filepath.Join(dir, "ro.json")
	os.WriteFile(ro, []byte(content), 0o444)
	os.Chmod(ro, 0o444)
	_, err = Save(SaveOptions{File: ro, StateDir: dir, Edit: addEntry(t, ro, "claude-code", "a")})
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only: %v", err)
	}
	for _, f := range []string{hard, ro} {
		if b, _ := os.ReadFile(f); string(b) != content {
			t.Errorf("%s changed:\n%s", f, b)
		}
	}
}

// TestSaveBackups: every write keeps the bytes it replaced, outside the
// file's folder, 0600, up to Backups generations.
func TestSaveBackups(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	file := filepath.Join(dir, "config.json")
	const first = "{\"mine\": \"token\"}\n"
	os.WriteFile(file, []byte(first), 0o600)
	var backups []string
	for i := 0; i < Backups+3; i++ {
		saved, err := Save(SaveOptions{File: file, StateDir: state, Edit: addEntry(t, file, "claude-code", fmt.Sprintf("s%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(saved.Backup, BackupDir(state, file)) {
			t.Fatalf("backup %q not under %s", saved.Backup, BackupDir(state, file))
		}
		backups = append(backups, saved.Backup)
	}
	last := len(backups) - 1
	if b, _ := os.ReadFile(backups[last]); hasEntry(string(b), "claude-code", fmt.Sprint("s", last)) || !hasEntry(string(b), "claude-code", fmt.Sprint("s", last-1)) {
		t.Errorf("the last backup is not what the last write replaced:\n%s", b)
	}
	if fi, err := os.Stat(backups[len(backups)-1]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup mode: %v %v", fi, err)
	}
	gens, _ := Generations(state, file)
	if len(gens) != Backups || gens[len(gens)-1] != backups[len(backups)-1] {
		t.Errorf("%d generations kept, want %d", len(gens), Backups)
	}
	if m, _ := filepath.Glob(file + "*bak*"); len(m) > 0 {
		t.Errorf("a backup beside the file: %v", m)
	}
}

// TestRestore: --restore puts back what the last write replaced, and a
// second restore undoes the first.
func TestRestore(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	file := filepath.Join(dir, "config.json")
	const orig = "{\"mine\": \"token\"}\n"
	os.WriteFile(file, []byte(orig), 0o600)
	if _, err := Save(SaveOptions{File: file, StateDir: state, Edit: addEntry(t, file, "claude-code", "a")}); err != nil {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(file)
	saved, from, err := Restore(file, nil, state, nil)
	if err != nil || !saved.Changed || from == "" {
		t.Fatalf("restore: %v %v %q", saved, err, from)
	}
	if b, _ := os.ReadFile(file); string(b) != orig {
		t.Errorf("restored:\n%s\nwant:\n%s", b, orig)
	}
	if _, _, err := Restore(file, nil, state, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != string(written) {
		t.Errorf("a second restore did not undo the first:\n%s", b)
	}
	if _, _, err := Restore(filepath.Join(dir, "never-written.json"), nil, state, nil); err == nil || !strings.Contains(err.Error(), "no backup") {
		t.Errorf("restore with no backup: %v", err)
	}
}
