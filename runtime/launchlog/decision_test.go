package launchlog

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The relay's decisions are lines of the server's log: Read skips them
// (doctor's last record stays the launch's), ReadDecisions returns them,
// filled with the launch's names, secrets withheld, each text bounded.
func TestDecided(t *testing.T) {
	state := t.TempDir()
	l := &Launch{Rec: Record{Entry: "mcpolicy-launch"}, State: state}
	l.Set("/p/proj", "memory", "bwrap", "sha256:plan")
	l.Secrets([]string{"TOKEN=hunter2-secret"}, []string{"TOKEN"})
	l.Decided(Decision{Decision: "call-refused", Tool: "delete_entities", Field: "servers.memory.tools.deny[0]", ID: json.RawMessage(`7`)})
	l.Decided(Decision{Decision: "call-refused", Tool: strings.Repeat("x", 5000), Reason: "holds hunter2-secret", ID: json.RawMessage(`{bad`)})
	l.Ended(0, "")
	path := Path(state, "/p/proj", "memory")
	ds, err := ReadDecisions(path)
	if err != nil || len(ds) != 2 {
		t.Fatalf("ReadDecisions = %+v, %v", ds, err)
	}
	d := ds[0]
	if d.Server != "memory" || d.Project != "/p/proj" || d.Backend != "bwrap" || d.Entry != "mcpolicy-launch" || d.Tool != "delete_entities" || string(d.ID) != "7" || d.Time.IsZero() {
		t.Errorf("decision = %+v", d)
	}
	if len(ds[1].Tool) > maxDecisionField+len("…") || ds[1].Reason != Withheld || ds[1].ID != nil {
		t.Errorf("unbounded or unredacted decision: tool %d bytes, reason %q, id %s", len(ds[1].Tool), ds[1].Reason, ds[1].ID)
	}
	recs, err := Read(path)
	if err != nil || len(recs) != 1 || recs[0].Exit == nil {
		t.Fatalf("Read = %+v, %v: want the launch's record alone", recs, err)
	}
}

// A loop of refusals writes MaxDecisions lines; the rest are counted in
// the launch's record, which still fits the log.
func TestDecidedBounded(t *testing.T) {
	state := t.TempDir()
	l := &Launch{Rec: Record{Entry: "run"}, State: state}
	l.Set("/p/proj", "memory", "docker", "")
	for range 10 * MaxDecisions {
		l.Decided(Decision{Decision: "call-refused", Tool: "t"})
	}
	l.Ended(1, "")
	path := Path(state, "/p/proj", "memory")
	ds, _ := ReadDecisions(path)
	recs, _ := Read(path)
	if len(ds) != MaxDecisions || len(recs) != 1 || recs[0].DecisionsNotLogged != 9*MaxDecisions {
		t.Fatalf("%d decisions, records %+v", len(ds), recs)
	}
}

// Without a state folder nothing is written, and nothing fails.
func TestDecidedNoState(t *testing.T) {
	var nilLaunch *Launch
	nilLaunch.Decided(Decision{Decision: "tool-hidden"})
	l := &Launch{Rec: Record{Server: "s"}}
	l.Decided(Decision{Decision: "tool-hidden"})
	if _, err := ReadDecisions(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("ReadDecisions of a missing log: no error")
	}
}
