package importer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/mcpolicy/mcpolicy/clientcfg"
)

// Each testdata/NAME.txtar is one case: a home folder (files under home/,
// "$HOME" standing for where it lies; a file under a bin/ folder is
// executable, NAME.symlink is a link to what it holds), laid out as the
// clients, npx, uv and pipx lay them out; the archive's comment names the
// client configs to import ("client: home/.claude.json"); want is what
// import makes of every entry: the policy, or why none, its notes and the
// names of the secrets it moved to the env file. MCPOLICY_UPDATE=1
// rewrites want; review the diff.

// importCase is one archive laid out in a temporary home.
type importCase struct {
	arc     *txtar.Archive
	home    string
	clients []string
}

func loadCase(t *testing.T, file string) *importCase {
	t.Helper()
	arc, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c := &importCase{arc: arc, home: filepath.Join(t.TempDir(), "home")}
	for _, f := range arc.Files {
		rel, ok := strings.CutPrefix(f.Name, "home/")
		if !ok {
			continue
		}
		p := filepath.Join(c.home, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := strings.ReplaceAll(string(f.Data), "$HOME", c.home)
		if link, ok := strings.CutSuffix(p, ".symlink"); ok {
			if err := os.Symlink(strings.TrimSpace(data), link); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := os.FileMode(0o644)
		if filepath.Base(filepath.Dir(p)) == "bin" {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range strings.Split(string(arc.Comment), "\n") {
		if f, ok := strings.CutPrefix(line, "client: "); ok {
			c.clients = append(c.clients, filepath.Join(c.home, filepath.FromSlash(strings.TrimPrefix(f, "home/"))))
		}
	}
	if len(c.clients) == 0 {
		t.Fatalf("%s names no client config (a line \"client: home/...\")", file)
	}
	return c
}

// run imports every client config of the case.
func (c *importCase) run(t *testing.T) ([]*clientcfg.Launch, []Server) {
	t.Helper()
	o := Options{Home: c.home, Path: filepath.Join(c.home, "bin") + ":" + filepath.Join(c.home, "go", "bin") + ":/usr/bin:/bin"}
	var ls []*clientcfg.Launch
	for _, f := range c.clients {
		got, err := clientcfg.ReadLaunches(f, clientcfg.Options{Home: c.home})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, got...)
	}
	return ls, Import(ls, o)
}

// report is what the golden holds for the servers: each policy, or why
// none, with its notes and the secrets' names, the home folder as $HOME.
func (c *importCase) report(servers []Server) string {
	var b strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&b, "== %s (%s)\n", s.Entry, filepath.Base(s.File))
		if s.Policy == nil {
			fmt.Fprintf(&b, "skipped: %s\n", s.Skipped)
		} else {
			fmt.Fprintf(&b, "grants: %d\n%s", s.Policy.Grants(), s.Policy.Render())
		}
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "note: %s\n", n)
		}
		for _, x := range s.Secrets {
			fmt.Fprintf(&b, "secret to the env file: %s\n", x.Name)
		}
		if s.LocalScope != "" {
			fmt.Fprintf(&b, "local scope: %s\n", s.LocalScope)
		}
	}
	return strings.ReplaceAll(b.String(), c.home, "$HOME")
}

func cases(t *testing.T) []string {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.txtar: %v", err)
	}
	return files
}

// TestImport: every case's entries give the reviewed policies.
func TestImport(t *testing.T) {
	for _, file := range cases(t) {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			c := loadCase(t, file)
			_, servers := c.run(t)
			got := c.report(servers)
			var want *txtar.File
			for i := range c.arc.Files {
				if c.arc.Files[i].Name == "want" {
					want = &c.arc.Files[i]
				}
			}
			if os.Getenv("MCPOLICY_UPDATE") == "1" {
				if want == nil {
					c.arc.Files = append(c.arc.Files, txtar.File{Name: "want"})
					want = &c.arc.Files[len(c.arc.Files)-1]
				}
				want.Data = []byte(got)
				if err := os.WriteFile(file, txtar.Format(c.arc), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want == nil {
				t.Fatalf("no want file (MCPOLICY_UPDATE=1 writes it)")
			}
			if got != string(want.Data) {
				t.Errorf("import differs from want (MCPOLICY_UPDATE=1 rewrites it):\n%s", lineDiff(string(want.Data), got))
			}
		})
	}
}

// TestSecretsNeverInPolicies: no value an entry held as a secret (its env
// object's, an env wrapper's, a docker -e's) is in any policy import
// writes, nor in its notes; each such name is in the policy's env and
// its value among the secrets for the env file.
func TestSecretsNeverInPolicies(t *testing.T) {
	checked := 0
	for _, file := range cases(t) {
		c := loadCase(t, file)
		ls, servers := c.run(t)
		var all strings.Builder
		for _, s := range servers {
			if s.Policy != nil {
				all.Write(s.Policy.Render())
			}
			all.WriteString(strings.Join(s.Notes, "\n") + s.Skipped)
		}
		for i, l := range ls {
			for _, e := range l.Env {
				if !e.Secret {
					continue
				}
				checked++
				if strings.Contains(all.String(), e.Value) {
					t.Errorf("%s: the secret value of %s is in what import wrote", file, e.Name)
				}
				if s := servers[i]; s.Policy != nil && !hasSecret(s.Secrets, e.Name, e.Value) {
					t.Errorf("%s: %s: the secret %s is not among those for the env file", file, s.Entry, e.Name)
				}
			}
			if s := servers[i]; s.Policy != nil {
				for _, x := range s.Secrets {
					checked++
					if strings.Contains(all.String(), x.Value) {
						t.Errorf("%s: %s: the secret value of %s is in what import wrote", file, s.Entry, x.Name)
					}
				}
			}
		}
	}
	if checked < 3 {
		t.Fatalf("only %d secrets in the cases: the test checks nothing", checked)
	}
}

func hasSecret(ss []Secret, name, value string) bool {
	for _, s := range ss {
		if s.Name == name && s.Value == value {
			return true
		}
	}
	return false
}

// lineDiff marks the lines of want and got that differ (for a failure).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b bytes.Buffer
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d:\n- %s\n+ %s\n", i+1, a, c)
		}
	}
	return b.String()
}
