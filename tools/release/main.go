// Command release builds a release of mcpolicy into a folder (`make
// release`, docs/release.md): for linux and darwin on amd64 and arm64, an
// archive of the static binaries (mcpolicy everywhere, mcpolicy-launch on
// Linux, its only platform), a CycloneDX SBOM of what each binary links,
// release notes from the history since the previous tag, and SHA256SUMS
// over them all.
//
//	go run . -root ../.. -out ../../dist [-version v0.1.0] [-ref HEAD] [-platforms linux/amd64,...]
//
// The binaries are built from a clone of the commit (never the working
// tree: uncommitted changes are not released), with CGO_ENABLED=0,
// -trimpath, -buildvcs=true (the build info carries vcs.revision,
// vcs.time and vcs.modified, which `mcpolicy --version` prints) and fixed
// -ldflags that set the version. Every date in the output is the commit's
// time, so two builds of one commit with one Go toolchain are byte for
// byte the same (TestReproducible).
//
// It is a module of its own, so the SBOM library never enters mcpolicy's
// dependencies and `go install ./...` in the repository never builds it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	var o Options
	flag.StringVar(&o.Root, "root", "../..", "the repository to release (a git checkout or worktree)")
	flag.StringVar(&o.Out, "out", "", "the folder to write (must not exist, or be empty)")
	flag.StringVar(&o.Version, "version", os.Getenv("VERSION"), "the version to stamp (default $VERSION, else `git describe --tags`, else a Go pseudo-version of the commit)")
	flag.StringVar(&o.Ref, "ref", "HEAD", "the commit to release")
	platforms := flag.String("platforms", strings.Join(DefaultPlatforms, ","), "GOOS/GOARCH pairs, comma-separated")
	flag.Parse()
	if o.Out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: release -out DIR [-root REPO] [-version vX.Y.Z] [-ref COMMIT] [-platforms linux/amd64,...]")
		os.Exit(2)
	}
	o.Platforms = strings.Split(*platforms, ",")
	o.Log = os.Stderr
	r, err := Build(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("release %s of %s (%s): %d files in %s\n", r.Version, r.Commit[:12], r.Time, len(r.Files), o.Out)
}
