package lint_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/project/ruleexample"
)

// targets loads an example in a fresh project (policy or client config)
// with the example's files, a home folder beside the project.
func targets(t *testing.T, e lint.Example) []*readback.Target {
	t.Helper()
	ts, err := ruleexample.Targets(e, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func findings(t *testing.T, rule string, e lint.Example) []lint.Finding {
	rep := lint.Run(targets(t, e), lint.Options{Only: []string{rule}})
	return rep.Findings
}

// TestRegistry: every rule is documented and proves itself on its own
// examples: the bad one is flagged, the good one is not.
func TestRegistry(t *testing.T) {
	id := regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)
	name := regexp.MustCompile(`^[a-z][a-z0-9-]+$`)
	seen := map[string]bool{}
	for _, r := range lint.Registry() {
		if !id.MatchString(r.ID) || !name.MatchString(r.Name) || seen[r.ID] || seen[r.Name] {
			t.Errorf("rule %q/%q: bad or duplicate ID or name", r.ID, r.Name)
		}
		seen[r.ID], seen[r.Name] = true, true
		if r.Purpose == "" || r.Rationale == "" || r.Remediation == "" {
			t.Errorf("%s: purpose, rationale and remediation are all required", r.ID)
		}
		t.Run(r.ID, func(t *testing.T) {
			for _, f := range findings(t, r.ID, r.Bad) {
				if strings.Contains(f.Message, "%!") {
					t.Errorf("%s: a malformed message: %q", r.ID, f.Message)
				}
			}
			if fs := findings(t, r.ID, r.Bad); len(fs) == 0 {
				t.Errorf("%s: its bad example is not flagged:\n%s", r.ID, r.Bad.Text)
			} else if fs[0].Pos.Line == 0 {
				t.Errorf("%s: finding has no line: %+v", r.ID, fs[0])
			}
			if fs := findings(t, r.ID, r.Good); len(fs) > 0 {
				t.Errorf("%s: its good example is flagged: %+v\n%s", r.ID, fs, r.Good.Text)
			}
		})
	}
}

// TestHomeMountWithNetwork is the acceptance case: ~ read-write with the
// network open gives the parent (home) mount, the network and the exposed
// credentials, at positions in the policy file.
func TestHomeMountWithNetwork(t *testing.T) {
	e := lint.Example{Kind: "policy", Text: `version: "v1"
servers: wide: {
	image: "x:1"
	mounts: [{source: "~", target: "/home/me", mode: "rw"}]
	network: allow: ["api.github.com:443"]
}
`}
	rep := lint.Run(targets(t, e), lint.Options{})
	got := map[string]string{}
	for _, f := range rep.Findings {
		got[f.Rule] = f.Pos.String()
	}
	for rule, pos := range map[string]string{"MOUNT_HOME": ":4:11", "MOUNT_CREDENTIALS": ":4:11", "NETWORK_OPEN": ":5:19"} {
		if !strings.HasSuffix(got[rule], "mcpolicy.cue"+pos) {
			t.Errorf("%s at %q, want mcpolicy.cue%s (all: %v)", rule, got[rule], pos, got)
		}
	}
}

// TestEgressAllowlist: each entry is judged on its own line; the rules
// that look at the network as a whole still fire for an allowlist, name
// its destinations and point at the entry written first.
func TestEgressAllowlist(t *testing.T) {
	e := withProjectFiles(lint.Example{Kind: "policy", Text: `version: "v1"
servers: s: {
	image: "x:1"
	mounts: [{source: ".", target: "/w"}]
	network: allow: [
		"api.github.com:443",
		"*.example.com:443",
		"*.github.io:443",
		"github.io:443",
		"169.254.169.254:80",
		"127.0.0.1:5432",
		"[::1]:8080",
		"10.0.0.5:8080",
		"100.64.1.2:80",
		"8.8.8.8:53",
	]
}
`}, ".env", "TOKEN=x")
	rep := lint.Run(targets(t, e), lint.Options{})
	got := map[string][]string{}
	for _, f := range rep.Findings {
		_, at, _ := strings.Cut(f.Pos.String(), "mcpolicy.cue")
		got[f.Rule] = append(got[f.Rule], at+" "+f.Message)
	}
	want := map[string][]string{
		"EGRESS_WILDCARD":      {":7:3 *.example.com:443 allows every name under example.com", ":8:3 *.github.io:443 allows every name under github.io"},
		"EGRESS_WILDCARD_APEX": {":7:3 *.example.com:443 does not match example.com itself (a wildcard never matches its apex): list example.com:443"},
		"EGRESS_PRIVATE": {":10:3 169.254.169.254:80 is not on the internet: through the proxy the server reaches the cloud instance metadata service",
			":11:3 127.0.0.1:5432 is not on the internet: through the proxy the server reaches the host's own services",
			":12:3 [::1]:8080 is not on the internet: through the proxy the server reaches the host's own services",
			":13:3 10.0.0.5:8080 is not on the internet: through the proxy the server reaches the LAN's services",
			":14:3 100.64.1.2:80 is not on the internet: through the proxy the server reaches a carrier-grade NAT network"},
		"NETWORK_OPEN":        {":6:3 network open: egress to *.example.com:443, *.github.io:443, 10.0.0.5:8080 and 7 more"},
		"SECRETS_WITH_EGRESS": {":4:11 mount /w holds secrets that egress to *.example.com:443, *.github.io:443, 10.0.0.5:8080 and 7 more could carry away: .env"},
		"GRANT_COUNT":         {":2:10 11 grants: 1 ro mount, 10 egress hosts, more than 4"},
	}
	for rule, ws := range want {
		if len(got[rule]) != len(ws) {
			t.Errorf("%s: %d findings, want %d:\n%s", rule, len(got[rule]), len(ws), strings.Join(got[rule], "\n"))
			continue
		}
		sort.Strings(got[rule])
		sort.Strings(ws)
		for i, w := range ws {
			if !strings.HasPrefix(got[rule][i], w) {
				t.Errorf("%s: got %q, want it to start with %q", rule, got[rule][i], w)
			}
		}
	}
	if n := rep.Servers[0].Grants; n != 11 {
		t.Errorf("summary counts %d grants, want 11 (one per egress entry)", n)
	}
}

// TestEgressPlanFromJSON: a plan read back from JSON has no entry
// positions; the egress rules still fire, at the server's position.
func TestEgressPlanFromJSON(t *testing.T) {
	ts := targets(t, lint.Lookup("EGRESS_PRIVATE").Bad)
	var p compiler.Plan
	if err := json.Unmarshal(ts[0].Plan.JSON(), &p); err != nil {
		t.Fatal(err)
	}
	ts[0].Plan = &p
	rep := lint.Run(ts, lint.Options{Only: []string{"EGRESS_PRIVATE", "NETWORK_OPEN"}})
	if len(rep.Findings) != 2 {
		t.Fatalf("findings: %+v", rep.Findings)
	}
	for _, f := range rep.Findings {
		if f.Pos != ts[0].Pos {
			t.Errorf("%s at %v, want the server's position %v", f.Rule, f.Pos, ts[0].Pos)
		}
	}
}

// withProjectFiles adds project files to an example: name, content, ...
func withProjectFiles(e lint.Example, kv ...string) lint.Example {
	e.Files = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		e.Files[kv[i]] = kv[i+1]
	}
	return e
}

func TestWaivers(t *testing.T) {
	e := lint.Example{Kind: "policy", Text: `version: "v1"
servers: s: {
	image: "x:1"
	network: allow: ["api.github.com:443"]
	waive: [
		{rule: "NETWORK_OPEN", reason: "fetches releases"},
		{rule: "ROOT_USER", reason: "old", expires: "2020-01-01"},
		{rule: "NO_SUCH_RULE", reason: "typo"},
	]
}
`}
	rep := lint.Run(targets(t, e), lint.Options{})
	var text bytes.Buffer
	lint.Write(&text, rep, "text", "test")
	out := text.String()
	for _, want := range []string{"NETWORK_OPEN warning network open: egress to api.github.com:443 (waived: fetches releases)",
		"WAIVER error waiver of ROOT_USER expired on 2020-01-01", `WAIVER error waiver names unknown rule "NO_SUCH_RULE"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestSARIF checks the structure SARIF 2.1.0 requires of our output: the
// version and schema, a driver with the rules, results that are an array
// (never null), each with a known ruleId, a level and a location whose
// region starts at line and column 1 or more. The schema itself is checked
// in sarif_schema_test.go; this test says what the schema cannot: that the
// rules and locations are ours.
func TestSARIF(t *testing.T) {
	for _, e := range []lint.Example{lint.Lookup("MOUNT_HOME").Bad, lint.Lookup("MOUNT_HOME").Good} {
		var buf bytes.Buffer
		if err := lint.Write(&buf, lint.Run(targets(t, e), lint.Options{}), "sarif", "test"); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Schema  string `json:"$schema"`
			Version string `json:"version"`
			Runs    []struct {
				Tool struct {
					Driver struct {
						Name  string `json:"name"`
						Rules []struct {
							ID string `json:"id"`
						} `json:"rules"`
					} `json:"driver"`
				} `json:"tool"`
				Results *[]struct {
					RuleID    string                `json:"ruleId"`
					Level     string                `json:"level"`
					Message   struct{ Text string } `json:"message"`
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation struct{ URI string }                 `json:"artifactLocation"`
							Region           struct{ StartLine, StartColumn int } `json:"region"`
						} `json:"physicalLocation"`
					} `json:"locations"`
				} `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Version != "2.1.0" || !strings.Contains(doc.Schema, "sarif-schema-2.1.0") || len(doc.Runs) != 1 {
			t.Fatalf("header: %s", buf.String()[:200])
		}
		run := doc.Runs[0]
		if run.Tool.Driver.Name != "mcpolicy" || len(run.Tool.Driver.Rules) != len(lint.Registry()) {
			t.Errorf("driver: %+v", run.Tool.Driver)
		}
		if run.Results == nil {
			t.Fatalf("results is null:\n%s", buf.String())
		}
		for _, r := range *run.Results {
			if lint.Lookup(r.RuleID) == nil || (r.Level != "error" && r.Level != "warning" && r.Level != "note") ||
				len(r.Locations) != 1 || r.Locations[0].PhysicalLocation.Region.StartLine < 1 ||
				r.Locations[0].PhysicalLocation.Region.StartColumn < 1 || r.Locations[0].PhysicalLocation.ArtifactLocation.URI == "" {
				t.Errorf("result: %+v", r)
			}
		}
	}
}

// TestRulesDocIsCurrent: docs/rules.md is generated from the registry.
func TestRulesDocIsCurrent(t *testing.T) {
	got, err := os.ReadFile("../../docs/rules.md")
	if err != nil || string(got) != lint.Markdown(ruleexample.Says) {
		t.Errorf("docs/rules.md is stale: run `go run ./cmd/mcpolicy rules --format markdown > docs/rules.md` (%v)", err)
	}
}

// TestRWUnprotectedResolved: a read-write bind is judged by where it
// leads as well as by what it says: a link into .git is .git.
func TestRWUnprotectedResolved(t *testing.T) {
	for _, c := range []struct {
		name string
		e    lint.Example
		want string
	}{
		{"client bind through a symlink", withProjectFiles(lint.Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "docker", "args": ["run", "-i", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "1000:1000", "-v", "${PROJECT_PARENT}/proj/gitdir:/repo", "img:1"]}}}`},
			"gitdir", "-> .git", ".git/config", "[core]"), "read-write mount /repo is the protected ${PROJECT_PARENT}/proj/.git, through a symlink"},
		{"client bind of .git", withProjectFiles(lint.Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "docker", "args": ["run", "-i", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "1000:1000", "-v", "${PROJECT_PARENT}/proj/.git/hooks:/hooks", "img:1"]}}}`},
			".git/hooks/x", "#"), "read-write mount /hooks is ${PROJECT_PARENT}/proj/.git/hooks, inside the protected ${PROJECT_PARENT}/proj/.git"},
		{"git server", withProjectFiles(lint.Example{Kind: "policy", Text: `version: "v1"
servers: s: {
	image: "x:1"
	mounts: [{source: ".git", target: "/repo.git", mode: "rw"}]
	unprotect: [".git"]
}
`}, ".git/config", "[core]"), "read-write mount /repo.git is the protected ${PROJECT_PARENT}/proj/.git"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := targets(t, c.e)
			fs := lint.Run(ts, lint.Options{Only: []string{"RW_UNPROTECTED"}}).Findings
			base := filepath.Dir(ts[0].ProjectRoot)
			if ts[0].ProjectRoot == "" {
				base = filepath.Dir(filepath.Dir(ts[0].File))
			}
			want := strings.ReplaceAll(c.want, "${PROJECT_PARENT}", base)
			if len(fs) == 0 || fs[0].Message != want {
				t.Errorf("findings: %+v\nwant %q", fs, want)
			}
		})
	}
}

// TestMaxExposure: --max-exposure reports each server above it, naming the
// heaviest grant, as an error; at or under it, nothing; 0 is no limit.
func TestMaxExposure(t *testing.T) {
	ts := targets(t, lint.Lookup("MOUNT_HOME").Bad)
	score := lint.Run(ts, lint.Options{}).Servers[0].Exposure
	if score <= 0 {
		t.Fatalf("exposure %d for a home mount", score)
	}
	for _, c := range []struct {
		max  int
		want bool
	}{{0, false}, {score, false}, {score - 1, true}} {
		var got []lint.Finding
		for _, f := range lint.Run(ts, lint.Options{MaxExposure: c.max}).Findings {
			if f.Rule == lint.ExposureID {
				got = append(got, f)
			}
		}
		if (len(got) > 0) != c.want {
			t.Errorf("--max-exposure %d with a score of %d: %v", c.max, score, got)
		} else if c.want && (got[0].Level != "error" || !strings.Contains(got[0].Message, "home") || got[0].Pos.Line == 0) {
			t.Errorf("--max-exposure %d: %+v, want an error at the server naming the home mount", c.max, got[0])
		}
	}
}

// TestRWNestedProtected: a protected name below a read-write mount's top
// is reported by its path there, the outermost that stays protected; not
// one at the top (RW_UNPROTECTED's), not one a read-only mount covers, not
// one the policy unprotects; one inside a nested read-write mount is that
// mount's, relative to it.
func TestRWNestedProtected(t *testing.T) {
	files := []string{".git/config", "[core]", ".vscode/.env", "x", "vendor/lib/.git/config", "[core]",
		"sub/mod/.git", "gitdir: ../../.git/modules/mod", "app/.vscode/settings.json", "{}", "app/.vscode/.mcp.json", "{}",
		"app/src/.envrc", "echo", "deep/a/b/c/.mcp.json", "{}"}
	for _, c := range []struct {
		name, servers, want string
	}{
		{"project", `mounts: [{source: ".", target: "/w", mode: "rw"}]`,
			"read-write mount /w holds protected names below its top, writable there: app/.vscode, app/src/.envrc, deep/a/b/c/.mcp.json, sub/mod/.git, vendor/lib/.git"},
		{"read-only project", `mounts: [{source: ".", target: "/w"}]`, ""},
		{"covered", `mounts: [{source: ".", target: "/w", mode: "rw"}, {source: "vendor", target: "/w/vendor"}, {source: "app", target: "/w/app"}, {source: "sub", target: "/w/sub"}, {source: "deep", target: "/w/deep"}]`,
			""},
		{"unprotected", `mounts: [{source: ".", target: "/w", mode: "rw"}]
	unprotect: [".git", ".vscode", ".envrc"]`, // .envrc is .env* too
			"read-write mount /w holds protected names below its top, writable there: .vscode/.env, app/.vscode/.mcp.json, app/src/.envrc, deep/a/b/c/.mcp.json"},
		{"nested rw", `mounts: [{source: "app", target: "/app", mode: "rw"}]`,
			"read-write mount /app holds protected names below its top, writable there: src/.envrc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := withProjectFiles(lint.Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\t" + c.servers + "\n}\n"}, files...)
			fs := lint.Run(targets(t, e), lint.Options{Only: []string{"RW_NESTED_PROTECTED"}}).Findings
			var got []string
			for _, f := range fs {
				got = append(got, f.Message)
			}
			if want := []string{c.want}; c.want == "" && len(got) != 0 || c.want != "" && !slices.Equal(got, want) {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), c.want)
			}
		})
	}
}

// TestRWNestedBounded: the walk for nested protected names is its own, so
// node_modules cannot spend its bounds (not its entries, nor the symlink
// walk's link budget); a walk that stops at its bound before finding any
// says so; the symlink walk stopped by its link budget says it stopped.
func TestRWNestedBounded(t *testing.T) {
	const rw = `mounts: [{source: ".", target: "/w", mode: "rw"}]`
	run := func(t *testing.T, only []string, files []string) []string {
		t.Helper()
		e := withProjectFiles(lint.Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\t" + rw + "\n}\n"}, files...)
		var got []string
		for _, f := range lint.Run(targets(t, e), lint.Options{Only: only}).Findings {
			got = append(got, f.Rule+": "+f.Message)
		}
		return got
	}
	nested := "RW_NESTED_PROTECTED: read-write mount /w holds protected names below its top, writable there: vendor/lib/.git"

	t.Run("links", func(t *testing.T) {
		files := []string{"vendor/lib/.git/config", "[core]", "node_modules/pkg/index.js", "", "a/out", "-> ../../home"}
		for i := 1; i <= 1001; i++ { // one past the link budget
			files = append(files, fmt.Sprintf("node_modules/.bin/t%d", i), "-> ../pkg/index.js")
		}
		got := run(t, []string{"RW_NESTED_PROTECTED", "SYMLINK_ESCAPE"}, files)
		if len(got) != 2 || got[0] != nested || !strings.Contains(got[1], "SYMLINK_ESCAPE: 1 symlink(s) in /w") ||
			!strings.Contains(got[1], "the scan stopped at its bound") {
			t.Errorf("findings:\n%s\nwant:\n%s\nand SYMLINK_ESCAPE for a/out saying the scan stopped", strings.Join(got, "\n"), nested)
		}
	})
	t.Run("node_modules", func(t *testing.T) {
		defer lint.SetWalkEntries(100)()
		files := []string{"vendor/lib/.git/config", "[core]"}
		for i := 0; i < 200; i++ {
			files = append(files, fmt.Sprintf("node_modules/big/f%03d", i), "")
		}
		if got := run(t, []string{"RW_NESTED_PROTECTED"}, files); !slices.Equal(got, []string{nested}) {
			t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), nested)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		defer lint.SetWalkEntries(100)()
		files := []string{"vendor/lib/.git/config", "[core]"}
		for i := 0; i < 200; i++ { // src sorts before vendor
			files = append(files, fmt.Sprintf("src/f%03d", i), "")
		}
		want := "RW_NESTED_PROTECTED: read-write mount /w: its scan stopped at its bound after 100 entries (node_modules not entered), so protected names below its top (a nested repository's .git, a sub-project's .vscode) may be writable there unseen"
		if got := run(t, []string{"RW_NESTED_PROTECTED"}, files); !slices.Equal(got, []string{want}) {
			t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
		}
	})
	t.Run("within bounds", func(t *testing.T) {
		defer lint.SetWalkEntries(100)()
		if got := run(t, []string{"RW_NESTED_PROTECTED"}, []string{"src/a.go", "", "README", ""}); len(got) != 0 {
			t.Errorf("a small tree with no nested names: %q", got)
		}
	})
}

// TestRunsNext: a read-write grant that is, lies in or holds what runs
// next outside the sandbox is an error naming it; read-only, or beside
// them, it is not; the folder that holds the mcpolicy-launch PATH finds
// is named by its resolved path.
func TestRunsNext(t *testing.T) {
	for _, c := range []struct {
		name, mounts string
		files        []string
		want         string // "" for no finding
	}{
		{"holds", `[{source: "~/.config", target: "/c", mode: "rw"}]`, []string{"~/.config/x", ""},
			"read-write mount ${HOME}/.config covers what runs next outside the sandbox: ~/.config/fish, ~/.config/powershell, ~/.config/plasma-workspace, ~/.config/autostart, ~/.config/systemd/user, ~/.config/environment.d, and 12 more"},
		{"holds caches", `[{source: "~/.cache", target: "/c", mode: "rw"}]`, []string{"~/.cache/x", ""},
			"read-write mount ${HOME}/.cache covers what runs next outside the sandbox: ~/.cache/go-build, ~/.cache/pre-commit"},
		{"a build cache", `[{source: "~/.cache/go-build", target: "/c", mode: "rw"}]`, []string{"~/.cache/go-build/README", ""},
			"read-write mount ${HOME}/.cache/go-build covers what runs next outside the sandbox: ~/.cache/go-build"},
		{"a module cache", `[{source: "~/go/pkg/mod/example.com", target: "/c", mode: "rw"}]`, []string{"~/go/pkg/mod/example.com/x", ""},
			"read-write mount ${HOME}/go/pkg/mod/example.com covers what runs next outside the sandbox: ~/go/pkg/mod"},
		{"a version manager", `[{source: "~/.nvm", target: "/c", mode: "rw"}]`, []string{"~/.nvm/nvm.sh", ""},
			"read-write mount ${HOME}/.nvm covers what runs next outside the sandbox: ~/.nvm"},
		{"cargo", `[{source: "~/.cargo/registry", target: "/c", mode: "rw"}]`, []string{"~/.cargo/registry/x", ""},
			"read-write mount ${HOME}/.cargo/registry covers what runs next outside the sandbox: ~/.cargo"},
		{"python user site", `[{source: "~/.local/lib/python3.12/site-packages", target: "/c", mode: "rw"}]`, []string{"~/.local/lib/python3.12/site-packages/x.pth", ""},
			"read-write mount ${HOME}/.local/lib/python3.12/site-packages covers what runs next outside the sandbox: ~/.local/lib"},
		{"an MCP client config", `[{source: "~/.claude.json", target: "/c", mode: "rw"}]`, []string{"~/.claude.json", "{}"},
			"read-write mount ${HOME}/.claude.json covers what runs next outside the sandbox: ~/.claude.json"},
		{"an MCP client folder", `[{source: "~/Library/Application Support/Claude", target: "/c", mode: "rw"}]`, []string{"~/Library/Application Support/Claude/claude_desktop_config.json", "{}"},
			"read-write mount ${HOME}/Library/Application Support/Claude covers what runs next outside the sandbox: ~/Library/Application Support/Claude"},
		{"an editor", `[{source: "~/.vscode/extensions", target: "/c", mode: "rw"}]`, []string{"~/.vscode/extensions/x", ""},
			"read-write mount ${HOME}/.vscode/extensions covers what runs next outside the sandbox: ~/.vscode"},
		{"lies in", `[{source: "~/go/bin/sub", target: "/c", mode: "rw"}]`, []string{"~/go/bin/sub/x", ""},
			"read-write mount ${HOME}/go/bin/sub covers what runs next outside the sandbox: ~/go/bin"},
		{"a file", `[{source: "~/.zshrc", target: "/c", mode: "rw"}]`, []string{"~/.zshrc", ""},
			"read-write mount ${HOME}/.zshrc covers what runs next outside the sandbox: ~/.zshrc"},
		{"read-only", `[{source: "~/.local/bin", target: "/c"}]`, []string{"~/.local/bin/x", ""}, ""},
		{"beside", `[{source: "~/.local/share/app", target: "/c", mode: "rw"}]`, []string{"~/.local/share/app/x", ""}, ""},
		{"beside a cache", `[{source: "~/.cache/app", target: "/c", mode: "rw"}]`, []string{"~/.cache/app/x", ""}, ""},
		{"holds shared data", `[{source: "~/.local/share", target: "/c", mode: "rw"}]`, []string{"~/.local/share/x", ""},
			"read-write mount ${HOME}/.local/share covers what runs next outside the sandbox: ~/.local/share/applications, ~/.local/share/pnpm, ~/.local/share/mise, ~/.local/share/nvim"},
		{"launcher", `[{source: "tools", target: "/c", mode: "rw"}]`, []string{"tools/mcpolicy-launch", "#!/bin/sh"},
			"read-write mount ${PROJECT_ROOT}/tools covers what runs next outside the sandbox: ${PROJECT}/tools/mcpolicy-launch (mcpolicy's own)"},
		{"launcher read-only", `[{source: "tools", target: "/c"}]`, []string{"tools/mcpolicy-launch", "#!/bin/sh"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := withProjectFiles(lint.Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\tmounts: " + c.mounts + "\n}\n"}, c.files...)
			ts := targets(t, e)
			tools := filepath.Join(ts[0].ProjectRoot, "tools")
			os.Chmod(filepath.Join(tools, "mcpolicy-launch"), 0o755)
			t.Setenv("PATH", tools)
			var got []string
			for _, f := range lint.Run(ts, lint.Options{Only: []string{"MOUNT_RUNS_NEXT"}}).Findings {
				got = append(got, f.Message)
			}
			real, _ := filepath.EvalSymlinks(ts[0].ProjectRoot)
			want := strings.ReplaceAll(c.want, "${PROJECT}", real)
			if c.want == "" && len(got) != 0 || c.want != "" && !slices.Equal(got, []string{want}) {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
			}
		})
	}
}

// TestRootGroup: a policy's gid 0 is root's group on the host under a root
// launcher or a rootful engine: ROOT_USER says so; another gid does not.
func TestRootGroup(t *testing.T) {
	for user, want := range map[string]string{"1000:0": "runs in root's group (gid 0)", "0:0": "runs as uid 0", "1000:1000": ""} {
		e := lint.Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {image: \"x:1\", user: \"" + user + "\"}\n"}
		var got []string
		for _, f := range findings(t, "ROOT_USER", e) {
			got = append(got, f.Message)
		}
		if (want == "") != (len(got) == 0) || want != "" && !strings.Contains(strings.Join(got, "; "), want) {
			t.Errorf("user %s: ROOT_USER %q, want %q", user, got, want)
		}
	}
}
