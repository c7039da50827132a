package entry

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
)

// TestWriteFaultMatrix writes one entry, as `client --write` does (Save
// with Merge), into a file of each target in each of the shapes and states
// a user's machine has, and asserts what the file holds afterwards: written
// as the client reads it with everything else kept, or refused with the
// file's bytes, mode and links exactly as they were.
func TestWriteFaultMatrix(t *testing.T) {
	type fault struct {
		name    string
		src     func(c *clientcfg.Client) string
		prepare func(t *testing.T, file string) // after the file is written
		refuse  string                          // a word of the error; "": the write succeeds
		check   func(t *testing.T, file string, before []byte)
	}
	typical := func(c *clientcfg.Client) string {
		if c.Key == "" {
			return "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"uvx\"\nargs = [\"x\"]\n"
		}
		return "{\n  \"theme\": \"dark\",\n  \"" + c.Key + "\": {\n    \"other\": {\"command\": \"uvx\", \"args\": [\"x\"]}\n  }\n}\n"
	}
	faults := []fault{
		{name: "mode-0600", src: typical, prepare: func(t *testing.T, f string) { os.Chmod(f, 0o600) },
			check: func(t *testing.T, f string, _ []byte) { wantMode(t, f, 0o600) }},
		{name: "mode-0640", src: typical, prepare: func(t *testing.T, f string) { os.Chmod(f, 0o640) },
			check: func(t *testing.T, f string, _ []byte) { wantMode(t, f, 0o640) }},
		{name: "owner", src: typical, prepare: func(t *testing.T, f string) {
			if os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root (CI runs as root)")
			}
			if err := os.Chown(f, 4242, 4343); err != nil {
				t.Fatal(err)
			}
		}, check: func(t *testing.T, f string, _ []byte) {
			st := stat(t, f)
			if st.Uid != 4242 || st.Gid != 4343 {
				t.Errorf("owner %d:%d, want 4242:4343", st.Uid, st.Gid)
			}
		}},
		{name: "symlink", src: typical, prepare: func(t *testing.T, f string) {
			real := filepath.Join(filepath.Dir(f), "dotfiles-real")
			if err := os.Rename(f, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("dotfiles-real", f); err != nil {
				t.Fatal(err)
			}
		}, check: func(t *testing.T, f string, before []byte) {
			if fi, err := os.Lstat(f); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the symlink was replaced: %v", err)
			}
			if b, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "dotfiles-real")); bytes.Equal(b, before) {
				t.Error("the link's target was not written")
			}
		}},
		{name: "hard-link", src: typical, prepare: func(t *testing.T, f string) {
			if err := os.Link(f, f+".other-name"); err != nil {
				t.Fatal(err)
			}
		}, refuse: "hard links", check: func(t *testing.T, f string, before []byte) {
			wantBytes(t, f+".other-name", before)
		}},
		{name: "read-only", src: typical, prepare: func(t *testing.T, f string) { os.Chmod(f, 0o444) }, refuse: "read-only",
			check: func(t *testing.T, f string, _ []byte) { wantMode(t, f, 0o444) }},
		{name: "unparseable", src: func(c *clientcfg.Client) string {
			if c.Key == "" {
				return "[mcp_servers.other\ncommand = \"uvx\"\n"
			}
			return "{\"" + c.Key + "\": {\"other\": {\"command\": \"uvx\"}\n"
		}, refuse: "left untouched"},
		{name: "duplicate-key", src: func(c *clientcfg.Client) string {
			if c.Key == "" {
				return "[mcp_servers.other]\ncommand = \"uvx\"\ncommand = \"npx\"\n"
			}
			return "{\"" + c.Key + "\": {}, \"" + c.Key + "\": {}}\n"
		}, refuse: "twice"},
		{name: "wrong-shape", src: func(c *clientcfg.Client) string {
			if c.Key == "" {
				return "mcp_servers = [1]\n"
			}
			return "{\"" + c.Key + "\": [1]}\n"
		}, refuse: "not"},
		{name: "nul", src: func(c *clientcfg.Client) string {
			if c.Key == "" {
				return "model = \"o3\x00\"\n"
			}
			return "{\"theme\": \"dark\x00\"}\n"
		}, refuse: "left untouched"},
		{name: "crlf", src: func(c *clientcfg.Client) string { return strings.ReplaceAll(typical(c), "\n", "\r\n") },
			check: func(t *testing.T, f string, _ []byte) {
				b, _ := os.ReadFile(f)
				if bytes.Count(b, []byte("\n")) != bytes.Count(b, []byte("\r\n")) {
					t.Errorf("a CRLF file got bare LF lines:\n%q", b)
				}
			}},
		{name: "bom", src: func(c *clientcfg.Client) string { return "\ufeff" + typical(c) },
			check: func(t *testing.T, f string, _ []byte) {
				if b, _ := os.ReadFile(f); !bytes.HasPrefix(b, bom) || bytes.Count(b, bom) != 1 {
					t.Errorf("the byte-order mark was not kept once:\n%q", b)
				}
			}},
		{name: "comment", src: func(c *clientcfg.Client) string {
			if c.Key == "" {
				return "# mine\n" + typical(c)
			}
			return "{\n  // mine\n  \"" + c.Key + "\": {}\n}\n"
		}, check: func(t *testing.T, f string, _ []byte) {
			if b, _ := os.ReadFile(f); !bytes.Contains(b, []byte("mine")) {
				t.Errorf("the comment was lost:\n%s", b)
			}
		}},
	}
	for i := range clientcfg.Clients {
		c := &clientcfg.Clients[i]
		for _, ft := range faults {
			t.Run(c.Name+"/"+ft.name, func(t *testing.T) {
				dir := t.TempDir()
				file := filepath.Join(dir, "config")
				src := []byte(ft.src(c))
				if err := os.WriteFile(file, src, 0o644); err != nil {
					t.Fatal(err)
				}
				if ft.prepare != nil {
					ft.prepare(t, file)
				}
				refuse := ft.refuse
				if ft.name == "comment" && c.Key != "" && !c.JSONC {
					refuse = "reads strict JSON"
				}
				if ft.name == "duplicate-key" && c.Key == "" {
					refuse = "already defined"
				}
				wasMode := stat(t, file).Mode
				_, err := Save(SaveOptions{File: file, StateDir: filepath.Join(dir, "state"), Edit: func(b []byte) ([]byte, error) {
					return Merge(file, b, c, "alpha", managedLaunch("alpha"), false)
				}})
				if refuse != "" {
					if err == nil || !strings.Contains(err.Error(), refuse) {
						t.Fatalf("err = %v, want a refusal saying %q", err, refuse)
					}
					wantBytes(t, file, src)
					if now := stat(t, file).Mode; now != wasMode {
						t.Errorf("mode %o, was %o", now, wasMode)
					}
					if _, err := os.Stat(filepath.Join(dir, "state")); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("a refused write left a backup: %v", err)
					}
				} else {
					if err != nil {
						t.Fatal(err)
					}
					b, _ := os.ReadFile(file)
					parseAsClient(t, c, ft.name, bytes.TrimPrefix(b, bom), 1)
					if !hasEntry(string(b), c.Name, "alpha") {
						t.Errorf("no entry written:\n%s", b)
					}
					if strings.Contains(string(src), "other") && !strings.Contains(string(b), "uvx") {
						t.Errorf("the user's entry was lost:\n%s", b)
					}
				}
				if ft.check != nil {
					ft.check(t, file, src)
				}
			})
		}
	}
}

func stat(t *testing.T, file string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}

func wantMode(t *testing.T, file string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != mode {
		t.Errorf("mode %04o, want %04o", fi.Mode().Perm(), mode)
	}
}

func wantBytes(t *testing.T, file string, want []byte) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s changed:\n%q\nwant\n%q", filepath.Base(file), b, want)
	}
}
