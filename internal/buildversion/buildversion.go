// Package buildversion is what a binary of this module knows of its own
// build, for mcpolicy's and mcpolicy-launch's --version: the version, the
// commit, the commit's time and whether the tree had uncommitted changes.
//
// The version is Version when the link set it (the release build,
// docs/release.md: -ldflags "-X github.com/mcpolicy/mcpolicy/internal/buildversion.Version=v0.1.0"),
// else the module version `go install MODULE@VERSION` recorded. The commit
// and its time are the build info's vcs.revision and vcs.time, which `go
// build` records in a git checkout (unless -buildvcs=false); a build of a
// module download has none, and a pseudo-version's last element names the
// commit. The commit's time is the build date the release uses: a date of
// the build itself would make two builds of one commit differ.
package buildversion

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is set at link time by the release build; empty otherwise.
var Version = ""

// Info is one binary's build, as Read finds it.
type Info struct {
	Version  string // "v0.1.0", a pseudo-version, or "devel"
	Commit   string // the full commit hash (a pseudo-version's 12 digits); "" when not recorded
	Time     string // the commit's time, RFC 3339 in UTC; "" when not recorded
	Modified bool   // built from a tree with uncommitted changes
	Go       string // the toolchain, "go1.26.8"
	Platform string // "linux/amd64"
}

// Read reads the running binary's build info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return FromBuildInfo(bi, Version)
}

// FromBuildInfo is Read for a given build info (nil when there is none)
// and link-time version.
func FromBuildInfo(bi *debug.BuildInfo, linked string) Info {
	i := Info{Version: linked, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		if i.Version == "" {
			i.Version = "devel"
		}
		return i
	}
	if bi.GoVersion != "" {
		i.Go = bi.GoVersion
	}
	goos, goarch := "", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Commit = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" && goarch != "" {
		i.Platform = goos + "/" + goarch
	}
	mv := strings.TrimSuffix(bi.Main.Version, "+dirty")
	if i.Version == "" {
		i.Version = bi.Main.Version
		if i.Version == "" || i.Version == "(devel)" {
			i.Version = "devel"
		}
	}
	if i.Commit == "" {
		if t, rev, ok := pseudo(mv); ok {
			i.Commit = rev
			i.Time = t[0:4] + "-" + t[4:6] + "-" + t[6:8] + "T" + t[8:10] + ":" + t[10:12] + ":" + t[12:14] + "Z"
		}
	}
	return i
}

// Line is the build on one line: "v0.1.0 (commit 0123456789ab, 2026-12-06T19:55:49Z)".
func (i Info) Line() string {
	c := "commit unknown"
	if i.Commit != "" {
		c = "commit " + short(i.Commit)
		if i.Modified {
			c += "+modified"
		}
		if i.Time != "" {
			c += ", " + i.Time
		}
	}
	return fmt.Sprintf("%s (%s)", i.Version, c)
}

// Text is the build as --version prints it: the command's name and
// version, then the commit, its date and the toolchain, one per line,
// then extra lines ("schema: v1") as given.
func (i Info) Text(name string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", name, i.Version)
	switch {
	case i.Commit == "":
		b.WriteString("commit: unknown (the build info has none: a build of a module download, or -buildvcs=false)\n")
	case i.Modified:
		fmt.Fprintf(&b, "commit: %s, with uncommitted changes\n", i.Commit)
	default:
		fmt.Fprintf(&b, "commit: %s\n", i.Commit)
	}
	if i.Time != "" {
		fmt.Fprintf(&b, "date:   %s (the commit's)\n", i.Time)
	} else {
		b.WriteString("date:   unknown\n")
	}
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	fmt.Fprintf(&b, "go:     %s %s\n", i.Go, i.Platform)
	return b.String()
}

// pseudo splits a pseudo-version's tail, "...20261206195549-93fe4cc01234"
// (a 14-digit UTC time, then 12 hex digits of the commit), without the
// regexp package: the launcher links this, and stays small.
func pseudo(v string) (time, rev string, ok bool) {
	v = strings.TrimSuffix(v, "+incompatible")
	if len(v) < 28 || v[len(v)-13] != '-' {
		return "", "", false
	}
	time, rev = v[len(v)-27:len(v)-13], v[len(v)-12:]
	if sep := len(v) - 28; sep >= 0 && v[sep] != '-' && v[sep] != '.' {
		return "", "", false
	}
	for _, c := range time {
		if c < '0' || c > '9' {
			return "", "", false
		}
	}
	for _, c := range rev {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", "", false
		}
	}
	return time, rev, true
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
