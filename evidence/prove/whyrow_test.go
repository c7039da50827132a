package prove

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/why"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/project"
)

// The tests in this file need no sandbox either: each row's `mcpolicy
// why` answer, and its comparison with prove's expectation, come from the
// plan and this machine's files.

const whyPolicy = `version: "v1"

servers: fs: {
	description: "a file server"
	image:   "fs:1"
	command: ["/bin/true"]
	backends: ["bwrap", "docker", "landlock"]
	mounts: [
		{source: ".", target: "/workspace"},
		{source: "data", target: "/workspace/data", mode: "rw"},
	]
}
`

// posOf is where needle starts in the policy, as why writes a position.
func posOf(t *testing.T, needle string) string {
	t.Helper()
	for i, line := range strings.Split(whyPolicy, "\n") {
		if c := strings.Index(line, needle); c >= 0 {
			return fmt.Sprintf("mcpolicy.cue:%d:%d", i+1, c+1)
		}
	}
	t.Fatalf("%q is not in the policy", needle)
	return ""
}

// whyView compiles whyPolicy in the fixture's project, with data/
// holding a .git (a protected name of the read-write mount, which
// Landlock refuses) when protected is set: the plan prove runs.
func whyView(t *testing.T, protected bool) planView {
	t.Helper()
	var beside []string
	if protected {
		beside = append(beside, "proj/data/.git")
	}
	f := newFixture(t, beside...)
	if err := os.WriteFile(filepath.Join(f.root, "mcpolicy.cue"), []byte(whyPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	proj, err := project.Discover(f.root)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := proj.Compile(f.home)
	if err != nil || len(plans) != 1 {
		t.Fatalf("compile: %v (%d plans)", err, len(plans))
	}
	return planView{plans[0], compiler.Machine{ProjectRoot: f.root, Home: f.home}}
}

// whyRows are the rows prove makes for the plan on backend, as Run makes
// them but for the kernel's answer: the expectation and why's.
func whyRows(v planView, backend string, hostView bool) ([]Row, map[string]Row) {
	var rows []Row
	by := map[string]Row{}
	for _, a := range attempts(v, nil, "127.0.0.1:1", testPlanted, nil) {
		if a.skip != "" {
			continue
		}
		row := Row{What: a.what, Op: string(a.op), Target: a.target, Expect: a.expect, Why: a.why, Agrees: true}
		if hostView {
			row.Target = a.host
		}
		askWhy(&row, v, backend, hostView, a, "mcpolicy.cue")
		row.Result = "ENOENT"
		if a.expect == "allowed" {
			row.Result = "ok"
		}
		rows = append(rows, row)
		by[a.what] = row
	}
	return rows, by
}

func TestRowsNameWhyGrantsAndStops(t *testing.T) {
	project, data := posOf(t, `{source: "."`), posOf(t, `{source: "data"`)
	server := posOf(t, "fs: {") // network: none is written nowhere: the server's position
	roMount := "ro mount ${PROJECT_ROOT} -> /workspace (" + project + ")"
	rwMount := "rw mount ${PROJECT_ROOT}/data -> /workspace/data (" + data + ")"
	for _, c := range []struct {
		backend  string
		hostView bool
		noGrant  string   // the rule for a path outside every grant
		rwGrants []string // what grants a read of the read-write mount
	}{
		{"bwrap", false, "no-grant", []string{rwMount}},
		{"docker", false, "image-root", []string{rwMount}},
		{"podman", false, "image-root", []string{rwMount}},
		// Landlock's rights add up: both mounts grant the read.
		{"landlock", true, "no-grant", []string{roMount, rwMount}},
	} {
		t.Run(c.backend, func(t *testing.T) {
			v := whyView(t, !c.hostView)
			rows, by := whyRows(v, c.backend, c.hostView)
			for _, row := range rows {
				if !row.WhyAgrees || row.WhyNote != "" {
					t.Errorf("%s %s: why disagrees with a plain plan: %s", row.Op, row.Target, row.WhyNote)
				}
				if row.Expect == "allowed" && len(row.Stop) > 0 || row.Expect == "denied" && len(row.Grant) > 0 {
					t.Errorf("%s %s (%s): grant %q, stop %q", row.Op, row.Target, row.Expect, row.Grant, row.Stop)
				}
			}
			want := func(what string, grant []string, stops ...string) {
				t.Helper()
				row, ok := by[what]
				if !ok {
					t.Fatalf("no row %q", what)
				}
				if strings.Join(row.Grant, "\n") != strings.Join(grant, "\n") {
					t.Errorf("%s: grant %q, want %q", what, row.Grant, grant)
				}
				if len(row.Stop) != len(stops) {
					t.Fatalf("%s: stop %q, want %q...", what, row.Stop, stops)
				}
				for i, s := range stops {
					if !strings.HasPrefix(row.Stop[i], s) {
						t.Errorf("%s: stop %q, want it to start %q", what, row.Stop[i], s)
					}
				}
			}
			want("credentials", nil, c.noGrant+": ")
			want("shadow passwords", nil, c.noGrant+": ")
			want("the granted ro mount /workspace", []string{roMount})
			want("the granted rw mount /workspace/data", c.rwGrants)
			want("a write into the read-only mount /workspace", nil, "read-only-mount ("+project+"): mount /workspace is read-only")
			want("TCP to a listener on the host's loopback", nil, "direct-connection: ", "network-none ("+server+"): ")
			want("the invoker's environment (any readable /proc/PID/environ)", nil, "env-cleared: ")
			if !c.hostView {
				// Landlock has no protected layer in why; the bind is the
				// sandbox backends'.
				want("protected .git", nil, "protected: ")
			}
			if r := by["the root folder"]; r.Expect != "" || r.WhySays == "" || !r.WhyAgrees {
				t.Errorf("the root folder, shown only: %+v", r)
			}
			// The report shows the grant with its position, the stop's rule.
			rep := &Report{Server: "fs", Backends: []BackendReport{{Backend: c.backend, Rows: rows}}}
			md := string(rep.Markdown())
			for _, s := range []string{"| grant: " + roMount + " |", "| stop: read-only-mount (" + project + ") |", "| stop: " + c.noGrant + " |"} {
				if !strings.Contains(md, s) {
					t.Errorf("the report lacks %q:\n%s", s, md)
				}
			}
			if strings.Contains(md, "why disagrees") || rep.WhyDisagreements() != 0 {
				t.Errorf("a plain plan reported as a why disagreement:\n%s", md)
			}
			checkAligned(t, md)
		})
	}
}

// A wrong answer from why — the seam's — is flagged on the row, counted,
// and shown in the report; it is not the kernel's disagreement.
func TestWrongWhyAnswerIsFlagged(t *testing.T) {
	v := whyView(t, false)
	defer func(ask func([]*compiler.Plan, why.Target, why.Machine, string) (*why.Answer, error)) { whyAsk = ask }(whyAsk)
	answer := func(vd why.Verdict) {
		whyAsk = func(plans []*compiler.Plan, _ why.Target, _ why.Machine, backend string) (*why.Answer, error) {
			vd.Backend = backend
			return &why.Answer{Servers: []why.ServerAnswer{{Server: plans[0].Server, Backends: []why.Verdict{vd}}}}, nil
		}
	}

	// Everything readable and writable, through a grant the plan lacks.
	answer(why.Verdict{Reachable: true, Access: []why.Access{why.Read, why.Write}, Via: []why.Grant{{Kind: "rw mount", Summary: "${HOME} -> /home", Pos: position.Pos{File: "mcpolicy.cue", Line: 99, Col: 1}}}})
	rows, by := whyRows(v, "bwrap", false)
	c := by["credentials"]
	if c.WhyAgrees || !c.Agrees || c.Grant == nil || c.Grant[0] != "rw mount ${HOME} -> /home (mcpolicy.cue:99:1)" {
		t.Errorf("credentials, why says readable: %+v", c)
	}
	if !strings.Contains(c.WhyNote, "why says readable on bwrap, prove expects denied (outside every grant)") {
		t.Errorf("credentials' note: %q", c.WhyNote)
	}
	if r := by["the granted ro mount /workspace"]; !r.WhyAgrees {
		t.Errorf("an allowed read why also allows: %+v", r)
	}
	rep := &Report{Server: "fs", Backends: []BackendReport{{Backend: "bwrap", Rows: rows}}}
	n := rep.WhyDisagreements()
	if n == 0 || rep.Disagreements() != 0 {
		t.Errorf("why disagreements %d, kernel disagreements %d: want some, and none", n, rep.Disagreements())
	}
	md := string(rep.Markdown())
	for _, s := range []string{"grant: rw mount ${HOME} -> /home (mcpolicy.cue:99:1) ⚠️ **why disagrees**", fmt.Sprintf("disagree on %d rows", n), "- read credentials `" + c.Target + "`: why says readable on bwrap"} {
		if !strings.Contains(md, s) {
			t.Errorf("the report lacks %q:\n%s", s, md)
		}
	}
	checkAligned(t, md)

	// Nothing reachable: the reads the plan allows are flagged.
	answer(why.Verdict{Access: []why.Access{}, Stops: []why.Stop{{Rule: why.StopNoGrant, Detail: "made up", Pos: position.Pos{File: "mcpolicy.cue", Line: 1, Col: 1}}}})
	_, by = whyRows(v, "landlock", true)
	r := by["the granted ro mount /workspace"]
	if r.WhyAgrees || len(r.Stop) != 1 || r.Stop[0] != "no-grant (mcpolicy.cue:1:1): made up" || !strings.Contains(r.WhyNote, "why says not readable (no-grant) on landlock, prove expects allowed") {
		t.Errorf("an allowed read why denies: %+v", r)
	}
	if c := by["credentials"]; !c.WhyAgrees {
		t.Errorf("a denied read why denies: %+v", c)
	}

	// why says the backend refuses a plan it ran: flagged too.
	answer(why.Verdict{Access: []why.Access{}, Refused: "made up", Stops: []why.Stop{{Rule: why.StopRefused}}})
	_, by = whyRows(v, "bwrap", false)
	if c := by["the root folder"]; c.WhyAgrees || !strings.Contains(c.WhyNote, "why says bwrap refuses the plan") || len(c.Stop) != 1 || c.Stop[0] != "backend-refuses: made up" {
		t.Errorf("why refusing a backend that ran: %+v", c)
	}

	// No answer at all: said, not a disagreement.
	whyAsk = func([]*compiler.Plan, why.Target, why.Machine, string) (*why.Answer, error) {
		return &why.Answer{}, nil
	}
	_, by = whyRows(v, "bwrap", false)
	if c := by["credentials"]; !c.WhyAgrees || !strings.Contains(c.WhyNote, "why gave no answer") {
		t.Errorf("no answer from why: %+v", c)
	}
}

// checkAligned: every row of a backend's table has the header's cells.
func checkAligned(t *testing.T, md string) {
	t.Helper()
	cells := func(line string) int { return strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") }
	want := 0
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "| access |"):
			want = cells(line)
		case want > 0 && strings.HasPrefix(line, "|"):
			if cells(line) != want {
				t.Errorf("%d cells, the header has %d: %s", cells(line), want, line)
			}
		default:
			want = 0
		}
	}
}
