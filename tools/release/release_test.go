package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// TestReproducible runs the release build of this repository's HEAD for
// this machine's platform twice, each from a clone of its own (another
// folder), and holds the two to the same bytes; then it checks what one
// holds: SHA256SUMS verifies every file, the archive's binaries are static
// and print the version, commit and date the build info gives them, the
// SBOM names each binary by its digest and what it links, and the notes
// cover the history.
func TestReproducible(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" { // as internal/testbin.SkipShort: CI runs it
		t.Skip("builds mcpolicy and mcpolicy-launch twice: not under -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	if !platformRE.MatchString(platform) {
		t.Fatalf("this machine (%s) is no release platform", platform)
	}
	const version = "v9.8.7-test.1"
	var outs [2]string
	var res *Result
	for i := range outs {
		outs[i] = filepath.Join(t.TempDir(), "dist")
		r, err := Build(Options{Root: root, Out: outs[i], Version: version, Platforms: []string{platform}})
		if err != nil {
			t.Fatal(err)
		}
		res = r
	}
	for _, f := range res.Files {
		a, errA := os.ReadFile(filepath.Join(outs[0], f))
		b, errB := os.ReadFile(filepath.Join(outs[1], f))
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", f, errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds of one commit", f)
		}
	}
	out := outs[0]
	head := gitOut(t, root, "rev-parse", "HEAD")
	if res.Commit != head {
		t.Errorf("released %s, want HEAD %s", res.Commit, head)
	}
	stem := "mcpolicy_" + version + "_" + strings.ReplaceAll(platform, "/", "_")
	want := []string{"RELEASE-NOTES.md", "mcpolicy_" + version + ".cdx.json", stem + ".tar.gz", "SHA256SUMS"} // sorted, the sums last
	if strings.Join(res.Files, " ") != strings.Join(want, " ") {
		t.Errorf("files %q, want %q", res.Files, want)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != len(want) {
		t.Errorf("%d files in %s, want %d", len(entries), out, len(want))
	}

	// SHA256SUMS, as sha256sum -c reads it.
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for line := range strings.Lines(string(sums)) {
		sum, name, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("SHA256SUMS line %q is not `HEX  NAME`", line)
		}
		if got := sha256File(t, filepath.Join(out, name)); got != sum {
			t.Errorf("SHA256SUMS says %s for %s, the file's is %s", sum, name, got)
		}
		listed++
	}
	if listed != len(want)-1 {
		t.Errorf("SHA256SUMS lists %d files, want %d (all but itself)", listed, len(want)-1)
	}
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "-c", "--strict", "SHA256SUMS")
		cmd.Dir = out
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, b)
		}
	}

	// The archive: one folder, the binaries in it, executable, static.
	bin := t.TempDir()
	names := untar(t, filepath.Join(out, stem+".tar.gz"), bin)
	wantNames := []string{stem + "/", stem + "/mcpolicy"}
	if runtime.GOOS == "linux" {
		wantNames = append(wantNames, stem+"/mcpolicy-launch")
	}
	if strings.Join(names, " ") != strings.Join(wantNames, " ") {
		t.Fatalf("the archive holds %q, want %q", names, wantNames)
	}
	commitTime, _ := time.Parse(time.RFC3339, gitOut(t, root, "show", "-s", "--format=%cI", "HEAD"))
	for _, name := range wantNames[1:] {
		exe := filepath.Join(bin, name)
		for _, args := range [][]string{{"--version"}, {"version"}} {
			if strings.HasSuffix(name, "-launch") && args[0] == "version" {
				continue
			}
			got, err := exec.Command(exe, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", name, args[0], err, got)
			}
			for _, w := range []string{
				filepath.Base(name) + " " + version + "\n",
				"commit: " + head + "\n",
				"date:   " + commitTime.UTC().Format(time.RFC3339) + " (the commit's)\n",
			} {
				if !strings.Contains(string(got), w) {
					t.Errorf("%s %s prints\n%s\nwant a line %q", name, args[0], got, w)
				}
			}
		}
	}

	// The SBOM: every binary by its digest, what each links.
	f, err := os.Open(filepath.Join(out, "mcpolicy_"+version+".cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("the SBOM does not decode as CycloneDX: %v", err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Version != version || !strings.HasPrefix(bom.SerialNumber, "urn:uuid:") {
		t.Fatalf("SBOM header: format %q, serial %q, metadata %+v", bom.BOMFormat, bom.SerialNumber, bom.Metadata)
	}
	byRef := map[string]cdx.Component{}
	for _, c := range *bom.Components {
		byRef[c.BOMRef] = c
	}
	dependsOn := map[string][]string{}
	for _, d := range *bom.Dependencies {
		if d.Dependencies != nil {
			dependsOn[d.Ref] = *d.Dependencies
		}
	}
	for _, name := range wantNames[1:] {
		base := filepath.Base(name)
		ref := base + " " + platform
		c, ok := byRef[ref]
		if !ok || c.Hashes == nil || (*c.Hashes)[0].Value != sha256File(t, filepath.Join(bin, name)) {
			t.Errorf("the SBOM's %q is %+v, want the binary's SHA-256", ref, c)
		}
		deps := strings.Join(dependsOn[ref], " ")
		if !strings.Contains(deps, "pkg:golang/std@"+runtime.Version()) || !strings.Contains(deps, "pkg:golang/golang.org/x/sys@") {
			t.Errorf("the SBOM's %s depends on %s, want std and golang.org/x/sys at least", ref, deps)
		}
		if cue := strings.Contains(deps, "pkg:golang/cuelang.org/go@"); cue != (base == "mcpolicy") {
			t.Errorf("the SBOM's %s lists cuelang.org/go: %v (mcpolicy links CUE, the launcher does not)", ref, cue)
		}
	}
	for _, d := range dependsOn["mcpolicy "+platform] {
		c, ok := byRef[d]
		if !ok {
			t.Errorf("dependency %s is no component", d)
		} else if d != "pkg:golang/std@"+runtime.Version() && (c.Properties == nil || !strings.HasPrefix((*c.Properties)[0].Value, "h1:")) {
			t.Errorf("module %s has no go.sum hash", d)
		}
	}

	// The notes: the whole history (no tag yet) or since the last tag.
	notes, err := os.ReadFile(filepath.Join(out, "RELEASE-NOTES.md"))
	if err != nil {
		t.Fatal(err)
	}
	rng := "HEAD"
	if res.Previous != "" {
		rng = res.Previous + "..HEAD"
	}
	n := gitOut(t, root, "rev-list", "--first-parent", "--count", rng)
	subject := gitOut(t, root, "log", "-1", "--format=%s (%h)", "HEAD")
	for _, w := range []string{"# mcpolicy " + version + "\n", "Commit " + head, "(" + n + ":", "\n- " + subject + "\n", stem + ".tar.gz"} {
		if res.Previous != "" && w == "("+n+":" {
			w = "since " + res.Previous + " (" + n + ")"
		}
		if !bytes.Contains(notes, []byte(w)) {
			t.Errorf("RELEASE-NOTES.md lacks %q", w)
		}
	}
	if c := bytes.Count(notes, []byte("\n- ")); strconv.Itoa(c) != n {
		t.Errorf("RELEASE-NOTES.md has %d entries, want %s", c, n)
	}
}

// TestVersionAndNotes: the version from the tags (or the proxy's name for
// an untagged commit), the notes since the previous tag, and what the
// build refuses before it builds anything.
func TestVersionAndNotes(t *testing.T) {
	repo := t.TempDir()
	g := func(args ...string) string { return gitOut(t, repo, args...) }
	g("init", "-q")
	commit := func(msg string) string {
		os.WriteFile(filepath.Join(repo, "f"), []byte(msg), 0o644)
		g("add", "-A")
		g("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", msg)
		return g("rev-parse", "HEAD")
	}
	first := commit("first")
	when := time.Date(2026, 12, 6, 19, 55, 49, 0, time.UTC)
	if v, err := resolveVersion(repo, first, when, ""); err != nil || v != "v0.0.0-20261206195549-"+first[:12] {
		t.Errorf("no tag: %q %v, want the pseudo-version", v, err)
	}
	g("tag", "v0.1.0")
	commit("second")
	third := commit("third")
	if v, err := resolveVersion(repo, third, when, ""); err != nil || v != "v0.1.0-2-g"+third[:7] {
		t.Errorf("two after v0.1.0: %q %v", v, err)
	}
	g("tag", "v0.2.0")
	if v, err := resolveVersion(repo, third, when, ""); err != nil || v != "v0.2.0" {
		t.Errorf("at v0.2.0: %q %v", v, err)
	}
	if v, err := resolveVersion(repo, third, when, "v1.0.0-rc.1"); err != nil || v != "v1.0.0-rc.1" {
		t.Errorf("VERSION=v1.0.0-rc.1: %q %v", v, err)
	}
	for _, bad := range []string{"1.0.0", "v1.0", "v1.0.0 ; rm", "v01.0.0"} {
		if _, err := resolveVersion(repo, third, when, bad); err == nil || !strings.Contains(err.Error(), "not a semantic version") {
			t.Errorf("VERSION=%q: %v, want it refused", bad, err)
		}
	}
	r := &Result{Version: "v0.2.0", Commit: third, Time: "2026-12-06T19:55:49Z", Previous: previousTag(repo, third), Go: "go1.26.8"}
	if r.Previous != "v0.1.0" {
		t.Fatalf("previous tag %q, want v0.1.0", r.Previous)
	}
	notes, err := Notes(repo, r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(notes, []byte("## Changes since v0.1.0 (2)\n\n- third (")) || !bytes.Contains(notes, []byte("\n- second (")) || bytes.Contains(notes, []byte("first")) {
		t.Errorf("notes since v0.1.0:\n%s", notes)
	}
	if p := previousTag(repo, first); p != "" {
		t.Errorf("the root commit's previous tag: %q", p)
	}

	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "old"), nil, 0o644)
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Root: repo, Out: full, Platforms: DefaultPlatforms}, "is not empty"},
		{Options{Root: repo, Out: t.TempDir(), Platforms: []string{"windows/amd64"}}, "platform \"windows/amd64\""},
		{Options{Root: repo, Out: t.TempDir(), Platforms: DefaultPlatforms, Version: "latest"}, "not a semantic version"},
		{Options{Root: repo, Out: t.TempDir(), Platforms: DefaultPlatforms, Ref: "nosuchref"}, "nosuchref"},
	} {
		if _, err := Build(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build(%+v): %v, want an error with %q", c.o, err, c.want)
		}
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// untar unpacks a release archive into dir and returns its entries' names,
// each checked: 0:0, the mode a release gives.
func untar(t *testing.T, archive, dir string) []string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Mode != 0o755 {
			t.Errorf("%s: %d:%d %q mode %o, want 0:0, no names, 0755", h.Name, h.Uid, h.Gid, h.Uname, h.Mode)
		}
		p := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o755)
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
