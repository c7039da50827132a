package findings

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/position"
)

var (
	rule   = Finding{Rule: "MOUNT_HOME", Level: Error, Server: "s", Pos: position.Pos{File: "p.cue", Line: 3, Col: 5}, Message: "mounts the home folder"}
	change = Finding{Rule: "MOUNT_RW", Level: Error, Server: "s", Pos: position.Pos{File: "p.cue", Line: 4, Col: 11}, Message: "mount /w: ro -> rw",
		Verdict: Widened, Against: position.Pos{File: "HEAD:p.cue", Line: 4, Col: 11}, Waived: "writes its cache"}
	gone = Finding{Rule: "SERVER_REMOVED", Level: Info, Server: "t", Message: "server removed", Verdict: Narrowed, Against: position.Pos{File: "HEAD:p.cue", Line: 9, Col: 1}}
)

func write(t *testing.T, format string, fs ...Finding) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, Doc{Findings: fs, Empty: "nothing"}, format); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestText: a rule's finding and a change each keep the line their pass
// printed before the printer was shared (goldens and docs hold them).
func TestText(t *testing.T) {
	got := write(t, "text", rule, change, gone)
	want := "p.cue:3:5: MOUNT_HOME error mounts the home folder\n" +
		"p.cue:4:11: s WIDENED MOUNT_RW: mount /w: ro -> rw (was HEAD:p.cue:4:11) [waived: writes its cache]\n" +
		"HEAD:p.cue:9:1: t NARROWED SERVER_REMOVED: server removed\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := write(t, "text"); got != "nothing\n" {
		t.Errorf("empty: %q", got)
	}
}

// TestGitHub: a waived finding is no annotation; an unwaived change is one
// at its new position, and values are escaped.
func TestGitHub(t *testing.T) {
	c := change
	c.Waived, c.Message = "", "a,b: 100%"
	got := write(t, "github", change, c, gone)
	want := "::error file=p.cue,line=4,col=11,title=MOUNT_RW::s: a,b: 100%25\n" +
		"::notice title=SERVER_REMOVED::t: server removed (was HEAD:p.cue:9:1)\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestMarkdown: a table per server, changes and findings each in theirs.
func TestMarkdown(t *testing.T) {
	got := write(t, "markdown", change, rule)
	for _, w := range []string{"| verdict | change | now | before |", "| 🟡 widened, waived: writes its cache | `MOUNT_RW` mount /w: ro -> rw | p.cue:4:11 | HEAD:p.cue:4:11 |",
		"| severity | rule | where | finding |", "| error | `MOUNT_HOME` | p.cue:3:5 | mounts the home folder |"} {
		if !strings.Contains(got, w) {
			t.Errorf("lacks %q:\n%s", w, got)
		}
	}
}

// TestSARIF: a change's old position is a related location, its waiver a
// suppression; a result points at its rule.
func TestSARIF(t *testing.T) {
	var b bytes.Buffer
	Write(&b, Doc{Rules: []Rule{{ID: "MOUNT_RW", Level: Error, Purpose: "p"}}, Findings: []Finding{change, gone}}, "sarif")
	for _, w := range []string{`"ruleIndex": 0`, `"relatedLocations"`, `"uri": "p.cue"`, `"text": "before (at HEAD)"`, `"justification": "writes its cache"`, `"level": "note"`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("lacks %s:\n%s", w, b.String())
		}
	}
	if err := Write(&b, Doc{}, "xml"); err == nil || Check("xml") == nil || Check("sarif") != nil {
		t.Error("an unknown format is not refused")
	}
}
