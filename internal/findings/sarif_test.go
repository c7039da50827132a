package findings

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/findings/sariftest"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// sarifOf writes a document as SARIF, checks it against the official
// schema, and decodes it.
func sarifOf(t *testing.T, d Doc) (raw string, log struct {
	Runs []struct {
		AutomationDetails struct{ ID string }
		Tool              struct {
			Driver struct {
				Rules []struct {
					ID                   string
					DefaultConfiguration struct{ Level string }
					Properties           struct {
						Tags             []string
						SecuritySeverity string `json:"security-severity"`
					}
				}
			}
		}
		Results []struct {
			RuleID              string
			PartialFingerprints map[string]string
		}
	}
}) {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, d, "sarif"); err != nil {
		t.Fatal(err)
	}
	if err := sariftest.Validate(t, b.Bytes()); err != nil {
		t.Fatalf("not SARIF 2.1.0: %v\n%s", err, b.String())
	}
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if len(log.Runs) != 1 {
		t.Fatalf("%d runs", len(log.Runs))
	}
	return b.String(), log
}

// TestSARIFCategory: every run carries its category as automationDetails.id,
// ending in "/" as GitHub reads a category; "" is mcpolicy's, and one with
// a space or a control character is refused.
func TestSARIFCategory(t *testing.T) {
	for in, want := range map[string]string{"": "mcpolicy/", "mcpolicy/lint/": "mcpolicy/lint/", "ci/diff": "ci/diff/"} {
		_, log := sarifOf(t, Doc{Category: in, Findings: []Finding{rule}})
		if got := log.Runs[0].AutomationDetails.ID; got != want {
			t.Errorf("category %q: automationDetails.id %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"my category", "a\tb", "x\x1b[2J", "\xff"} {
		if err := Write(&bytes.Buffer{}, Doc{Category: bad}, "sarif"); err == nil {
			t.Errorf("category %q accepted", bad)
		}
	}
}

// TestSARIFSecuritySeverity: every rule has a security-severity in its
// level's band (error >= 7.0, warning 4.0-6.9, note < 4.0) and the
// security tag.
func TestSARIFSecuritySeverity(t *testing.T) {
	rules := []Rule{{ID: "E", Level: Error, Purpose: "p"}, {ID: "W", Level: Warning, Purpose: "p"}, {ID: "I", Level: Info, Purpose: "p"}}
	_, log := sarifOf(t, Doc{Rules: rules})
	got := log.Runs[0].Tool.Driver.Rules
	if len(got) != len(rules) {
		t.Fatalf("%d rules", len(got))
	}
	for _, r := range got {
		s, err := strconv.ParseFloat(r.Properties.SecuritySeverity, 64)
		if err != nil {
			t.Errorf("%s: security-severity %q: %v", r.ID, r.Properties.SecuritySeverity, err)
			continue
		}
		ok := map[string]bool{"error": s >= 7 && s <= 10, "warning": s >= 4 && s < 7, "note": s > 0 && s < 4}[r.DefaultConfiguration.Level]
		if !ok {
			t.Errorf("%s (%s): security-severity %v outside its band", r.ID, r.DefaultConfiguration.Level, s)
		}
		if len(r.Properties.Tags) != 1 || r.Properties.Tags[0] != "security" {
			t.Errorf("%s: tags %q", r.ID, r.Properties.Tags)
		}
	}
}

// TestSARIFFingerprints: a result's fingerprint survives the lines moving
// (its own, and positions named in its message) and a new git ref for a
// grant that is gone; it changes with the rule, the file, the server and
// the message; two identical findings are told apart by occurrence.
func TestSARIFFingerprints(t *testing.T) {
	fp := func(fs ...Finding) []string {
		_, log := sarifOf(t, Doc{Findings: fs})
		var out []string
		for _, r := range log.Runs[0].Results {
			v := r.PartialFingerprints[FingerprintKey]
			if len(r.PartialFingerprints) != 1 || v == "" {
				t.Fatalf("partialFingerprints %v", r.PartialFingerprints)
			}
			out = append(out, v)
		}
		return out
	}
	base := fp(rule, gone)
	if !strings.HasSuffix(base[0], ":1") || len(base[0]) != 34 {
		t.Errorf("fingerprint %q: want 32 hex digits and :1", base[0])
	}

	moved, movedGone := rule, gone
	moved.Pos = position.Pos{File: "p.cue", Line: 30, Col: 1}
	movedGone.Against = position.Pos{File: "origin/main:p.cue", Line: 90, Col: 2}
	if got := fp(moved, movedGone); got[0] != base[0] || got[1] != base[1] {
		t.Errorf("moved lines changed the fingerprints: %v, was %v", got, base)
	}
	withPos, withPos2 := rule, rule
	withPos.Message += " (p.cue:3:5)"
	withPos2.Message += " (p.cue:40:1)"
	if a, b := fp(withPos), fp(withPos2); a[0] != b[0] || a[0] == base[0] {
		t.Errorf("a position in the message: %v and %v (base %v)", a, b, base)
	}

	for name, change := range map[string]func(*Finding){
		"rule":    func(f *Finding) { f.Rule = "MOUNT_ROOT" },
		"file":    func(f *Finding) { f.Pos.File = "q.cue" },
		"server":  func(f *Finding) { f.Server = "other" },
		"message": func(f *Finding) { f.Message = "mounts the home folder ~/work" },
	} {
		f := rule
		change(&f)
		if got := fp(f); got[0] == base[0] {
			t.Errorf("another %s, the same fingerprint %s", name, got[0])
		}
	}

	twice := fp(rule, rule)
	if twice[0] != base[0] || twice[1] != strings.TrimSuffix(base[0], "1")+"2" {
		t.Errorf("two identical findings: %v", twice)
	}
}

// TestSARIFURIs: a location's file is a URI reference the schema accepts
// whatever the path holds (a space, a colon, a %), and the old version's
// file, which diff names REF:path (HEAD^:p.cue), is its path, the ref in
// the related location's message.
func TestSARIFURIs(t *testing.T) {
	c := change
	c.Against.File = "HEAD^:my dir/p.cue"
	odd := rule
	odd.Pos.File = "a:b%/c d.cue"
	raw, _ := sarifOf(t, Doc{Findings: []Finding{c, odd}})
	for _, w := range []string{`"uri": "my%20dir/p.cue"`, `"text": "before (at HEAD^)"`, `"uri": "./a:b%25/c%20d.cue"`} {
		if !strings.Contains(raw, w) {
			t.Errorf("lacks %s:\n%s", w, raw)
		}
	}
}
