// Package docs_test keeps README.md and docs/*.md from drifting away from
// what mcpolicy does: the commands they show are run (or, where they cannot
// run here, parsed by mcpolicy itself: commands_test.go), the policies they
// show are compiled, the proxy answers egress.md quotes are the proxy's
// (egress_test.go), and the figures they quote must name their source
// (figures_test.go).
//
// # Checked command blocks
//
// A fenced block whose info string is "console" is a shell session, and
// TestDocCommands runs it:
//
//	```console
//	$ mcpolicy diff --against origin/main
//	mcpolicy.cue:4:11: code-index WIDENED MOUNT_RW: mount /workspace: ro -> rw (was origin/main:mcpolicy.cue:4:11)
//	$ echo $?
//	6
//	```
//
// The rules of a session:
//
//   - A line starting with "$ " is a command; the lines after it, up to the
//     next "$ " line, are what it prints, stdout and stderr together as a
//     terminal shows them. A command line ending in "\" continues on the
//     next line.
//   - "$ echo $?" right after a command states that command's exit status
//     (its one output line). A command without it must exit 0.
//   - Each command runs in its own "sh -c", with empty stdin; only "$ cd DIR"
//     carries over to the block's later commands (it is testscript's cd).
//   - A line "..." alone in the output stands for any number of lines
//     (zero included): the doc shows the head of a long output and says so.
//
// Every block runs in a fresh testscript work directory ($WORK) that holds
// a copy of the repository's examples/ folder, with HOME=$WORK/home (empty)
// and a fixed git identity. What else a block needs is named by an HTML
// comment on the line right above the fence, invisible once rendered:
//
//	<!-- doctest: fixture=review-base,review-widened -->
//
// Its keys:
//
//   - fixture=A,B: docs/testdata/A.txtar, then B.txtar. Each is a testscript
//     archive: its files are written into $WORK, and its comment is
//     testscript commands run before the block (git init, a sed on an
//     example, a cd into the project...).
//   - file=PATH (on a block that is not console): the block's content is
//     written to $WORK/PATH for every checked block after it in the same
//     markdown file — the policy a reader sees is the one the commands use.
//   - excerpt=PATH (on a block that is not console): after the fixtures
//     ran, the block's lines must appear, in order and contiguous, in
//     $WORK/PATH (normalised as below): a profile or artefact shown in part.
//   - json=TYPE (on a json block): every line decodes into TYPE (a key of
//     jsonTypes) with unknown fields refused, and encodes back to the very
//     same bytes: a sample log or report cannot name a field that is not
//     there, miss one, or order them differently.
//
// The generated testscripts (one per block, named FILE-LLINE) can be kept
// for reading with MCPOLICY_DOCTEST_KEEP=DIR.
//
// # Normalisation
//
// Output is compared line by line, trailing blanks ignored, after these
// replacements, applied to both the doc and the output unless said:
//
//   - output only: $WORK/home (the script's HOME) is shown as /home/you, and
//     $WORK as /home/you/project;
//   - any run of exactly 64 lowercase hex digits (a SHA-256, with or without
//     "sha256:") becomes <sha256>, so the doc may show a real digest;
//   - a duration (a number with ns, µs, us, ms or s glued to it, as Go
//     prints one) becomes <duration>;
//   - "localhost:" or "127.0.0.1:" followed by five digits (the egress proxy
//     port the plan derives from the server's name) becomes ...:PORT, the
//     spelling the docs use.
//
// # Blocks that are not commands
//
// TestDocBlocks requires an info string on every fence, and "console" on
// every block that holds a "$ " prompt line: a session that is not checked
// cannot be written by mistake. Blocks of sh (commands to type, no output
// shown: installs, make test, macOS-only checks), text (synopses) and
// scheme are not run; TestShownCommandsParse has mcpolicy parse each
// mcpolicy command line of an sh block or of a yaml `run:` step.
//
// TestPolicySnippets compiles every cue block outside the generated
// docs/rules.md (whose examples compiler/lint's tests lint) that carries no
// file= marker (those are compiled by the blocks that use them): a whole
// policy gets `version: "v1"` when it has none, and an indented fragment of
// a server is put inside `servers: s: {image: "x:1", ...}`; a placeholder
// label written "<name>" is read as "name"; each relative mount source it
// names is created, empty, in the project it is compiled in (a read-write
// source must exist). Each must pass `mcpolicy vet`.
//
// TestPreCommitSample checks that a .pre-commit-config.yaml shown for this
// repository names only hooks .pre-commit-hooks.yaml defines.
package docs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/cmd/mcpolicy/cli"
	"github.com/mcpolicy/mcpolicy/evidence/prove"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/rogpeppe/go-internal/diff"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
)

// root is the repository, from the package's folder (docs/).
const root = ".."

// jsonTypes are the types a json=TYPE marker may name.
var jsonTypes = map[string]reflect.Type{
	"egress.Decision": reflect.TypeOf(egress.Decision{}),
	"egress.Denial":   reflect.TypeOf(egress.Denial{}),
	"prove.Row":       reflect.TypeOf(prove.Row{}),
}

func TestMain(m *testing.M) {
	// The scripts run mcpolicy as a program: this test binary, under that name.
	testscript.Main(m, map[string]func(){
		"mcpolicy": func() { os.Exit(cli.Main()) },
	})
}

// docFiles are the markdown files checked, relative to the repository.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range files {
		out = append(out, filepath.ToSlash(strings.TrimPrefix(f, root+string(filepath.Separator))))
	}
	if len(out) < 2 {
		t.Fatal("no docs/*.md")
	}
	return out
}

// block is one fenced code block of a markdown file.
type block struct {
	file   string            // relative to the repository: docs/review.md
	line   int               // the opening fence's line, 1-based
	lang   string            // the info string's first word
	marker map[string]string // from <!-- doctest: k=v ... --> above the fence; nil if none
	body   []string          // the lines between the fences
}

func (b block) loc() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var (
	fenceRe  = regexp.MustCompile("^(```+|~~~+)\\s*([^`\\s]*)")
	markerRe = regexp.MustCompile(`^<!--\s*doctest:(.*?)-->\s*$`)
)

// markerKeys are the keys a doctest marker may hold.
var markerKeys = map[string]bool{"fixture": true, "file": true, "excerpt": true, "json": true}

// parseBlocks returns the fenced blocks of a markdown file, and what is
// wrong with its markers.
func parseBlocks(file, src string) ([]block, []error) {
	var (
		blocks  []block
		errs    []error
		lines   = strings.Split(src, "\n")
		pending map[string]string
		pendAt  int
	)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := markerRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			pending, pendAt = map[string]string{}, i+1
			for _, kv := range strings.Fields(m[1]) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || !markerKeys[k] || v == "" {
					errs = append(errs, fmt.Errorf("%s:%d: doctest marker: %q is not one of fixture=, file=, excerpt=, json=", file, i+1, kv))
					continue
				}
				pending[k] = v
			}
			if i+1 >= len(lines) || !fenceRe.MatchString(lines[i+1]) {
				errs = append(errs, fmt.Errorf("%s:%d: a doctest marker must be the line right above a fence", file, i+1))
				pending = nil
			}
			continue
		}
		m := fenceRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		b := block{file: file, line: i + 1, lang: m[2]}
		if pending != nil && pendAt == i {
			b.marker = pending
		}
		pending = nil
		fence := m[1]
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), fence); i++ {
			b.body = append(b.body, lines[i])
		}
		if i >= len(lines) {
			errs = append(errs, fmt.Errorf("%s: unclosed fence", b.loc()))
		}
		blocks = append(blocks, b)
	}
	return blocks, errs
}

// readBlocks parses every checked markdown file.
func readBlocks(t *testing.T) []block {
	t.Helper()
	var all []block
	for _, f := range docFiles(t) {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		blocks, errs := parseBlocks(f, string(src))
		for _, err := range errs {
			t.Error(err)
		}
		all = append(all, blocks...)
	}
	return all
}

// TestDocBlocks checks the conventions every fenced block follows (see the
// package comment), without running anything.
func TestDocBlocks(t *testing.T) {
	checked := 0
	for _, b := range readBlocks(t) {
		if b.lang == "" {
			t.Errorf("%s: a fence without an info string: say what it holds (console, sh, cue, json, yaml, text...)", b.loc())
		}
		prompt := false
		for _, l := range b.body {
			prompt = prompt || strings.HasPrefix(l, "$ ")
		}
		if prompt && b.lang != "console" {
			t.Errorf("%s: a %q block with a \"$ \" prompt: a command shown with its output is a console block, which the test runs", b.loc(), b.lang)
		}
		if b.lang == "console" {
			checked++
			if _, err := parseSession(b); err != nil {
				t.Error(err)
			}
			for _, k := range []string{"file", "excerpt", "json"} {
				if b.marker[k] != "" {
					t.Errorf("%s: %s= is for blocks that are not console", b.loc(), k)
				}
			}
		}
		if b.marker["json"] != "" {
			if b.lang != "json" {
				t.Errorf("%s: json= on a %q block", b.loc(), b.lang)
			}
			if jsonTypes[b.marker["json"]] == nil {
				t.Errorf("%s: json=%s: not a known type (jsonTypes)", b.loc(), b.marker["json"])
			}
		}
		if b.marker["excerpt"] != "" && b.marker["fixture"] == "" {
			t.Errorf("%s: excerpt= needs a fixture= that makes the file", b.loc())
		}
		for _, name := range fixtureNames(b) {
			if _, err := os.Stat(fixturePath(name)); err != nil {
				t.Errorf("%s: fixture %q: %v", b.loc(), name, err)
			}
		}
	}
	if checked == 0 {
		t.Error("no console block in README.md or docs/*.md")
	}
}

// step is one command of a console block.
type step struct {
	line int    // the "$ " line in the markdown
	cmd  string // the command, continuation lines joined by newlines
	out  []string
	exit int
}

// parseSession splits a console block into its commands.
func parseSession(b block) ([]step, error) {
	var steps []step
	for i := 0; i < len(b.body); i++ {
		l := b.body[i]
		at := fmt.Sprintf("%s:%d", b.file, b.line+1+i)
		if !strings.HasPrefix(l, "$ ") {
			if len(steps) == 0 {
				return nil, fmt.Errorf("%s: a console block starts with a \"$ \" command line", at)
			}
			steps[len(steps)-1].out = append(steps[len(steps)-1].out, l)
			continue
		}
		s := step{line: b.line + 1 + i, cmd: strings.TrimPrefix(l, "$ ")}
		for strings.HasSuffix(s.cmd, `\`) && i+1 < len(b.body) {
			i++
			s.cmd += "\n" + b.body[i]
		}
		if strings.TrimSpace(s.cmd) == "echo $?" {
			if len(steps) == 0 {
				return nil, fmt.Errorf("%s: echo $? with no command before it", at)
			}
			if i+1 >= len(b.body) {
				return nil, fmt.Errorf("%s: echo $? shows no status", at)
			}
			i++
			code, err := strconv.Atoi(strings.TrimSpace(b.body[i]))
			if err != nil {
				return nil, fmt.Errorf("%s: echo $? must be followed by the status alone: %v", at, err)
			}
			steps[len(steps)-1].exit = code
			continue
		}
		steps = append(steps, s)
	}
	for _, s := range steps {
		if f := strings.Fields(s.cmd); len(f) > 0 && f[0] == "cd" {
			if len(f) != 2 || len(s.out) > 0 || s.exit != 0 {
				return nil, fmt.Errorf("%s:%d: cd takes one folder and prints nothing", b.file, s.line)
			}
		}
	}
	return steps, nil
}

func fixtureNames(b block) []string {
	if b.marker["fixture"] == "" {
		return nil
	}
	return strings.Split(b.marker["fixture"], ",")
}

func fixturePath(name string) string { return filepath.Join("testdata", name+".txtar") }

// script turns a checked block into a testscript archive: the fixtures'
// commands and files, the file= blocks before it, then one doc (or
// excerpt) command per step with its expected output as a want/ file.
func script(b block, files []txtar.File) (*txtar.Archive, error) {
	ar := &txtar.Archive{}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# %s, generated by docs_test.go: fixtures %q\n", b.loc(), b.marker["fixture"])
	for _, name := range fixtureNames(b) {
		fx, err := txtar.ParseFile(fixturePath(name))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.loc(), err)
		}
		fmt.Fprintf(&sb, "\n# fixture %s\n%s", name, fx.Comment)
		for _, f := range fx.Files {
			if strings.HasPrefix(f.Name, ".doctest/") {
				return nil, fmt.Errorf("%s: fixture %s: .doctest/ is the generator's", b.loc(), name)
			}
		}
		ar.Files = append(ar.Files, fx.Files...)
	}
	ar.Files = append(ar.Files, files...)
	sb.WriteString("\n# the block\n")
	if b.lang != "console" {
		ar.Files = append(ar.Files, txtar.File{Name: ".doctest/want/excerpt", Data: []byte(strings.Join(b.body, "\n") + "\n")})
		fmt.Fprintf(&sb, "excerpt %s %s $WORK/.doctest/want/excerpt\n", b.loc(), quote(b.marker["excerpt"]))
		ar.Comment = []byte(sb.String())
		return ar, nil
	}
	steps, err := parseSession(b)
	if err != nil {
		return nil, err
	}
	for i, s := range steps {
		if f := strings.Fields(s.cmd); f[0] == "cd" {
			fmt.Fprintf(&sb, "cd %s\n", quote(f[1]))
			continue
		}
		cmdFile, wantFile := fmt.Sprintf(".doctest/cmd/%d", i), fmt.Sprintf(".doctest/want/%d", i)
		want := strings.Join(s.out, "\n")
		if want != "" {
			want += "\n"
		}
		ar.Files = append(ar.Files,
			txtar.File{Name: cmdFile, Data: []byte(s.cmd + "\n")},
			txtar.File{Name: wantFile, Data: []byte(want)})
		fmt.Fprintf(&sb, "doc %s:%d %d $WORK/%s $WORK/%s\n", b.file, s.line, s.exit, cmdFile, wantFile)
	}
	ar.Comment = []byte(sb.String())
	return ar, nil
}

// quote quotes a word for a testscript line.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// TestDocCommands runs every console block and checks every excerpt block
// (see the package comment).
func TestDocCommands(t *testing.T) {
	dir := os.Getenv("MCPOLICY_DOCTEST_KEEP")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs(filepath.Join(root, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	var scripts []string
	files := map[string][]txtar.File{} // file= blocks so far, per markdown file
	for _, b := range readBlocks(t) {
		if p := b.marker["file"]; p != "" {
			files[b.file] = append(files[b.file], txtar.File{Name: p, Data: []byte(strings.Join(b.body, "\n") + "\n")})
		}
		if b.lang != "console" && b.marker["excerpt"] == "" {
			continue
		}
		ar, err := script(b, files[b.file])
		if err != nil {
			t.Error(err)
			continue
		}
		name := filepath.Join(dir, fmt.Sprintf("%s-L%d.txtar", filepath.Base(b.file), b.line))
		if err := os.WriteFile(name, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, name)
	}
	if len(scripts) == 0 {
		t.Fatal("no checked block")
	}
	testscript.Run(t, testscript.Params{
		Files:              scripts,
		RequireUniqueNames: true,
		Setup: func(e *testscript.Env) error {
			home := filepath.Join(e.WorkDir, "home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			e.Setenv("HOME", home)
			for k, v := range map[string]string{
				"GIT_CONFIG_NOSYSTEM": "1",
				"GIT_AUTHOR_NAME":     "doc", "GIT_AUTHOR_EMAIL": "doc@example.com",
				"GIT_COMMITTER_NAME": "doc", "GIT_COMMITTER_EMAIL": "doc@example.com",
			} {
				e.Setenv(k, v)
			}
			return os.CopyFS(filepath.Join(e.WorkDir, "examples"), os.DirFS(examples))
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"doc":     cmdDoc,
			"excerpt": cmdExcerpt,
		},
	})
}

// cmdDoc: doc LOCATION EXIT CMDFILE WANTFILE runs the command in CMDFILE
// with sh, stderr into stdout, and compares status and output with the doc.
func cmdDoc(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: doc LOCATION EXIT CMDFILE WANTFILE")
	}
	loc := args[0]
	wantExit, err := strconv.Atoi(args[1])
	ts.Check(err)
	command := strings.TrimSuffix(ts.ReadFile(args[2]), "\n")
	err = ts.Exec("sh", "-c", "exec 2>&1\n"+command)
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: $ %s: %v", loc, command, err)
		}
		code = ee.ExitCode()
	}
	want := normalise(ts.ReadFile(args[3]))
	got := normalise(machine(ts, ts.ReadFile("stdout")))
	if !match(lines(want), lines(got)) {
		ts.Fatalf("%s: $ %s\nprints what the doc does not show (normalised; - doc, + output):\n%s", loc, command,
			diff.Diff("doc", []byte(want), "output", []byte(got)))
	}
	if code != wantExit {
		ts.Fatalf("%s: $ %s: exit %d, the doc shows %d (\"$ echo $?\" after the command states it; none means 0)", loc, command, code, wantExit)
	}
}

// cmdExcerpt: excerpt LOCATION FILE WANTFILE checks that WANTFILE's lines
// are a contiguous run of FILE's.
func cmdExcerpt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: excerpt LOCATION FILE WANTFILE")
	}
	want := lines(normalise(ts.ReadFile(args[2])))
	have := lines(normalise(machine(ts, ts.ReadFile(args[1]))))
	for i := 0; i+len(want) <= len(have); i++ {
		if match(want, have[i:i+len(want)]) {
			return
		}
	}
	ts.Fatalf("%s: these lines are not a contiguous part of %s (normalised):\n%s\n%s holds:\n%s", args[0], args[1],
		strings.Join(want, "\n"), args[1], strings.Join(have, "\n"))
}

// machine replaces the script's own paths (output only).
func machine(ts *testscript.TestScript, s string) string {
	for _, r := range []struct{ from, to string }{
		{ts.Getenv("HOME"), "/home/you"},
		{ts.Getenv("WORK"), "/home/you/project"},
	} {
		s = strings.ReplaceAll(s, r.from, r.to)
		if real, err := filepath.EvalSymlinks(r.from); err == nil && real != r.from {
			s = strings.ReplaceAll(s, real, r.to)
		}
	}
	return s
}

var (
	digestRe   = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	durationRe = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:ns|µs|us|ms|s)\b`)
	portRe     = regexp.MustCompile(`\b(localhost|127\.0\.0\.1):\d{5}\b`)
)

// normalise applies the replacements of the package comment that hold
// for both sides.
func normalise(s string) string {
	s = digestRe.ReplaceAllString(s, "<sha256>")
	s = durationRe.ReplaceAllString(s, "<duration>")
	return portRe.ReplaceAllString(s, "$1:PORT")
}

// lines splits text into lines without their trailing blanks.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	out := strings.Split(s, "\n")
	for i, l := range out {
		out[i] = strings.TrimRight(l, " \t")
	}
	return out
}

// match reports whether got is want, a "..." line in want standing for any
// number of lines.
func match(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if match(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && want[0] == got[0] && match(want[1:], got[1:])
}

// TestMatch pins the elision rule.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		want, got []string
		ok        bool
	}{
		{nil, nil, true},
		{[]string{"a"}, []string{"a"}, true},
		{[]string{"a"}, []string{"b"}, false},
		{[]string{"a"}, []string{"a", "b"}, false},
		{[]string{"a", "..."}, []string{"a"}, true},
		{[]string{"a", "..."}, []string{"a", "b", "c"}, true},
		{[]string{"...", "c"}, []string{"a", "b", "c"}, true},
		{[]string{"a", "...", "c"}, []string{"a", "b", "d"}, false},
	} {
		if got := match(c.want, c.got); got != c.ok {
			t.Errorf("match(%q, %q) = %v", c.want, c.got, got)
		}
	}
	if got := normalise("plan sha256:" + strings.Repeat("ab", 32) + " in 12.5ms, 3s; localhost:24290"); got != "plan sha256:<sha256> in <duration>, <duration>; localhost:PORT" {
		t.Errorf("normalise: %q", got)
	}
}

var (
	placeholderRe = regexp.MustCompile(`"<([a-z][a-z0-9-]*)>"`)
	sourceRe      = regexp.MustCompile(`source:\s*"([^"]+)"`)
)

// TestPolicySnippets compiles the policies the docs show (see the package
// comment for which, and how fragments are completed).
func TestPolicySnippets(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	n := 0
	for _, b := range readBlocks(t) {
		if b.lang != "cue" || b.file == "docs/rules.md" || b.marker["file"] != "" {
			continue
		}
		src := placeholderRe.ReplaceAllString(strings.Join(b.body, "\n")+"\n", `"$1"`)
		first := ""
		for _, l := range b.body {
			if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "//") {
				first = l
				break
			}
		}
		switch {
		case strings.HasPrefix(first, "\t") || strings.HasPrefix(first, " "):
			src = "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n" + src + "}\n"
		case !regexp.MustCompile(`(?m)^version:`).MatchString(src):
			src = "version: \"v1\"\n" + src
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, m := range sourceRe.FindAllStringSubmatch(src, -1) {
			if p := filepath.FromSlash(m[1]); filepath.IsLocal(p) {
				if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		var out, errb bytes.Buffer
		if code := cli.Run([]string{"vet", dir}, &out, &errb); code != 0 {
			t.Errorf("%s: the policy shown does not vet (exit %d):\n%s\nas compiled:\n%s", b.loc(), code,
				strings.ReplaceAll(errb.String(), dir+string(filepath.Separator), ""), src)
		}
		n++
	}
	if n == 0 {
		t.Error("no cue block found")
	}
}

// TestJSONSamples checks the json=TYPE blocks (see the package comment).
func TestJSONSamples(t *testing.T) {
	n := 0
	for _, b := range readBlocks(t) {
		typ := jsonTypes[b.marker["json"]]
		if typ == nil {
			continue
		}
		for i, l := range b.body {
			if strings.TrimSpace(l) == "" {
				continue
			}
			n++
			v := reflect.New(typ)
			dec := json.NewDecoder(strings.NewReader(l))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v.Interface()); err != nil {
				t.Errorf("%s:%d: not a %s: %v", b.file, b.line+1+i, b.marker["json"], err)
				continue
			}
			var again bytes.Buffer
			enc := json.NewEncoder(&again)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v.Interface()); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(again.String(), "\n"); got != l {
				t.Errorf("%s:%d: a %s is written\n%s\nnot as the doc shows it\n%s", b.file, b.line+1+i, b.marker["json"], got, l)
			}
		}
	}
	if n == 0 {
		t.Error("no json= sample found")
	}
}

// TestPreCommitSample checks the hooks a .pre-commit-config.yaml shown for
// this repository uses.
func TestPreCommitSample(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, ".pre-commit-hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	idRe := regexp.MustCompile(`(?m)^\s*- id:\s*(\S+)`)
	defined := map[string]bool{}
	for _, m := range idRe.FindAllStringSubmatch(string(src), -1) {
		defined[m[1]] = true
	}
	n := 0
	for _, b := range readBlocks(t) {
		text := strings.Join(b.body, "\n")
		if b.lang != "yaml" || !strings.Contains(text, "repo: https://github.com/mcpolicy/mcpolicy") {
			continue
		}
		for _, m := range idRe.FindAllStringSubmatch(text, -1) {
			n++
			if !defined[m[1]] {
				ids := make([]string, 0, len(defined))
				for id := range defined {
					ids = append(ids, id)
				}
				sort.Strings(ids)
				t.Errorf("%s: hook %q is not in .pre-commit-hooks.yaml (%s)", b.loc(), m[1], strings.Join(ids, ", "))
			}
		}
	}
	if n == 0 {
		t.Error("no pre-commit sample found")
	}
}
