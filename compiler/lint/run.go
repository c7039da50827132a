// Package lint is the reviewer's pass: it counts each server's grants and
// flags what widens its confinement past what the job needs, in policies
// and in the MCP client configs people already have. Rules live in a
// registry (rules.go) that docs/rules.md is generated from.
package lint

import (
	"slices"
	"sort"
	"strings"
	"time"

	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/exposure"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/findings"
	"github.com/mcpolicy/mcpolicy/internal/parallel"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// Options tune a lint run.
type Options struct {
	MaxGrants int // GRANT_COUNT's limit; 0 means 4
	// MaxExposure is the exposure score (compiler/exposure) a server may
	// reach; above it, an EXPOSURE_LIMIT error. 0 means no limit.
	MaxExposure int
	Today       time.Time // for waiver expiry; zero means now
	Only        []string  // rule IDs to run, or former IDs kept as aliases; empty means all

	fs    *fsCache                   // the run's walks of folders on this machine (walk.go)
	items map[string]map[string]bool // per grouped rule Only names by former IDs alone: those items
}

// Finding is one rule's observation about one server: the shape every
// pass reports in (package findings), printed by its one printer.
type Finding = findings.Finding

// Summary is one server's line: its grants and its worst finding.
type Summary struct {
	Server string       `json:"server"`
	File   string       `json:"file"`
	Pos    position.Pos `json:"pos"`
	Grants int          `json:"grants"` // -1 when no plan confines it
	// Exposure is the plan's exposure score (docs/exposure.md), -1 when
	// no plan confines it.
	Exposure int    `json:"exposure"`
	Worst    string `json:"worst"` // "" when clean
	// Confinement names what stands in for a plan: "client sandbox" (VS
	// Code's, srt: not "unconfined", issue 16), "deno permissions" (deno
	// run without -A), "toolhive" (thv run, thv proxy), "remote" (another
	// machine runs it) or "mcpolicy" (mcpolicy starts it from what build
	// wrote: the policy's own summary counts its grants); "" otherwise.
	Confinement string `json:"confinement,omitempty"`
}

// Report is the result of a run.
type Report struct {
	Findings []Finding `json:"findings"`
	Servers  []Summary `json:"servers"`
}

// Worst is the highest severity of the unwaived findings, and whether any.
func (r Report) Worst() (Severity, bool) {
	worst, any := Info, false
	for _, f := range r.Findings {
		if f.Waived == "" {
			any = true
			worst = max(worst, mustSeverity(f.Level))
		}
	}
	return worst, any
}

// Run lints every target with every rule (or o.Only).
func Run(targets []*readback.Target, o Options) Report {
	if o.MaxGrants == 0 {
		o.MaxGrants = 4
	}
	if o.Today.IsZero() {
		o.Today = time.Now()
	}
	o.fs = newFSCache()
	only, byAlias := map[string]bool{}, map[string]map[string]bool{}
	for _, id := range o.Only {
		if r := Lookup(id); r != nil {
			only[r.ID] = true
			if id != r.ID { // a former ID: that item of the grouped rule
				if byAlias[r.ID] == nil {
					byAlias[r.ID] = map[string]bool{}
				}
				byAlias[r.ID][id] = true
			}
		}
	}
	o.items = map[string]map[string]bool{}
	for id, items := range byAlias {
		if !slices.Contains(o.Only, id) { // named by its own ID too: every item
			o.items[id] = items
		}
	}
	rep := Report{Findings: []Finding{}, Servers: []Summary{}}
	registry := Registry()
	// Targets are independent (the walks they share are memoized, walk.go):
	// linted in parallel, reported in their order.
	type result struct {
		fs  []Finding
		sum Summary
	}
	results := make([]result, len(targets))
	parallel.For(len(targets), func(i int) {
		results[i].fs, results[i].sum = lintTarget(targets[i], o, registry, only)
	})
	n := 0
	for _, r := range results {
		n += len(r.fs)
	}
	rep.Findings = make([]Finding, 0, n)
	// A finding byte-identical to one already kept (same rule, level,
	// server, position and message: two rules' paths to one observation)
	// is printed once.
	seen := make(map[Finding]bool, n)
	for _, r := range results {
		for _, f := range r.fs {
			if !seen[f] {
				seen[f] = true
				rep.Findings = append(rep.Findings, f)
			}
		}
		rep.Servers = append(rep.Servers, r.sum)
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Rule < b.Rule
	})
	return rep
}

// lintTarget runs the rules on one target: its findings, waivers applied,
// and its summary line.
func lintTarget(t *readback.Target, o Options, registry []*Rule, only map[string]bool) ([]Finding, Summary) {
	var fs []Finding
	for _, r := range registry {
		if len(o.Only) > 0 && !only[r.ID] {
			continue
		}
		// The one place a rule's finding is made: its message is spelt
		// here (internal/printable), so a name a server chose in its
		// read-write grant (a folder holding ESC, a symlink's target)
		// reaches a terminal or an annotation as text, whichever rule
		// put it in. A clean message is unchanged.
		r.check(t, o, func(pos position.Pos, format string, args ...any) {
			if pos.File == "" {
				pos = t.Pos
			}
			fs = append(fs, Finding{Rule: r.ID, Level: r.Severity.String(), Server: t.Server,
				Pos: pos, Message: printable.String(fmt.Sprintf(format, args...))})
		})
	}
	fs = append(fs, applyWaivers(t, fs, o.Today)...)
	sum := Summary{Server: t.Server, File: t.File, Pos: t.Pos, Grants: -1, Exposure: -1}
	switch {
	case t.Plan != nil:
		sum.Grants = len(t.Plan.Grants())
		e := exposure.Score(t.Plan)
		sum.Exposure = e.Total
		if o.MaxExposure > 0 && e.Total > o.MaxExposure && len(o.Only) == 0 {
			fs = append(fs, exposureFinding(t, e, o.MaxExposure))
		}
	case t.Remote != "":
		sum.Confinement = "remote"
	case t.Launcher == readback.OwnLauncher:
		sum.Confinement = "mcpolicy"
	case hasFlag(t, readback.FlagClientSandbox):
		sum.Confinement = "client sandbox"
	case hasFlag(t, readback.FlagRuntimePermissions):
		sum.Confinement = "deno permissions"
	case hasFlag(t, readback.FlagToolHive):
		sum.Confinement = "toolhive"
	}
	if t.Disabled { // the client does not start it: what it would be is info
		sum.Grants, sum.Exposure, sum.Confinement = -1, -1, "disabled"
		for i := range fs {
			fs[i].Level = Info.String()
			fs[i].Message += " (disabled entry)"
		}
	}
	for _, f := range fs {
		if f.Waived == "" && (sum.Worst == "" || mustSeverity(f.Level) > mustSeverity(sum.Worst)) {
			sum.Worst = f.Level
		}
	}
	return fs, sum
}

func mustSeverity(s string) Severity {
	v, _ := ParseSeverity(s)
	return v
}

// applyWaivers marks findings a policy waives; it returns new findings for
// waivers that are expired or name an unknown rule.
func applyWaivers(t *readback.Target, fs []Finding, today time.Time) []Finding {
	if t.Plan == nil {
		return nil
	}
	var extra []Finding
	for _, w := range t.Plan.Waivers {
		if !Waivable(w.Rule) {
			extra = append(extra, Finding{Rule: "WAIVER", Level: findings.Error, Server: t.Server, Pos: w.Pos,
				Message: printable.String(unknownWaiver(w.Rule))})
			continue
		}
		if w.Expires != "" {
			exp, err := time.Parse("2006-01-02", w.Expires)
			if err != nil || !today.Before(exp.AddDate(0, 0, 1)) {
				extra = append(extra, Finding{Rule: "WAIVER", Level: findings.Error, Server: t.Server, Pos: w.Pos,
					Message: printable.String(fmt.Sprintf("waiver of %s expired on %s: %s", w.Rule, w.Expires, w.Reason))})
				continue
			}
		}
		for i := range fs {
			if fs[i].Rule == w.Rule {
				fs[i].Waived = w.Reason
			}
		}
	}
	return extra
}

// PolicyTargets turns compiled plans into lint targets.
func PolicyTargets(plans []*compiler.Plan, root, home string) []*readback.Target {
	var ts []*readback.Target
	for _, p := range plans {
		ts = append(ts, &readback.Target{Server: p.Server, File: p.Pos.File, Pos: p.Pos, Origin: readback.FromPolicy, Plan: p, FixedTop: true,
			Launcher: "mcpolicy", ProjectRoot: root, Home: home, OnThisMachine: true})
	}
	return ts
}

// ExposureID is the finding for a server whose exposure score is above
// --max-exposure: a gate a team sets, not a rule of the registry.
const ExposureID = "EXPOSURE_LIMIT"

// ExposureRule describes EXPOSURE_LIMIT for SARIF and docs/rules.md.
var ExposureRule = Rule{
	ID: ExposureID, Name: "exposure-limit", Severity: Error,
	Purpose:     "A server's exposure score (docs/exposure.md: each grant weighed by what it hands the server) is above --max-exposure.",
	Rationale:   "A grant count treats a read-only docs folder and a writable home alike; the score weighs them, so a team can cap how exposed any one server may be and see a widening raise it.",
	Remediation: "Drop or narrow the heaviest grants the finding lists (a credential store, the home folder, a wildcard destination), or raise --max-exposure deliberately.",
}

// exposureFinding lists the heaviest terms, so the fix is in the message.
func exposureFinding(t *readback.Target, e exposure.Exposure, max int) Finding {
	terms := append([]exposure.Term{}, e.Terms...)
	sort.SliceStable(terms, func(i, j int) bool { return terms[i].Weight > terms[j].Weight })
	var top []string
	for i, term := range terms {
		if i == 3 {
			break
		}
		top = append(top, fmt.Sprintf("%s %s: %d (%s)", term.Kind, term.Summary, term.Weight, term.Pos))
	}
	return Finding{Rule: ExposureID, Level: Error.String(), Server: t.Server, Pos: t.Pos,
		Message: printable.String(fmt.Sprintf("exposure %d, above --max-exposure %d; heaviest: %s", e.Total, max, strings.Join(top, "; ")))}
}
