package project

import (
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/writereport"
)

// WriteReports are the reports of the project's recorded sessions in
// state (the newest last of them; 0: all), read as check and sessions both
// show them: an engine session named by its plan's server, and a write
// where another of plans' servers mounts flagged (writereport.Mounted).
// plans may be nil (a policy that no longer compiles): the report is
// still read, without those two.
func (p *Project) WriteReports(state string, plans []*compiler.Plan, home string, last int) ([]*writereport.Report, error) {
	servers := map[string]string{}
	mounted := map[string][]string{}
	m := compiler.Machine{ProjectRoot: p.Root, Home: home}
	for _, pl := range plans {
		servers[pl.Hash] = pl.Server
		for _, mt := range pl.Mounts {
			src := m.Resolve(mt.Source)
			mounted[src] = append(mounted[src], pl.Server)
		}
	}
	return writereport.Reports(writereport.Options{State: state, Project: p.Root, Last: last, Servers: servers, Mounted: mounted})
}
