package emit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Support says how far a backend enforces one restriction of a plan.
type Support string

const (
	Enforced Support = "yes"
	Partial  Support = "partial" // weaker, and only with an accepted degradation
	Missing  Support = "no"
)

// Restriction is one thing a plan asks every backend to enforce; a
// backend's report answers each by a Row.
type Restriction string

// The restrictions, as reports name them.
const (
	ReadOnlyRoot    Restriction = "read-only root"
	Mounts          Restriction = "mounts"
	ProtectedPaths  Restriction = "protected paths"
	FixedTop        Restriction = "fixed top level"
	HiddenPaths     Restriction = "hidden paths" // mounts[].hide
	Scratch         Restriction = "scratch"
	Proc            Restriction = "proc"  // the server's own /proc (proc: true)
	Packs           Restriction = "packs" // a runtime pack's host paths, values and caches
	Environment     Restriction = "environment"
	Capabilities    Restriction = "capabilities"
	NoNewPrivileges Restriction = "no new privileges"
	User            Restriction = "user"
	NetworkNone     Restriction = "network none"
	EgressAllowlist Restriction = "egress allowlist"
	Scope           Restriction = "scope"
	Limits          Restriction = "limits"
	ToolSurface     Restriction = "tool surface" // the tools section: the relay on the stdio pipe
)

// Row is one line of a backend's enforceability report for a plan.
type Row struct {
	Restriction Restriction
	Support     Support
	How         string
	// For Partial and Missing: the degradation that accepts it (if any),
	// and what to do instead.
	Degradation string
	Alternative string
	Pos         position.Pos
	Field       string
}

// Restrictions lists what a plan asks every backend to enforce. Each
// backend answers for each of them.
func Restrictions(p *compiler.Plan) []Restriction {
	rs := []Restriction{ReadOnlyRoot, Mounts}
	if len(p.Protected) > 0 {
		rs = append(rs, ProtectedPaths)
	}
	for _, m := range p.Mounts {
		if m.FixedTop() {
			rs = append(rs, FixedTop)
			break
		}
	}
	for _, m := range p.Mounts {
		if len(m.Hide) > 0 {
			rs = append(rs, HiddenPaths)
			break
		}
	}
	if p.Scratch != nil {
		rs = append(rs, Scratch)
	}
	if p.Proc {
		rs = append(rs, Proc)
	}
	if len(p.Packs) > 0 {
		rs = append(rs, Packs)
	}
	rs = append(rs, Environment, Capabilities, NoNewPrivileges, User)
	if p.Network.Mode == "none" {
		rs = append(rs, NetworkNone)
	} else {
		rs = append(rs, EgressAllowlist)
	}
	if len(p.Credentials) > 0 {
		rs = append(rs, Credentials)
	}
	rs = append(rs, Scope)
	if s := p.Subtractions; s.MemoryBytes > 0 || s.Pids > 0 || s.MilliCPUs > 0 {
		rs = append(rs, Limits)
	}
	if p.Tools != nil {
		rs = append(rs, ToolSurface)
	}
	return rs
}

// Report builds a backend's rows: answer gives the row for each restriction
// the plan asks for.
func Report(p *compiler.Plan, answer func(Restriction) Row) []Row {
	var rows []Row
	for _, r := range Restrictions(p) {
		row := answer(r)
		row.Restriction = r
		rows = append(rows, row)
	}
	return rows
}

// Check returns the first restriction the backend cannot enforce and the
// plan does not accept as a degradation, as a NotEnforceableError.
func Check(p *compiler.Plan, backend string, rows []Row) error {
	for _, r := range rows {
		if r.Support == Enforced || (r.Support == Partial && r.Degradation != "" && p.Accepts(r.Degradation)) {
			continue
		}
		alt := r.Alternative
		if r.Degradation != "" {
			alt = fmt.Sprintf("%s; or accept the weaker form with accept: [%q]", strings.TrimSuffix(alt, "."), r.Degradation)
		}
		pos, field := r.Pos, r.Field
		if field == "" {
			pos, field = p.Pos, p.Field()
		}
		return &NotEnforceableError{Pos: pos, Field: field, Server: p.Server, Backend: backend,
			Restriction: string(r.Restriction) + " (" + r.How + ")", Alternative: alt}
	}
	return nil
}

// PrintTable writes a report as an aligned table.
func PrintTable(w io.Writer, backend string, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "RESTRICTION\t%s\tHOW\n", strings.ToUpper(backend))
	for _, r := range rows {
		how := r.How
		if r.Degradation != "" && r.Support != Enforced {
			how += fmt.Sprintf(" [accept %q]", r.Degradation)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Restriction, r.Support, how)
	}
	return tw.Flush()
}

// RefuseHomeTargets is the error of a backend that cannot place a
// "~/..." target or workdir (the home of the user who starts the server,
// expanded at spawn), or nil when the plan has none.
func RefuseHomeTargets(p *compiler.Plan, backend, why string) error {
	if !p.HomeTargets() {
		return nil
	}
	return &NotEnforceableError{Pos: p.Pos, Field: p.Field(), Server: p.Server, Backend: backend,
		Restriction: `a target or workdir "~/..." (` + why + `)`,
		Alternative: `use an absolute target such as "/workspace", or the bwrap, landlock, docker or podman backend`}
}
