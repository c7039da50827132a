package lint_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/schema"
)

// TestSeverityMatchesRisk: an unconfined server handed the home folder is
// an error (lint exits 5 by default) while a container entry whose only
// fault is missing hardening flags is one warning listing them (exit 0).
func TestSeverityMatchesRisk(t *testing.T) {
	for _, c := range []struct {
		name, config string
		worst        lint.Severity
		rules        map[string]int
	}{
		{"npx handed the home folder",
			`{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/alice"]}}}`,
			lint.Error, map[string]int{"UNCONFINED_SERVER": 1, "UNCONFINED_WIDE_GRANT": 1}},
		{"npx handed one project", `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/alice/shop"]}}}`,
			lint.Warning, map[string]int{"UNCONFINED_SERVER": 1}},
		{"docker without hardening", `{"mcpServers": {"gh": {"command": "docker", "args": ["run", "-i", "--rm", "--network", "none", "-e", "GITHUB_TOKEN", "ghcr.io/github/github-mcp-server:1.0.0"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}}}`,
			lint.Warning, map[string]int{"CONTAINER_UNHARDENED": 1, "IMAGE_NOT_DIGEST": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := lint.Run(targets(t, lint.Example{Kind: "client", Text: c.config}), lint.Options{})
			got := map[string]int{}
			for _, f := range rep.Findings {
				got[f.Rule]++
			}
			for rule, n := range c.rules {
				if got[rule] != n {
					t.Errorf("%s: %d findings, want %d (all: %v)", rule, got[rule], n, got)
				}
			}
			for _, old := range []string{"CAP_DROP_MISSING", "NO_NEW_PRIVILEGES_MISSING", "READ_ONLY_ROOT_MISSING", "ROOT_USER"} {
				if got[old] > 0 {
					t.Errorf("%s reported on its own: %v", old, got)
				}
			}
			if worst, _ := rep.Worst(); worst != c.worst {
				t.Errorf("worst %s, want %s: %+v", worst, c.worst, rep.Findings)
			}
		})
	}
}

// TestUnhardenedGrouped: one finding per container entry, at the run
// subcommand, listing each missing flag with the former rule ID that
// waives it.
func TestUnhardenedGrouped(t *testing.T) {
	e := lint.Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "docker", "args": ["run", "-i", "--rm", "--read-only", "img:1"]}}}`}
	fs := lint.Run(targets(t, e), lint.Options{Only: []string{"CONTAINER_UNHARDENED"}}).Findings
	want := "unhardened container, missing: --cap-drop ALL (CAP_DROP_MISSING), --security-opt no-new-privileges (NO_NEW_PRIVILEGES_MISSING), --user with a non-root uid (ROOT_USER)"
	if len(fs) != 1 || fs[0].Message != want || fs[0].Level != "warning" || fs[0].Pos.Line != 1 || fs[0].Pos.Col != 53 {
		t.Errorf("findings %+v\nwant one warning at 1:53 (the run subcommand): %s", fs, want)
	}
	// An explicit --user root is ROOT_USER's, on its own line.
	e = lint.Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "docker", "args": ["run", "-i", "--rm", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "root", "img:1"]}}}`}
	rep := lint.Run(targets(t, e), lint.Options{Only: []string{"CONTAINER_UNHARDENED", "ROOT_USER"}})
	if len(rep.Findings) != 1 || rep.Findings[0].Rule != "ROOT_USER" || rep.Findings[0].Message != "runs as root (--user root)" {
		t.Errorf("explicit root: %+v", rep.Findings)
	}
}

// TestFormerRuleIDs: the three hardening rules are sub-checks of
// CONTAINER_UNHARDENED now: Lookup and waive: accept their IDs (a policy
// naming one is not an "unknown rule"), a waiver takes its item out of the
// grouped finding, an expired one does not, and docs/rules.md says so.
func TestFormerRuleIDs(t *testing.T) {
	for _, id := range []string{"CAP_DROP_MISSING", "NO_NEW_PRIVILEGES_MISSING", "READ_ONLY_ROOT_MISSING"} {
		if r := lint.Lookup(id); r == nil || r.ID != "CONTAINER_UNHARDENED" {
			t.Errorf("Lookup(%s) = %v", id, r)
		}
		for _, r := range lint.Registry() {
			if r.ID == id {
				t.Errorf("%s is still a rule of its own", id)
			}
		}
	}
	if !strings.Contains(lint.Markdown(nil), "**Sub-checks.** `CAP_DROP_MISSING`, `NO_NEW_PRIVILEGES_MISSING`, `READ_ONLY_ROOT_MISSING`") {
		t.Error("docs/rules.md does not list the sub-checks")
	}

	policy := lint.Example{Kind: "policy", Text: `version: "v1"
servers: s: {
	image: "x:1"
	waive: [
		{rule: "CAP_DROP_MISSING", reason: "old waiver"},
		{rule: "READ_ONLY_ROOT_MISSING", reason: "old waiver"},
	]
}
`}
	for _, f := range lint.Run(targets(t, policy), lint.Options{}).Findings {
		if f.Rule == "WAIVER" {
			t.Errorf("a waiver of a former rule ID: %s", f.Message)
		}
	}

	pos := schema.Pos{File: "c.json", Line: 3, Col: 7}
	unhardened := func(waivers ...schema.Waiver) *readback.Target {
		return &readback.Target{Server: "s", File: "c.json", Pos: pos, Origin: readback.FromClient, Launcher: "docker",
			Plan: &compiler.Plan{Server: "s", Waivers: waivers},
			Flags: []readback.Flag{{Kind: readback.FlagNoCapDrop, Pos: pos}, {Kind: readback.FlagNoNewPrivsMissing, Pos: pos},
				{Kind: readback.FlagNoReadOnly, Pos: pos}, {Kind: readback.FlagRootUser, Pos: pos}}}
	}
	today := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		waivers []schema.Waiver
		want    string // the message, "" for none
	}{
		{nil, "unhardened container, missing: --cap-drop ALL (CAP_DROP_MISSING), --security-opt no-new-privileges (NO_NEW_PRIVILEGES_MISSING), --read-only (READ_ONLY_ROOT_MISSING), --user with a non-root uid (ROOT_USER)"},
		{[]schema.Waiver{{Rule: "CAP_DROP_MISSING", Reason: "r"}, {Rule: "ROOT_USER", Reason: "r"}},
			"unhardened container, missing: --security-opt no-new-privileges (NO_NEW_PRIVILEGES_MISSING), --read-only (READ_ONLY_ROOT_MISSING)"},
		{[]schema.Waiver{{Rule: "READ_ONLY_ROOT_MISSING", Reason: "r", Expires: "2029-12-31"}},
			"unhardened container, missing: --cap-drop ALL (CAP_DROP_MISSING), --security-opt no-new-privileges (NO_NEW_PRIVILEGES_MISSING), --read-only (READ_ONLY_ROOT_MISSING), --user with a non-root uid (ROOT_USER)"},
		{[]schema.Waiver{{Rule: "CAP_DROP_MISSING", Reason: "r"}, {Rule: "NO_NEW_PRIVILEGES_MISSING", Reason: "r"},
			{Rule: "READ_ONLY_ROOT_MISSING", Reason: "r"}, {Rule: "ROOT_USER", Reason: "r"}}, ""},
	} {
		fs := lint.Run([]*readback.Target{unhardened(c.waivers...)}, lint.Options{Only: []string{"CONTAINER_UNHARDENED"}, Today: today}).Findings
		var got []string
		for _, f := range fs {
			if f.Rule == "CONTAINER_UNHARDENED" {
				got = append(got, f.Message)
			}
		}
		if c.want == "" && len(got) != 0 || c.want != "" && (len(got) != 1 || got[0] != c.want) {
			t.Errorf("waivers %v: %q, want %q", c.waivers, got, c.want)
		}
	}
}

// TestBindRWBreadth: a read-write bind of a hand-written entry is a grant
// named by how wide it is, its paths read as written; a read-only one, or
// one another rule already calls an error (a home, /), is not.
func TestBindRWBreadth(t *testing.T) {
	e := lint.Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "docker", "args": ["run", "-i", "--rm",
		"-v", "/Users/alice/proj:/a",
		"-v", "/home/bob/src/shop:/b",
		"-v", "${workspaceFolder}:/c",
		"--mount", "type=bind,source=/srv/x,target=/d",
		"-v", "/srv/y:/e:ro",
		"-v", "/Users/alice:/f",
		"-v", "/:/g",
		"img:1"]}}}`}
	var got []string
	for _, f := range lint.Run(targets(t, e), lint.Options{Only: []string{"BIND_RW"}}).Findings {
		got = append(got, f.Message)
	}
	want := []string{
		"binds /Users/alice/proj read-write at /a: a top-level folder of the home folder (~/proj), every file of it writable by the server (add :ro unless it must write)",
		"binds /home/bob/src/shop read-write at /b: a folder in the home folder (~/src/shop), every file of it writable by the server (add :ro unless it must write)",
		"binds ${PROJECT_ROOT} read-write at /c: the whole project folder, every file of it writable by the server (add :ro unless it must write)",
		"binds /srv/x read-write at /d: a host folder, every file of it writable by the server (add :ro unless it must write)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestImagePinning: no tag or :latest is unpinned (a registry's port is
// not a tag), a version tag is pinned but not by digest, a digest is best;
// --pull always matters only for an image a digest does not pin.
func TestImagePinning(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		image, pull string
		want        []string
	}{
		{"mcp/github", "", []string{"IMAGE_UNPINNED"}},
		{"localhost:5000/mcp/github", "", []string{"IMAGE_UNPINNED"}},
		{"ghcr.io/github/github-mcp-server:latest", "", []string{"IMAGE_UNPINNED"}},
		{"ghcr.io/github/github-mcp-server:0.9.1", "", []string{"IMAGE_NOT_DIGEST"}},
		{"localhost:5000/mcp/github:2", "always", []string{"IMAGE_NOT_DIGEST", "PULL_ALWAYS"}},
		{"mcp/github" + digest, "always", nil},
		{"mcp/github:1" + digest, "missing", nil},
		{"${IMAGE}", "", nil},
	} {
		args := `"run", "-i", "--rm", `
		if c.pull != "" {
			args += `"--pull", "` + c.pull + `", `
		}
		e := lint.Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "docker", "args": [` + args + `"` + c.image + `"]}}}`}
		var got []string
		for _, f := range lint.Run(targets(t, e), lint.Options{Only: []string{"IMAGE_UNPINNED", "IMAGE_NOT_DIGEST", "PULL_ALWAYS"}}).Findings {
			got = append(got, f.Rule)
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s --pull %q: %q, want %q", c.image, c.pull, got, c.want)
		}
	}
}

// TestOnlyAcceptsAliases: Options.Only takes a former rule ID kept as an
// alias as it takes the rule's own ID: the grouped rule runs, with that
// item alone (or every item when its own ID is named too). An ID no rule
// has selects nothing.
func TestOnlyAcceptsAliases(t *testing.T) {
	e := lint.Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "docker", "args": ["run", "-i", "--rm", "--network", "none", "img:1"]}}}`}
	all := "unhardened container, missing: --cap-drop ALL (CAP_DROP_MISSING), --security-opt no-new-privileges (NO_NEW_PRIVILEGES_MISSING), --read-only (READ_ONLY_ROOT_MISSING), --user with a non-root uid (ROOT_USER)"
	for _, c := range []struct {
		only []string
		want []string // rule: message
	}{
		{[]string{"CONTAINER_UNHARDENED"}, []string{"CONTAINER_UNHARDENED: " + all}},
		{[]string{"CAP_DROP_MISSING"}, []string{"CONTAINER_UNHARDENED: unhardened container, missing: --cap-drop ALL (CAP_DROP_MISSING)"}},
		{[]string{"READ_ONLY_ROOT_MISSING", "NO_NEW_PRIVILEGES_MISSING"},
			[]string{"CONTAINER_UNHARDENED: unhardened container, missing: --security-opt no-new-privileges (NO_NEW_PRIVILEGES_MISSING), --read-only (READ_ONLY_ROOT_MISSING)"}},
		{[]string{"CAP_DROP_MISSING", "CONTAINER_UNHARDENED"}, []string{"CONTAINER_UNHARDENED: " + all}},
		{[]string{"CAP_DROP_MISSING", "IMAGE_NOT_DIGEST"}, []string{
			"CONTAINER_UNHARDENED: unhardened container, missing: --cap-drop ALL (CAP_DROP_MISSING)",
			"IMAGE_NOT_DIGEST: image img:1 is pinned by tag, not digest"}},
		{[]string{"NO_SUCH_RULE"}, nil},
	} {
		var got []string
		for _, f := range lint.Run(targets(t, e), lint.Options{Only: c.only}).Findings {
			got = append(got, f.Rule+": "+f.Message)
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("Only %v:\n got %q\nwant %q", c.only, got, c.want)
		}
	}
	// A hardened entry has no item to report, whatever Only names.
	good := lint.Lookup("CONTAINER_UNHARDENED").Good
	if fs := lint.Run(targets(t, good), lint.Options{Only: []string{"CAP_DROP_MISSING"}}).Findings; len(fs) != 0 {
		t.Errorf("hardened entry: %+v", fs)
	}
}
