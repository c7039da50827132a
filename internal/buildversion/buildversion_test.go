package buildversion

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "arm64"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "93fe4cc0123456789abcdef0123456789abcdef0"},
		{Key: "vcs.time", Value: "2026-12-06T19:55:49Z"},
		{Key: "vcs.modified", Value: "false"},
	}
	for _, c := range []struct {
		name, linked, main string
		settings           []debug.BuildSetting
		nilInfo            bool
		want               Info
		line               string
	}{
		{name: "release build", linked: "v0.1.0", main: "(devel)", settings: vcs,
			want: Info{Version: "v0.1.0", Commit: "93fe4cc0123456789abcdef0123456789abcdef0", Time: "2026-12-06T19:55:49Z", Platform: "darwin/arm64"},
			line: "v0.1.0 (commit 93fe4cc01234, 2026-12-06T19:55:49Z)"},
		{name: "clone with changes", main: "v0.1.1-0.20261206195549-93fe4cc01234+dirty",
			settings: append(vcs[:len(vcs)-1:len(vcs)-1], debug.BuildSetting{Key: "vcs.modified", Value: "true"}),
			want:     Info{Version: "v0.1.1-0.20261206195549-93fe4cc01234+dirty", Commit: "93fe4cc0123456789abcdef0123456789abcdef0", Time: "2026-12-06T19:55:49Z", Modified: true, Platform: "darwin/arm64"},
			line:     "v0.1.1-0.20261206195549-93fe4cc01234+dirty (commit 93fe4cc01234+modified, 2026-12-06T19:55:49Z)"},
		{name: "go install of a tag", main: "v0.1.0",
			want: Info{Version: "v0.1.0"}, line: "v0.1.0 (commit unknown)"},
		{name: "go install of a commit", main: "v0.0.0-20261206195549-93fe4cc01234",
			want: Info{Version: "v0.0.0-20261206195549-93fe4cc01234", Commit: "93fe4cc01234", Time: "2026-12-06T19:55:49Z"},
			line: "v0.0.0-20261206195549-93fe4cc01234 (commit 93fe4cc01234, 2026-12-06T19:55:49Z)"},
		{name: "pre-release pseudo-version", main: "v0.2.0-rc.1.0.20261206195549-93fe4cc01234",
			want: Info{Version: "v0.2.0-rc.1.0.20261206195549-93fe4cc01234", Commit: "93fe4cc01234", Time: "2026-12-06T19:55:49Z"},
			line: "v0.2.0-rc.1.0.20261206195549-93fe4cc01234 (commit 93fe4cc01234, 2026-12-06T19:55:49Z)"},
		{name: "-buildvcs=false in a clone", main: "(devel)", want: Info{Version: "devel"}, line: "devel (commit unknown)"},
		{name: "no build info", nilInfo: true, want: Info{Version: "devel"}, line: "devel (commit unknown)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/mcpolicy/mcpolicy", Version: c.main}, Settings: c.settings}
			if c.nilInfo {
				bi = nil
			}
			got := FromBuildInfo(bi, c.linked)
			want := c.want
			if !c.nilInfo {
				want.Go = "go1.26.8"
			} else {
				want.Go = got.Go
			}
			if want.Platform == "" {
				want.Platform = got.Platform
			}
			if got != want {
				t.Errorf("FromBuildInfo = %+v, want %+v", got, want)
			}
			if l := got.Line(); l != c.line {
				t.Errorf("Line() = %q, want %q", l, c.line)
			}
		})
	}
}

func TestText(t *testing.T) {
	i := Info{Version: "v0.1.0", Commit: "93fe4cc0123456789abcdef0123456789abcdef0", Time: "2026-12-06T19:55:49Z", Modified: true, Go: "go1.26.8", Platform: "linux/arm64"}
	want := `mcpolicy v0.1.0
commit: 93fe4cc0123456789abcdef0123456789abcdef0, with uncommitted changes
date:   2026-12-06T19:55:49Z (the commit's)
schema: v1
go:     go1.26.8 linux/arm64
`
	if got := i.Text("mcpolicy", "schema: v1"); got != want {
		t.Errorf("Text:\n%s\nwant:\n%s", got, want)
	}
	if got := (Info{Version: "devel", Go: "go1.26.8", Platform: "linux/amd64"}).Text("mcpolicy-launch"); !strings.Contains(got, "commit: unknown (the build info has none") || !strings.Contains(got, "date:   unknown\n") {
		t.Errorf("Text without VCS information:\n%s", got)
	}
}
