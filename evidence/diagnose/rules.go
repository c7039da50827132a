// Package diagnose explains why a server did not answer in grant terms:
// from its launch record (runtime/launchlog) and its last stderr lines it
// names the failure and the grant, or the change, that fixes it. The
// rules are a table (Rules): a pattern over a line and what it means; the
// explanations that need the plan ask package why, as `mcpolicy why PATH`
// answers. What a server wrote is untrusted: it is shown escaped
// (printable), and its paths are data.
package diagnose

import (
	"regexp"
)

// Rule is one kind of failure: lines Pattern matches are explained by
// Explain, with the match's submatches.
type Rule struct {
	ID      string
	Pattern *regexp.Regexp
	// Explain says what the line means and the fix, for the server's plan
	// and backend; ok is false when the rule does not apply after all.
	Explain func(c *Context, m []string) (Finding, bool)
}

// Finding is one explained failure.
type Finding struct {
	Rule string `json:"rule"`
	What string `json:"what"` // what happened, in grant terms
	Fix  string `json:"fix"`  // what would make it work
	Line string `json:"line,omitempty"`
}

// pathRE is an absolute path in a message, as Go, Node, Python and shells
// quote one: up to a space, a quote, a colon or a comma.
const pathRE = `(/[^\s'"’:,()\[\]\x00-\x1f\x7f]*)`

// Rules are tried in order on each line; the first that matches and
// applies explains it.
var Rules = []Rule{
	// Go's exec, the Landlock launcher, shells, bwrap's execvp, Node's
	// spawn, Python's subprocess (a name without a slash).
	{ID: "not-on-path", Pattern: regexp.MustCompile(`(?i)(?:exec: "([^"]+)": executable file not found in \$PATH|command "([^"]+)" not found in the server's PATH|(?:^|\s)([^\s:/]+): (?:command )?not found$|spawn ([^\s/]+) ENOENT|execvp ([^\s:/]+): No such file|No such file or directory: '([^/']+)'$)`),
		Explain: notOnPath},
	{ID: "read-only", Pattern: regexp.MustCompile(`(?i)(?:read-only file system|EROFS)`), Explain: readOnly},
	{ID: "missing-path", Pattern: regexp.MustCompile(`(?i)(?:no such file or directory|ENOENT|cannot find the path)`), Explain: missingPath},
	{ID: "permission", Pattern: regexp.MustCompile(`(?i)(?:permission denied|EACCES|operation not permitted|EPERM)`), Explain: permission},
}

var pathPattern = regexp.MustCompile(pathRE)
