package compiler

import (
	"strings"
	"testing"
)

// TestProc: proc reaches the plan (its JSON and so its hash) with the
// field's position, is no counted grant, and explain says it; a plan
// without it has no "proc" key, so its hash is what it was before the
// field existed.
func TestProc(t *testing.T) {
	const src = `version: "v1"
servers: s: {
	command: ["/usr/bin/true"]
	backends: ["landlock"]
	proc: true
}
`
	plans, _, err := compileSrc(t, src)
	if err != nil {
		t.Fatal(err)
	}
	p := plans[0]
	if !p.Proc || p.ProcPos.Line != 5 || !strings.Contains(string(p.JSON()), `"proc": true`) {
		t.Errorf("proc %v at %v; JSON:\n%s", p.Proc, p.ProcPos, p.JSON())
	}
	if len(p.Grants()) != 0 {
		t.Errorf("proc counted as a grant: %+v", p.Grants())
	}
	if !strings.Contains(Explain(p), "/proc: the server's own (proc: true") {
		t.Errorf("explain does not say proc:\n%s", Explain(p))
	}
	without, _, err := compileSrc(t, strings.Replace(src, "\tproc: true\n", "", 1))
	if err != nil {
		t.Fatal(err)
	}
	off, _, err := compileSrc(t, strings.Replace(src, "proc: true", "proc: false", 1))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(without[0].JSON()), `"proc"`) || without[0].Hash != off[0].Hash || without[0].Hash == p.Hash {
		t.Errorf("without proc: hash %s, proc: false %s, proc: true %s; JSON:\n%s", without[0].Hash, off[0].Hash, p.Hash, without[0].JSON())
	}
}
