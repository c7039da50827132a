package supervise

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// ReadPinned reads the plan a client entry pins, as the launcher reads an
// artefact: once, started only when its digest is the entry's and it lies
// in the entry's project (ROOT/.mcpolicy/plan/SERVER.json). Beside it are
// the plans of the project's other servers, returned in all (the pinned
// one included) for the checks that a log, an env file or a hosts file
// lies outside every grant of the project. No policy is read.
func ReadPinned(e artefact.RunEntry) (p *compiler.Plan, all []*compiler.Plan, err error) {
	back := "run `mcpolicy build`, then `mcpolicy client TARGET --write`, and review the diff"
	b, err := launch.ReadVerified(e.PlanFile, e.Digest)
	var te *launch.TamperError
	switch {
	case errors.As(err, &te):
		return nil, nil, &launch.TamperError{Err: fmt.Errorf("%w\n\tto start the server as the policy says now, %s", err, back)}
	case err != nil:
		return nil, nil, fmt.Errorf("the client entry's plan: %w (%s)", err, back)
	}
	if err := launch.PinnedRoot(e.PlanFile, e.ProjectRoot); err != nil {
		return nil, nil, err
	}
	if p, err = compiler.DecodePlan(b); err != nil {
		return nil, nil, &launch.TamperError{Err: fmt.Errorf("%s: %v: refusing to start it; %s", e.PlanFile, err, back)}
	}
	if want := strings.TrimSuffix(filepath.Base(e.PlanFile), ".json"); p.Server != want {
		return nil, nil, &launch.TamperError{Err: fmt.Errorf("%s holds the plan of server %q, not %q: refusing to start it; %s", e.PlanFile, p.Server, want, back)}
	}
	all = []*compiler.Plan{p}
	others, err := filepath.Glob(filepath.Join(filepath.Dir(e.PlanFile), "*.json"))
	if err != nil {
		return nil, nil, err
	}
	for _, f := range others {
		if filepath.Base(f) == filepath.Base(e.PlanFile) {
			continue
		}
		b, err := hostfile.ReadRegular(f, hostfile.MaxArtefact)
		if err != nil {
			return nil, nil, fmt.Errorf("another server's plan: %w (%s)", err, back)
		}
		q, err := compiler.DecodePlan(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v (%s)", f, err, back)
		}
		all = append(all, q)
	}
	return p, all, nil
}
