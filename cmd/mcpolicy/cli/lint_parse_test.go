package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintReadsPastUnreadableConfigs: lint --client a --client broken
// --client c lints a and c, reports broken's position as a PARSE error and
// c's repairs as PARSE notes, in every format, and exits 1 (not 2, "invalid
// policy"; docs/exit-codes.md), whatever it found and whatever --fail-on
// says: the lint is incomplete. Issue 16.
func TestLintReadsPastUnreadableConfigs(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	broken := filepath.Join(dir, "broken.json")
	c := filepath.Join(dir, "c.json")
	missing := filepath.Join(dir, "missing.json")
	writeFile(t, a, `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me"]}}}`+"\n")
	writeFile(t, broken, "{\n  \"mcpServers\": {\n    \"b\": {\"command\": \"npx\" \"args\": []}\n  }\n}\n")
	writeFile(t, c, "# from the README\n\"mcpServers\": {\n  \"db\": {\"command\": \"uvx\", \"args\": [\"mcp-server-sqlite\", \"--db-path\", \"C:\\Users\\me\\test.db\"]}\n}\n")

	code, out, errs := run(t, "lint", "--no-policy", "--client", a, "--client", broken, "--client", c)
	if code != ExitError {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitError, out, errs)
	}
	for _, want := range []string{
		a + ":1:", // a is linted
		broken + ":3:28: PARSE error not valid JSON, even after repairs",
		c + ":1:1: PARSE info a # comment",
		c + ":2:1: PARSE info a fragment",
		c + ":3:71: PARSE info unescaped backslashes",
		c + ":3:21: UNCONFINED_SERVER", // c is linted, at positions in the file as written
		"fs (" + a + "):",
		"db (" + c + "):",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lint output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "not linted (see PARSE): "+broken+":3:28") {
		t.Errorf("stderr: %q", errs)
	}

	// Every format carries the notes and the error.
	for _, format := range []string{"json", "github", "sarif"} {
		code, out, _ := run(t, "lint", "--no-policy", "--client", a, "--client", broken, "--client", c, "--format", format)
		if code != ExitError {
			t.Errorf("%s: exit %d", format, code)
		}
		var parse []string
		switch format {
		case "json":
			var rep struct {
				Findings []struct {
					Rule, Severity, Server, Message string
					Pos                             struct {
						File      string
						Line, Col int
					}
				}
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Findings {
				if f.Rule == "PARSE" {
					parse = append(parse, f.Severity+" "+filepath.Base(f.Pos.File)+":"+itoa(f.Pos.Line)+":"+itoa(f.Pos.Col)+" "+f.Server)
				}
			}
		case "github":
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "title=PARSE::") {
					lvl, _, _ := strings.Cut(strings.TrimPrefix(l, "::"), " ")
					file, _, _ := strings.Cut(strings.TrimPrefix(l[strings.Index(l, "file="):], "file="), ",")
					parse = append(parse, lvl+" "+filepath.Base(file))
				}
			}
		case "sarif":
			var doc struct {
				Runs []struct {
					Tool struct {
						Driver struct{ Rules []struct{ ID string } }
					}
					Results []struct {
						RuleID    string
						Level     string
						Locations []struct {
							PhysicalLocation struct {
								ArtifactLocation struct{ URI string }
								Region           struct{ StartLine, StartColumn int }
							}
						}
					}
				}
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			described := false
			for _, r := range doc.Runs[0].Tool.Driver.Rules {
				described = described || r.ID == "PARSE"
			}
			if !described {
				t.Errorf("sarif: no PARSE rule")
			}
			for _, r := range doc.Runs[0].Results {
				if r.RuleID == "PARSE" {
					l := r.Locations[0].PhysicalLocation
					parse = append(parse, r.Level+" "+filepath.Base(l.ArtifactLocation.URI)+":"+itoa(l.Region.StartLine)+":"+itoa(l.Region.StartColumn))
				}
			}
		}
		want := map[string]string{
			"json":   "error broken.json:3:28 |info c.json:1:1 |info c.json:2:1 |info c.json:3:71 ",
			"github": "error broken.json|notice c.json|notice c.json|notice c.json",
			"sarif":  "error broken.json:3:28|note c.json:1:1|note c.json:2:1|note c.json:3:71",
		}[format]
		if got := strings.Join(parse, "|"); got != want {
			t.Errorf("%s: PARSE findings %q, want %q\n%s", format, got, want, out)
		}
	}

	// A file that cannot be opened is one too; --fail-on never does not
	// make an incomplete lint a success.
	if code, out, errs := run(t, "lint", "--no-policy", "--client", missing, "--client", c, "--fail-on", "never"); code != ExitError ||
		!strings.Contains(out, missing+": PARSE error cannot open: ") || !strings.Contains(out, "db ("+c+")") {
		t.Errorf("missing file: exit %d\n%s%s", code, out, errs)
	}
	// Repairs alone are notes: below the default --fail-on.
	if code, out, errs := run(t, "lint", "--no-policy", "--client", c, "--fail-on", "error"); code != ExitOK {
		t.Errorf("repaired file: exit %d\n%s%s", code, out, errs)
	}
	// Only broken: still 1, and its position.
	if code, out, errs := run(t, "lint", "--no-policy", "--client", broken); code != ExitError || !strings.Contains(out, broken+":3:28: PARSE error") {
		t.Errorf("broken alone: exit %d\n%s%s", code, out, errs)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestCheckReadsPastUnreadableConfigs: check, like lint, reports a client
// config it cannot read as a PARSE error at its position (never exit 2,
// "invalid policy": a client config is not a policy), checks the others,
// and exits 1, the check being incomplete, whatever drift it found.
func TestCheckReadsPastUnreadableConfigs(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	fakeLauncher(t)
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: "code-index": {
	image: "code-index:1.7.2"
	mounts: [{source: "shop", target: "/workspace"}]
}
`)
	os.MkdirAll(filepath.Join(dir, "shop"), 0o755)
	// The engine entry pins the built artefact.
	if code, out, errs := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "client", "vscode", "-p", dir, "--write"); code != ExitOK {
		t.Fatalf("write: exit %d\n%s%s", code, out, errs)
	}
	cfg := filepath.Join(dir, ".vscode", "mcp.json")
	broken := filepath.Join(dir, "broken.json")
	missing := filepath.Join(dir, "missing.json")
	writeFile(t, broken, "{\n  \"mcpServers\": {\n    \"b\": {\"command\": \"npx\" \"args\": []}\n  }\n}\n")

	code, out, errs := run(t, "check", "-p", dir, "--client", broken, "--client", cfg)
	if code != ExitError || !strings.Contains(out, broken+":3:28: PARSE error ") || !strings.Contains(out, "the file is not checked") ||
		strings.Contains(out, "no drift") || !strings.Contains(errs, "not checked (see PARSE): "+broken+":3:28") {
		t.Errorf("broken, then a clean config: exit %d, want %d\n%s%s", code, ExitError, out, errs)
	}
	// The next file is checked: its drift is reported, and 1 still wins.
	b, _ := os.ReadFile(cfg)
	writeFile(t, cfg, strings.Replace(string(b), "target=/workspace,readonly", "target=/workspace", 1))
	code, out, errs = run(t, "check", "-p", dir, "--client", broken, "--client", cfg)
	if code != ExitError || !strings.Contains(out, `entry "code-index" widened MOUNT_RW`) || !strings.Contains(out, broken+":3:28: PARSE error") {
		t.Errorf("broken, then a drifted config: exit %d, want %d\n%s%s", code, ExitError, out, errs)
	}
	// A file that cannot be opened is the same, and alone it is 1 too.
	if code, out, errs := run(t, "check", "-p", dir, "--client", missing); code != ExitError || !strings.Contains(out, missing+": PARSE error cannot open: ") {
		t.Errorf("missing: exit %d, want %d\n%s%s", code, ExitError, out, errs)
	}
	// Without an unreadable file, drift is still 6.
	if code, out, _ := run(t, "check", "-p", dir, "--client", cfg); code != ExitWidened {
		t.Errorf("drift alone: exit %d, want %d\n%s", code, ExitWidened, out)
	}
}
