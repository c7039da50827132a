package clientcfg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// PinChange is an entry whose pinned artefact no longer has the digest the
// entry carries: its next launch will refuse to start.
type PinChange struct {
	Entry    position.Pos
	Server   string
	What     string
	Tampered bool // the file still names the policy's plan: edited after the build
}

// Pins checks the artefact every mcpolicy-launch entry pins, and the plan
// file every mcpolicy run entry pins.
func Pins(plans []*compiler.Plan, targets []*readback.Target) []PinChange {
	byName := map[string]*compiler.Plan{}
	for _, p := range plans {
		byName[p.Server] = p
	}
	var out []PinChange
	for _, t := range targets {
		if t.Artefact == "" {
			continue
		}
		b, err := hostfile.ReadRegular(t.Artefact, hostfile.MaxArtefact)
		if err != nil {
			out = append(out, PinChange{t.Pos, t.Server, fmt.Sprintf("pinned artefact %s cannot be read: %v (run `mcpolicy build`)", t.Artefact, err), false})
			continue
		}
		if artefact.Digest(b) == t.Digest || "sha256:"+t.Digest == artefact.Digest(b) {
			continue
		}
		// What a build writes now: if the file is that, the policy changed
		// since the entry was written; if it is not, yet names the same
		// plan, something edited it after the build.
		var named struct {
			Plan string `json:"plan"` // an artefact's
			Hash string `json:"hash"` // a plan file's (mcpolicy run)
		}
		json.Unmarshal(b, &named)
		p := byName[t.Server]
		if p != nil && (named.Plan == p.Hash || named.Hash == p.Hash) {
			if want, err := launchArtefact(p, t.Artefact); err != nil || !bytes.Equal(want, b) {
				out = append(out, PinChange{t.Pos, t.Server, fmt.Sprintf("TAMPERED: %s is neither the artefact the entry pins (%s) nor what a build writes for plan %s: it was edited after the build", t.Artefact, t.Digest, p.Hash), true})
				continue
			}
		}
		out = append(out, PinChange{t.Pos, t.Server, fmt.Sprintf("stale: %s changed since the entry was written (it pins %s): run `mcpolicy client` again and review the diff", t.Artefact, t.Digest), false})
	}
	return out
}

// launchArtefact renders what build writes at file (OUT/BACKEND/SERVER.json),
// the main artefact of the backend that folder names, or the plan itself
// (OUT/plan/SERVER.json, which mcpolicy run entries pin).
func launchArtefact(p *compiler.Plan, file string) ([]byte, error) {
	dir := filepath.Dir(file)
	if filepath.Base(dir) == "plan" {
		return p.JSON(), nil
	}
	b, err := registry.Lookup(filepath.Base(dir))
	if err != nil {
		return nil, err
	}
	files, err := b.Artefacts(p, filepath.Base(filepath.Dir(dir)))
	if err != nil {
		return nil, err
	}
	return files[0].Data, nil
}
