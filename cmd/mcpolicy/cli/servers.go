package cli

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
)

// missingArg is the error of a command run without the argument it needs
// (args' SERVER, why's TARGET): the policy's servers, each with the
// file:line that declares it, and hint's command line for the first.
// Its exit code is 1, a usage error (internal/exitcode).
func missingArg(command, what, policy string, hint func(server string) string) error {
	_, plans, err := compileProject(policy)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s needs %s", command, what)
	if len(plans) == 0 {
		fmt.Fprintf(&b, ", and the policy at %s declares no server", policy)
		return &exitError{code: ExitError, err: errors.New(b.String())}
	}
	fmt.Fprintf(&b, "; the servers of the policy at %s:\n", policy)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, p := range plans {
		at := p.Pos
		at.Col = 0
		fmt.Fprintf(tw, "  %s\t%s\n", p.Server, at)
	}
	tw.Flush()
	b.WriteString("hint: " + hint(plans[0].Server))
	return &exitError{code: ExitError, err: errors.New(b.String())}
}

// policyArg is " -p POLICY" for a hint's command line, or "" for the
// default (the current folder).
func policyArg(policy string) string {
	if policy == "." {
		return ""
	}
	return " -p " + shellQuote(policy)
}
