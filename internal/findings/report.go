// Package report is the one shape every pass reports in — a Finding: a
// rule's ID, a level, a server, a position and a message — and the one
// printer that writes findings as text, JSON, GitHub annotations, SARIF or
// markdown. lint's rule findings and diff's grant changes (a change is a
// finding with a verdict and the position it had before) print through it,
// so a widening is a SARIF result and a GitHub annotation like any finding.
// Every string of a finding is spelt for a terminal (internal/printable)
// before any format writes it, the secrets of a URL in its message hidden
// (Redact): a name a server chose (a file in its
// read-write grant holding ESC, a symlink's target) is shown, not run,
// whichever pass put it in. It imports only the standard library, the
// position type, printable and secretshape.
package findings

import (
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// Levels of a finding, as every format but SARIF ("note") and GitHub
// ("notice") spells them.
const (
	Error   = "error"
	Warning = "warning"
	Info    = "info"
)

// Verdicts of a change between two versions of a policy.
const (
	Widened  = "widened"
	Narrowed = "narrowed"
)

// Finding is one observation of one pass: a lint rule's about a server, a
// reader's note about a client file (no server), or a grant change between
// two versions (Verdict set).
type Finding struct {
	Rule    string       `json:"rule"`     // a registry ID: a lint rule, a diff kind, PARSE
	Level   string       `json:"severity"` // Error, Warning or Info
	Server  string       `json:"server"`   // "" for a note about a whole file
	Pos     position.Pos `json:"pos"`
	Message string       `json:"message"`
	Waived  string       `json:"waived,omitempty"` // the waiver's reason when the policy acknowledges it
	// A change (diff) also says which way it goes and where the grant was.
	Verdict string       `json:"verdict,omitempty"` // Widened or Narrowed
	Against position.Pos `json:"against,omitzero"`  // in the old version
}

// At is where a finding is shown: its position, or for a grant that is
// gone, where it was.
func (f Finding) At() position.Pos {
	if f.Pos.File == "" {
		return f.Against
	}
	return f.Pos
}

// label is the message with the server it is about, for formats that show
// no server column (GitHub, SARIF).
func (f Finding) label() string {
	if f.Server == "" {
		return f.Message
	}
	return f.Server + ": " + f.Message
}

// Rule describes a registry entry for the formats that list rules (SARIF).
type Rule struct {
	ID, Name    string
	Level       string // default level
	Purpose     string // one sentence: what it flags
	Rationale   string
	Remediation string
}

// spelt is f with every string spelt for a terminal (internal/printable):
// clean text is unchanged, and spelt text is clean, so a finding its pass
// already spelt (lint's, the compiler's) prints as it was.
func (f Finding) spelt() Finding {
	f.Rule, f.Level, f.Server = printable.String(f.Rule), printable.String(f.Level), printable.String(f.Server)
	f.Message, f.Waived, f.Verdict = printable.String(Redact(f.Message)), printable.String(f.Waived), printable.String(f.Verdict)
	f.Pos.File, f.Against.File = printable.String(f.Pos.File), printable.String(f.Against.File)
	return f
}
