package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// figureRe: a number, at most one space, a unit; neither side glued to a
	// letter, a digit or a dot (so "256m", "v1.2", "ABI 6" are no figures).
	figureRe = regexp.MustCompile(`(?:^|[^\w.])(\d+(?:[.,]\d+)*)\s?(ns|µs|us|ms|s|secs?|seconds?|minutes?|hours?|KB|MB|GB|KiB|MiB|GiB|%)(?:$|[^\w])`)
	// measuredRe: the date and the machine of a measurement.
	measuredRe = regexp.MustCompile(`measured (\d{4}-\d{2}-\d{2}) on [^,;:()]*[A-Za-z][^,;:()]*`)
	codeSpanRe = regexp.MustCompile("`([^`]+)`")
	// settingRe: a code span naming a Go constant or variable, pkg.Name.
	settingRe = regexp.MustCompile(`^([a-z][a-z0-9]*(?:/[a-z][a-z0-9]*)*)\.([A-Za-z_]\w*)$`)
)

// TestFiguresNameTheirSource fails on a timing or size figure in README.md
// or docs/*.md that does not say where it comes from.
//
// A figure is a number (digits, with "." or "," groups) followed, after at
// most one space, by one of the units ns, µs, us, ms, s, sec, secs,
// second(s), minute(s), hour(s), KB, MB, GB, KiB, MiB, GiB or %, with no
// letter, digit or dot glued to either end (figureRe): "0.55 ms", "5.7 MB",
// "+5%", "30 s". Fenced code blocks are not searched: they are syntax or
// command output, which TestDocCommands checks.
//
// A figure's paragraph is the run of non-blank lines that holds it (a list
// without blank lines is one paragraph); a table's paragraph also takes in
// the paragraph right above the table, its caption.
//
// The figure passes when its paragraph names its source, one of:
//
//   - a measurement: the words "measured YYYY-MM-DD on MACHINE", MACHINE
//     being text up to the next , ; : ( or ) with a letter in it
//     (measuredRe), and, anywhere in the paragraph, a code span naming
//     what measured it (`make bench`, `BenchmarkMatch`, `go build ...`);
//   - a setting: a code span pkg.Name (settingRe) where pkg is a folder of
//     this repository and Name is declared in one of its non-test Go files
//     (`egress/forwarder.lifelineWait`): the figure is that value, read from the code
//     (the test does not compare the value; the reference keeps it findable).
func TestFiguresNameTheirSource(t *testing.T) {
	n := 0
	for _, f := range docFiles(t) {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paragraphs(string(src)) {
			for i, l := range p.lines {
				if p.caption > i {
					continue // the caption's own figures are checked as its own paragraph
				}
				for _, m := range figureRe.FindAllStringSubmatchIndex(l, -1) {
					n++
					if why := sourced(p.lines); why != "" {
						t.Errorf("%s:%d: figure %q names no source: %s", f, p.start+i, l[m[2]:m[5]], why)
					}
				}
			}
		}
	}
	if n == 0 {
		t.Error("no figure found at all: is figureRe still right?")
	}
}

// paragraph is a run of non-blank lines outside fenced blocks.
type paragraph struct {
	start   int // line number of lines[0]
	lines   []string
	caption int // for a table: how many leading lines are the caption
}

func paragraphs(src string) []paragraph {
	var (
		out   []paragraph
		cur   *paragraph
		fence string
	)
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for i, l := range strings.Split(src, "\n") {
		if m := fenceRe.FindStringSubmatch(l); m != nil && (fence == "" || strings.HasPrefix(strings.TrimSpace(l), fence)) {
			flush()
			if fence == "" {
				fence = m[1]
			} else {
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		if cur == nil {
			cur = &paragraph{start: i + 1}
			// A table takes the paragraph above it as its caption.
			if strings.HasPrefix(l, "|") && len(out) > 0 {
				prev := out[len(out)-1]
				if !strings.HasPrefix(prev.lines[0], "|") && prev.start+len(prev.lines) == i {
					cur.start, cur.lines, cur.caption = prev.start, append([]string(nil), prev.lines...), len(prev.lines)
				}
			}
		}
		cur.lines = append(cur.lines, l)
	}
	flush()
	return out
}

// sourced says what a paragraph lacks to source its figures, or "".
func sourced(lines []string) string {
	text := strings.Join(lines, "\n")
	spans := codeSpanRe.FindAllStringSubmatch(text, -1)
	if measuredRe.MatchString(strings.Join(lines, " ")) && len(spans) > 0 {
		return ""
	}
	for _, s := range spans {
		if m := settingRe.FindStringSubmatch(s[1]); m != nil && declared(m[1], m[2]) {
			return ""
		}
	}
	if measuredRe.MatchString(strings.Join(lines, " ")) {
		return "it says when and where it was measured, but names no command or benchmark in a code span"
	}
	return `say "measured YYYY-MM-DD on MACHINE" with the command in a code span (` + "`make bench`" + `), or name the setting in the code as ` + "`pkg.Name`"
}

// declared reports whether a non-test Go file of the folder pkg declares name.
func declared(pkg, name string) bool {
	// pkg is a package's name or its folder's path: `egress/forwarder.lifelineWait`
	// names runtime/egress/forwarder.
	var files []string
	for _, dir := range []string{"", "runtime", "evidence", "internal"} {
		more, _ := filepath.Glob(filepath.Join(root, dir, filepath.FromSlash(pkg), "*.go"))
		files = append(files, more...)
	}
	decl := regexp.MustCompile(`(?m)^\s*(?:const\s+|var\s+)?` + regexp.QuoteMeta(name) + `(?:\s+[\w.*\[\]]+)?\s*=`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		if src, err := os.ReadFile(f); err == nil && decl.Match(src) {
			return true
		}
	}
	return false
}

// TestFigureRule pins what counts as a figure and as a source.
func TestFigureRule(t *testing.T) {
	for s, want := range map[string]bool{
		"0.55 ms": true, "takes 21ms": true, "(+5%)": true, "5.7 MB binary": true, "30 s at most": true,
		"1.3 µs": true, "17-30 ms": true, "for 30 seconds": true,
		"256m": false, "ABI 6": false, "2 steps": false, "v1.2s": false, "Linux 6.5 on": false, "size=4k": false,
	} {
		if got := figureRe.MatchString(s); got != want {
			t.Errorf("figure in %q: %v, want %v", s, got, want)
		}
	}
	for text, ok := range map[string]bool{
		"bare exec 0.55 ms (measured 2026-12-01 on a 2-core x86_64 VM, `make bench`)": true,
		"bare exec 0.55 ms (measured 2026-12-01 on a 2-core x86_64 VM)":               false,
		"bare exec 0.55 ms (`make bench`, on the development VM)":                     false,
		"tries again (30 s at most: `egress/forwarder.lifelineWait`)":                 true,
		"tries again (30 s at most: `egress.noSuchConstant`)":                         false,
	} {
		if got := sourced([]string{text}) == ""; got != ok {
			t.Errorf("sourced(%q) = %v, want %v", text, got, ok)
		}
	}
}
