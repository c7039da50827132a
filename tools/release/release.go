package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Options are what one release build takes.
type Options struct {
	Root      string    // the repository (a git checkout or worktree)
	Out       string    // the folder written: must not exist, or be empty
	Version   string    // "" for `git describe --tags` or a pseudo-version
	Ref       string    // the commit released ("" is HEAD)
	Platforms []string  // GOOS/GOARCH
	Log       io.Writer // progress; nil for none
}

// Result is what Build wrote.
type Result struct {
	Version  string
	Commit   string // the full hash
	Time     string // the commit's time, RFC 3339 in UTC: every date of the release
	Previous string // the tag the notes start after; "" when they cover all history
	Go       string // the toolchain that built the binaries
	Files    []string
	Binaries []Binary
}

// Binary is one built executable, as the archives hold it and the SBOM
// describes it.
type Binary struct {
	Name, GOOS, GOARCH string
	SHA256             string
	Archive            string
	Info               *debug.BuildInfo
}

// DefaultPlatforms are what a release covers.
var DefaultPlatforms = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}

const (
	module     = "github.com/mcpolicy/mcpolicy"
	versionVar = module + "/internal/buildversion.Version"
)

// commands are the release's binaries; mcpolicy-launch is Linux-only by
// its build constraint.
var commands = []struct {
	name, pkg string
	linuxOnly bool
}{
	{"mcpolicy", "./cmd/mcpolicy", false},
	{"mcpolicy-launch", "./cmd/mcpolicy-launch", true},
}

var (
	versionRE  = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-+][0-9A-Za-z.+-]+)?$`)
	platformRE = regexp.MustCompile(`^(linux|darwin)/(amd64|arm64)$`)
)

// Build writes a release of o.Ref into o.Out.
func Build(o Options) (*Result, error) {
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	if len(o.Platforms) == 0 {
		return nil, errors.New("no platforms")
	}
	for _, p := range o.Platforms {
		if !platformRE.MatchString(p) {
			return nil, fmt.Errorf("platform %q: want one of %s", p, strings.Join(DefaultPlatforms, ", "))
		}
	}
	if o.Ref == "" {
		o.Ref = "HEAD"
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	if err := emptyOrAbsent(o.Out); err != nil {
		return nil, err
	}

	r := &Result{}
	if r.Commit, err = git(root, "rev-parse", "--verify", o.Ref+"^{commit}"); err != nil {
		return nil, err
	}
	ct, err := git(root, "show", "-s", "--format=%cI", r.Commit)
	if err != nil {
		return nil, err
	}
	when, err := time.Parse(time.RFC3339, ct)
	if err != nil {
		return nil, fmt.Errorf("the commit's time %q: %v", ct, err)
	}
	when = when.UTC()
	r.Time = when.Format(time.RFC3339)
	if r.Version, err = resolveVersion(root, r.Commit, when, o.Version); err != nil {
		return nil, err
	}
	r.Previous = previousTag(root, r.Commit)
	if st, _ := git(root, "status", "--porcelain", "--untracked-files=no"); st != "" && o.Ref == "HEAD" {
		logf("release: the working tree has uncommitted changes; they are not in the release, which is %s as committed", r.Commit[:12])
	}

	tmp, err := os.MkdirTemp("", "mcpolicy-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	// A clone, not the working tree: only the commit is built, and the go
	// command stamps VCS information from a .git folder (not from a
	// worktree's .git file).
	if _, err := git(root, "clone", "-q", "--no-checkout", "--shared", root, src); err != nil {
		return nil, err
	}
	if _, err := git(src, "-c", "advice.detachedHead=false", "checkout", "-q", r.Commit); err != nil {
		return nil, err
	}

	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	for _, p := range o.Platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		stem := fmt.Sprintf("mcpolicy_%s_%s_%s", r.Version, goos, goarch)
		var files []archived
		for _, c := range commands {
			if c.linuxOnly && goos != "linux" {
				continue
			}
			bin := filepath.Join(tmp, "bin", goos+"_"+goarch, c.name)
			logf("release: building %s for %s", c.name, p)
			if err := goBuild(src, goos, goarch, r.Version, c.pkg, bin); err != nil {
				return nil, err
			}
			b, err := check(bin, goos, goarch, r.Commit, r.Time)
			if err != nil {
				return nil, err
			}
			b.Name, b.Archive = c.name, stem+".tar.gz"
			r.Go = b.Info.GoVersion
			r.Binaries = append(r.Binaries, b)
			files = append(files, archived{stem + "/" + c.name, bin})
		}
		if err := writeArchive(filepath.Join(o.Out, stem+".tar.gz"), files, when); err != nil {
			return nil, err
		}
		r.Files = append(r.Files, stem+".tar.gz")
	}

	sbom := fmt.Sprintf("mcpolicy_%s.cdx.json", r.Version)
	b, err := SBOM(r)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.Out, sbom), b, 0o644); err != nil {
		return nil, err
	}
	notes, err := Notes(root, r)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.Out, "RELEASE-NOTES.md"), notes, 0o644); err != nil {
		return nil, err
	}
	r.Files = append(r.Files, sbom, "RELEASE-NOTES.md")
	slices.Sort(r.Files)
	var sums bytes.Buffer
	for _, f := range r.Files {
		h, err := fileSHA256(filepath.Join(o.Out, f))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&sums, "%s  %s\n", h, f)
	}
	if err := os.WriteFile(filepath.Join(o.Out, "SHA256SUMS"), sums.Bytes(), 0o644); err != nil {
		return nil, err
	}
	r.Files = append(r.Files, "SHA256SUMS")
	return r, nil
}

// goBuild builds pkg of the clone src for goos/goarch into out, in an
// environment of the release's own: what a user's GOFLAGS, GOAMD64 or
// GOEXPERIMENT say must not change a release.
func goBuild(src, goos, goarch, version, pkg, out string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=true",
		"-ldflags", "-s -w -X "+versionVar+"="+version, "-o", out, pkg)
	cmd.Dir = src
	cmd.Env = buildEnv(goos, goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("GOOS=%s GOARCH=%s go build %s: %v\n%s", goos, goarch, pkg, err, b)
	}
	return nil
}

func buildEnv(goos, goarch string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS", "GOOS", "GOARCH", "CGO_ENABLED", "GOAMD64", "GOARM64", "GOARM", "GO386", "GOEXPERIMENT", "GOWORK", "GOFIPS140", "GODEBUG":
			continue
		}
		if strings.HasPrefix(k, "CGO_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=-mod=readonly", "GOWORK=off")
}

// check refuses a binary that is not what a release promises: the commit's
// build info, unmodified, without cgo, trimmed, and on Linux no program
// interpreter or shared library (static).
func check(bin, goos, goarch, commit, when string) (Binary, error) {
	b := Binary{GOOS: goos, GOARCH: goarch}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return b, fmt.Errorf("%s: %v", bin, err)
	}
	b.Info = info
	want := map[string]string{"vcs.revision": commit, "vcs.time": when, "vcs.modified": "false", "CGO_ENABLED": "0", "-trimpath": "true", "GOOS": goos, "GOARCH": goarch}
	for _, s := range info.Settings {
		if w, ok := want[s.Key]; ok {
			if s.Value != w {
				return b, fmt.Errorf("%s: build info %s=%s, want %s", bin, s.Key, s.Value, w)
			}
			delete(want, s.Key)
		}
	}
	if len(want) > 0 {
		missing := slices.Sorted(maps.Keys(want))
		return b, fmt.Errorf("%s: the build info has no %s (was it built from a git clone?)", bin, strings.Join(missing, ", "))
	}
	if goos == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			return b, err
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				return b, fmt.Errorf("%s is dynamically linked (it has a program interpreter)", bin)
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			return b, fmt.Errorf("%s links shared libraries %v", bin, libs)
		}
	}
	if b.SHA256, err = fileSHA256(bin); err != nil {
		return b, err
	}
	return b, nil
}

type archived struct{ name, path string }

// writeArchive writes a tar.gz whose every byte follows from the files and
// when: entries in order, owned by 0:0 with no names, the commit's time,
// and a gzip header with no time or name.
func writeArchive(dst string, files []archived, when time.Time) error {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	dir := strings.Split(files[0].name, "/")[0] + "/"
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: when, Format: tar.FormatUSTAR}); err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o755, Size: int64(len(b)), ModTime: when, Format: tar.FormatUSTAR}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// resolveVersion is given, else `git describe --tags` of commit, else (no
// tag yet) the Go module proxy's pseudo-version of the commit; it must be a
// semantic version, as a module version is.
func resolveVersion(root, commit string, when time.Time, given string) (string, error) {
	v := given
	if v == "" {
		var err error
		if v, err = git(root, "describe", "--tags", commit); err != nil {
			v = "v0.0.0-" + when.UTC().Format("20060102150405") + "-" + commit[:12]
		}
	}
	if !versionRE.MatchString(v) {
		return "", fmt.Errorf("version %q is not a semantic version vMAJOR.MINOR.PATCH[-PRE][+BUILD] (the Go module proxy serves no other): tag the commit so, or set VERSION", v)
	}
	return v, nil
}

// previousTag is the newest tag before commit (the one at it excluded), or
// "" when there is none.
func previousTag(root, commit string) string {
	if _, err := git(root, "rev-parse", "--verify", "-q", commit+"^"); err != nil {
		return ""
	}
	t, err := git(root, "describe", "--tags", "--abbrev=0", commit+"^")
	if err != nil {
		return ""
	}
	return t
}

// Notes are the release notes: the version, the commit, how it was built,
// how to verify it, and the history since the previous tag (main's line of
// it: a merge is one entry, with its branch's summary).
func Notes(root string, r *Result) ([]byte, error) {
	rng := r.Commit
	if r.Previous != "" {
		rng = r.Previous + ".." + r.Commit
	}
	log, err := git(root, "log", "--first-parent", "--format=%h%x09%s", rng)
	if err != nil {
		return nil, err
	}
	var lines []string
	if log != "" {
		lines = strings.Split(log, "\n")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# mcpolicy %s\n\n", r.Version)
	fmt.Fprintf(&b, "Commit %s, %s. Built with %s, CGO_ENABLED=0, -trimpath: static binaries, byte for byte the same on a rebuild of the commit with the same Go.\n\n", r.Commit, r.Time, r.Go)
	b.WriteString("| archive | binaries |\n|---|---|\n")
	byArchive := map[string][]string{}
	var archives []string
	for _, bin := range r.Binaries {
		if _, ok := byArchive[bin.Archive]; !ok {
			archives = append(archives, bin.Archive)
		}
		byArchive[bin.Archive] = append(byArchive[bin.Archive], bin.Name)
	}
	for _, a := range archives {
		fmt.Fprintf(&b, "| %s | %s |\n", a, strings.Join(byArchive[a], ", "))
	}
	fmt.Fprintf(&b, "\nVerify with `sha256sum -c SHA256SUMS` (macOS: `shasum -a 256 -c SHA256SUMS`); mcpolicy_%s.cdx.json is the CycloneDX SBOM of every binary. Unpack both binaries into one folder on PATH: mcpolicy hands launches to the mcpolicy-launch beside it.\n\n", r.Version)
	if r.Previous != "" {
		fmt.Fprintf(&b, "## Changes since %s (%d)\n\n", r.Previous, len(lines))
	} else {
		fmt.Fprintf(&b, "## Changes (%d: the whole history, there is no earlier tag)\n\n", len(lines))
	}
	for _, l := range lines {
		h, s, _ := strings.Cut(l, "\t")
		fmt.Fprintf(&b, "- %s (%s)\n", s, h)
	}
	return b.Bytes(), nil
}

func emptyOrAbsent(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty: remove it first (a release never mixes with an older one)", dir)
	}
	return nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
