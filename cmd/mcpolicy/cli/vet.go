package cli

import (
	"errors"
	"io"

	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/findings"
	"github.com/mcpolicy/mcpolicy/schema"
)

// IDs under which vet reports an invalid policy as findings (--format
// other than text): the same errors, exit code 2 all the same.
const (
	schemaID         = "SCHEMA"
	notEnforceableID = "NOT_ENFORCEABLE"
)

var vetRules = []findings.Rule{
	{ID: schemaID, Name: "schema", Level: findings.Error,
		Purpose:     "A policy does not load or does not validate against the schema: a syntax or type error, an unknown field, a path that escapes the project.",
		Remediation: "Fix the field the finding names (`mcpolicy schema` prints the schema)."},
	{ID: notEnforceableID, Name: "not-enforceable", Level: findings.Error,
		Purpose:     "A policy asks for a restriction its backend cannot enforce.",
		Remediation: "Pick a backend that enforces it, drop the restriction, or accept the named degradation (docs/backends.md)."},
}

// policyFindings is an invalid policy's error as findings, and whether it
// is one (other errors stay errors).
func policyFindings(err error) ([]findings.Finding, bool) {
	var se schema.Errors
	var one *schema.Error
	var ne *emit.NotEnforceableError
	switch {
	case errors.As(err, &se):
		var fs []findings.Finding
		for _, e := range se {
			fs = append(fs, schemaFinding(e))
		}
		return fs, true
	case errors.As(err, &one):
		return []findings.Finding{schemaFinding(one)}, true
	case errors.As(err, &ne):
		msg := ne.Restriction + " is not enforceable by backend " + ne.Backend
		if ne.Field != "" {
			msg = ne.Field + ": " + msg
		}
		if ne.Alternative != "" {
			msg += " (hint: " + ne.Alternative + ")"
		}
		return []findings.Finding{{Rule: notEnforceableID, Level: findings.Error, Server: ne.Server, Pos: ne.Pos, Message: msg}}, true
	}
	return nil, false
}

func schemaFinding(e *schema.Error) findings.Finding {
	msg := e.Msg
	if e.Path != "" {
		msg = e.Path + ": " + msg
	}
	if e.Hint != "" {
		msg += " (hint: " + e.Hint + ")"
	}
	return findings.Finding{Rule: schemaID, Level: findings.Error, Pos: e.Pos, Message: msg}
}

// writeVet prints vet's result as findings in a machine format; an
// invalid policy still exits 2, with nothing more on stderr.
func writeVet(w io.Writer, format, category string, err error) error {
	fs, invalid := policyFindings(err)
	if err != nil && !invalid {
		return err
	}
	if werr := findings.Write(w, findings.Doc{Tool: "mcpolicy", Version: version(), Category: category, Rules: vetRules, Findings: fs,
		EmptyMarkdown: "**mcpolicy vet:** ok."}, format); werr != nil {
		return &exitError{code: ExitError, err: werr}
	}
	if invalid {
		return &errSilent{code: ExitInvalid}
	}
	return nil
}
