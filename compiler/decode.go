package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecodePlan reads a plan back from the JSON build wrote (Plan.JSON), for
// `mcpolicy run`, which starts a client entry's pinned plan without
// reading the policy. A field it does not know, or a hash that is not the
// digest of the rest, is refused: the plan would not be the one reviewed.
// What JSON does not hold (positions, waivers) is left zero.
func DecodePlan(b []byte) (*Plan, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var p Plan
	if err := d.Decode(&p); err != nil {
		return nil, fmt.Errorf("not a plan: %v", err)
	}
	if d.More() {
		return nil, fmt.Errorf("not a plan: more after its JSON")
	}
	if p.Server == "" {
		return nil, fmt.Errorf("not a plan: no server")
	}
	want := p.Hash
	p.computeHash()
	if p.Hash != want {
		return nil, fmt.Errorf("plan %q: its hash %s is not the digest of its grants (%s): it was edited", p.Server, want, p.Hash)
	}
	return &p, nil
}
