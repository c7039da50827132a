package clientcfg

import (
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/source"
)

// DriftChange is one way a managed entry differs from its policy.
type DriftChange struct {
	Entry  source.Pos // the entry in the client file
	Policy source.Pos // the server in the policy
	Change diff.Change
}

// Drift compares the entries mcpolicy manages in a client file with the
// plans the policy compiles to, grant by grant. Entries that start
// mcpolicy itself (exec, the wrappers) read the policy at launch and
// cannot drift; entries mcpolicy did not write are not its to judge.
func Drift(plans []*compiler.Plan, targets []*lint.Target, root string) []DriftChange {
	byName := map[string]*compiler.Plan{}
	for _, p := range plans {
		byName[p.Server] = p
	}
	var out []DriftChange
	for _, t := range targets {
		p := byName[t.Server]
		if p == nil || t.Plan == nil || t.Plan.Hash == "" {
			continue
		}
		for _, c := range diff.Plans([]*compiler.Plan{comparable(p, root)}, []*compiler.Plan{comparable(t.Plan, root)}) {
			out = append(out, DriftChange{Entry: t.Pos, Policy: p.Pos, Change: c})
		}
	}
	return out
}

// comparable keeps what a launch command can say of a plan (mounts,
// scratch, env, network, user, limits), with absolute paths under the
// project given their symbolic base so both sides spell paths alike.
func comparable(p *compiler.Plan, root string) *compiler.Plan {
	q := &compiler.Plan{Server: p.Server, Pos: p.Pos, User: p.User, Scratch: p.Scratch, Env: p.Env,
		Network: p.Network, Subtractions: p.Subtractions, UserPos: p.UserPos, LimitsPos: p.LimitsPos}
	for _, m := range p.Mounts {
		if m.Source.Base == compiler.Absolute {
			if rel, err := filepath.Rel(root, m.Source.Rel); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				m.Source = compiler.HostPath{Base: compiler.ProjectRoot, Rel: filepath.ToSlash(rel)}
			}
		}
		q.Mounts = append(q.Mounts, m)
	}
	if q.Network.Mode == "" {
		q.Network.Mode = "none"
	}
	if q.Env == nil {
		q.Env = []compiler.EnvGrant{}
	}
	return q
}
