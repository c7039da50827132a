package lint_test

// The corpus: realistic MCP client configs written for the tests (issue
// 16), each linted by the CLI itself (cli.Run, the path `mcpolicy lint`
// takes) and compared with what a reviewer expects.
//
// Each testdata/corpus/NAME.txtar is one case. Its comment says what the
// case is, and holds header lines:
//
//	class: N [N...]   the failure classes of issue 16 it covers (1-7)
//	gap: N [N...]     the gaps of issue 35 it covers (1-8: severity, files
//	                  lint cannot use, formats, wrappers, arguments,
//	                  secrets, client variables, false positives)
//	client: NAME      the client whose shape the config has
//
// Its files: args (the arguments after `mcpolicy`, one per line), the
// inputs (written into a fresh folder, the working directory; files under
// home/ land in $HOME, another fresh folder; a file whose content is
// "-> TARGET" is a symlink), and want/exit, want/stdout, want/stderr, with
// the work folder written $WORK and the home $HOME.
//
// After a deliberate change, rewrite the want/ sections and review every
// finding in the diff as a reviewer would:
//
//	MCPOLICY_UPDATE=1 go test ./compiler/lint/ -run Corpus

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/cmd/mcpolicy/cli"
	"github.com/rogpeppe/go-internal/diff"
	"github.com/rogpeppe/go-internal/txtar"
)

type corpusCase struct {
	name    string
	classes []int
	gaps    []int
	clients []string
	ar      *txtar.Archive
}

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var cs []corpusCase
	for _, f := range files {
		abs, err := filepath.Abs(f) // the cases chdir
		if err != nil {
			t.Fatal(err)
		}
		ar, err := txtar.ParseFile(abs)
		if err != nil {
			t.Fatal(err)
		}
		c := corpusCase{name: abs, ar: ar}
		for _, l := range strings.Split(string(ar.Comment), "\n") {
			if v, ok := strings.CutPrefix(l, "class:"); ok {
				for _, n := range strings.Fields(v) {
					i, err := strconv.Atoi(n)
					if err != nil || i < 1 || i > 7 {
						t.Errorf("%s: class %q is not 1-7", f, n)
					}
					c.classes = append(c.classes, i)
				}
			}
			if v, ok := strings.CutPrefix(l, "gap:"); ok {
				for _, n := range strings.Fields(v) {
					i, err := strconv.Atoi(n)
					if err != nil || i < 1 || i > 8 {
						t.Errorf("%s: gap %q is not 1-8", f, n)
					}
					c.gaps = append(c.gaps, i)
				}
			}
			if v, ok := strings.CutPrefix(l, "client:"); ok {
				c.clients = append(c.clients, strings.Fields(v)...)
			}
		}
		cs = append(cs, c)
	}
	return cs
}

func TestCorpus(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) == 0 {
		t.Fatal("no testdata/corpus/*.txtar")
	}
	cwd, _ := os.Getwd()
	realHome, _ := os.UserHomeDir()
	for _, c := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(c.name), ".txtar"), func(t *testing.T) {
			runCorpusCase(t, c, cwd, realHome)
		})
	}
}

func runCorpusCase(t *testing.T, c corpusCase, cwd, realHome string) {
	base := t.TempDir()
	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	var args []string
	var inputs []txtar.File
	want := map[string][]byte{}
	for _, f := range c.ar.Files {
		switch {
		case f.Name == "args":
			args = strings.Fields(strings.ReplaceAll(string(f.Data), "\n", " "))
			inputs = append(inputs, f)
			continue
		case strings.HasPrefix(f.Name, "want/"):
			want[f.Name] = f.Data
			continue
		case !filepath.IsLocal(f.Name):
			t.Fatalf("input %q is not a local path", f.Name)
		}
		inputs = append(inputs, f)
		p := filepath.Join(work, filepath.FromSlash(f.Name))
		if rest, ok := strings.CutPrefix(f.Name, "home/"); ok {
			p = filepath.Join(home, filepath.FromSlash(rest))
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(string(f.Data), "-> "); ok {
			if err := os.Symlink(strings.TrimSpace(target), p); err != nil {
				t.Skip("no symlinks here")
			}
			continue
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(args) == 0 {
		t.Fatal("no args section")
	}
	os.MkdirAll(work, 0o755)
	os.MkdirAll(home, 0o755)
	t.Chdir(work)
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)

	var out, errs bytes.Buffer
	code := cli.Run(args, &out, &errs)
	norm := func(s string) []byte {
		for _, dir := range []string{base} {
			real, _ := filepath.EvalSymlinks(dir)
			for _, d := range []string{dir, real} {
				s = strings.ReplaceAll(s, filepath.Join(d, "work"), "$WORK")
				s = strings.ReplaceAll(s, filepath.Join(d, "home"), "$HOME")
			}
		}
		return []byte(s)
	}
	got := map[string][]byte{
		"want/exit":   fmt.Appendf(nil, "%d\n", code),
		"want/stdout": norm(out.String()),
		"want/stderr": norm(errs.String()),
	}
	for name, b := range got {
		for _, p := range []string{cwd, realHome} {
			if p != "" && p != "/" && bytes.Contains(b, []byte(p)) {
				t.Errorf("%s names the test's own folder or home %s:\n%s", name, p, b)
			}
		}
	}
	if os.Getenv("MCPOLICY_UPDATE") == "1" {
		for _, name := range []string{"want/exit", "want/stdout", "want/stderr"} {
			inputs = append(inputs, txtar.File{Name: name, Data: got[name]})
		}
		c.ar.Files = inputs
		if err := os.WriteFile(c.name, txtar.Format(c.ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, name := range []string{"want/exit", "want/stdout", "want/stderr"} {
		w, ok := want[name]
		if !ok {
			t.Errorf("%s missing (MCPOLICY_UPDATE=1 to write it, then review)", name)
			continue
		}
		if !bytes.Equal(w, got[name]) {
			t.Errorf("%s differs (MCPOLICY_UPDATE=1 to rewrite, then review):\n%s", name, diff.Diff("want", w, "got", got[name]))
		}
	}
}

// The rules issue 16 found missing (class 6), the grouped hardening
// finding (class 7), and the rules added since (MOUNT_SHARED_TMP): each
// must be found, as expected, in two cases.
var corpusRules = []string{"BIND_RW", "ENV_NOT_PASSED", "STDIO_ATTACH", "JOINED_ARG", "ENV_VALUE_AS_IMAGE",
	"PULL_ALWAYS", "IMAGE_UNPINNED", "AUTO_APPROVE", "DANGEROUS_MODE", "CONTAINER_UNHARDENED", "MOUNT_SHARED_TMP"}

// TestCorpusCoverage: at least 80 cases, every class of issue 16 in at
// least two, every gap of issue 35 in at least three, every client's shape
// in one, and each rule class 6 and 7 ask for expected in at least two.
func TestCorpusCoverage(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < 80 {
		t.Errorf("%d cases, want at least 80", len(cases))
	}
	classes, gaps := map[int]int{}, map[int]int{}
	clients := map[string]int{}
	rules := map[string]int{}
	finding := regexp.MustCompile(`(?m)^\S+:\d+:\d+: ([A-Z_]+) `)
	for _, c := range cases {
		if len(c.classes)+len(c.gaps) == 0 || len(c.clients) == 0 {
			t.Errorf("%s: no class: or gap: line, or no client: line", filepath.Base(c.name))
		}
		for _, n := range c.classes {
			classes[n]++
		}
		for _, n := range c.gaps {
			gaps[n]++
		}
		for _, n := range c.clients {
			clients[n]++
		}
		seen := map[string]bool{}
		for _, f := range c.ar.Files {
			if f.Name == "want/stdout" {
				for _, m := range finding.FindAllStringSubmatch(string(f.Data), -1) {
					seen[m[1]] = true
				}
			}
		}
		for r := range seen {
			rules[r]++
		}
	}
	for n := 1; n <= 7; n++ {
		if classes[n] < 2 {
			t.Errorf("class %d: %d cases, want at least 2", n, classes[n])
		}
	}
	for n := 1; n <= 8; n++ {
		if gaps[n] < 3 {
			t.Errorf("gap %d of issue 35: %d cases, want at least 3", n, gaps[n])
		}
	}
	for _, n := range []string{"claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed", "cline", "codex", "opencode", "goose"} {
		if clients[n] == 0 {
			t.Errorf("no case in %s's shape", n)
		}
	}
	for _, r := range corpusRules {
		if rules[r] < 2 {
			t.Errorf("%s is expected in %d cases, want at least 2", r, rules[r])
		}
	}
	var summary []string
	for n, k := range classes {
		summary = append(summary, fmt.Sprintf("class %d: %d", n, k))
	}
	for n, k := range gaps {
		summary = append(summary, fmt.Sprintf("gap %d: %d", n, k))
	}
	sort.Strings(summary)
	t.Logf("%d cases; %s", len(cases), strings.Join(summary, ", "))
}
