package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// grammarFlag is one long flag of mcpolicy's command-line grammar: it
// means one thing, with one shorthand and one type, on every command that
// has it. grammar is the table; TestGrammar holds every command to it and
// docs/commands.md's tables are generated from it.
type grammarFlag struct {
	Name  string
	Short string // the one-letter shorthand on every command that has the flag; "" none
	Type  string // pflag's type of its value: string, bool, int, duration
	// Repeatable: the commands that act on several take it more than
	// once (pflag's stringArray); the others take one.
	Repeatable bool
	Value      string // the value's placeholder ("" for a bool)
	Means      string
	// Alias is what a deprecated name stands for ("--policy"): the flag
	// is hidden, and using it prints a one-line notice on stderr.
	Alias string
	// Internal: hidden on some command, where mcpolicy itself passes it
	// (prove to exec), not people.
	Internal bool
}

// grammar is every long flag of every command, by name.
var grammar = []grammarFlag{
	{Name: "policy", Short: "p", Type: "string", Value: "FILE|DIR", Means: "the policy file, or the project folder holding it (default: the current folder); build, vet and lint take it as their argument too"},
	{Name: "path", Type: "string", Value: "FILE|DIR", Alias: "-p/--policy", Means: "the earlier name of --policy (prove, hook install)"},
	{Name: "out", Short: "o", Type: "string", Value: "DIR", Means: "the folder the command writes into (build: the artefacts; prove: the evidence; import: the policies)"},
	{Name: "format", Short: "f", Type: "string", Value: "FORMAT", Means: "the output format, from one vocabulary (below); each command lists the ones it prints"},
	{Name: "json", Type: "bool", Alias: "--format json", Means: "doctor's earlier spelling of --format json"},
	{Name: "verbose", Short: "v", Type: "bool", Means: "say more on stderr"},
	{Name: "backend", Short: "b", Type: "string", Repeatable: true, Value: "BACKEND", Means: "a backend, by name: bwrap, landlock, docker, podman... (each command's help names the ones it takes)"},
	{Name: "server", Type: "string", Repeatable: true, Value: "NAME", Means: "a server of the policy, by name"},
	{Name: "client", Type: "string", Repeatable: true, Value: "FILE", Means: "an MCP client's config file"},
	{Name: "define", Short: "D", Type: "string", Repeatable: true, Value: "NAME=VALUE", Means: "a parameter, as sandbox-exec -D gets it"},
	{Name: "help", Short: "h", Type: "bool", Means: "the command's help"},
	{Name: "version", Type: "bool", Means: "the version (as mcpolicy version)"},
	{Name: "no-descriptions", Type: "bool", Means: "completion: complete without descriptions"},

	{Name: "accept", Type: "string", Value: "ID|all", Means: "mark a recorded session reviewed"},
	{Name: "against", Type: "string", Value: "REF", Means: "the git ref of the old side"},
	{Name: "allow", Type: "string", Repeatable: true, Value: "HOST:PORT", Means: "an egress allowlist entry"},
	{Name: "allow-private", Type: "string", Repeatable: true, Value: "ADDR", Means: "a private address that may be suggested"},
	{Name: "arg", Type: "string", Repeatable: true, Value: "KEY=VALUE", Means: "an argument of --tool"},
	{Name: "artefacts", Type: "bool", Means: "also the line diff of every emitted artefact"},
	{Name: "credential", Type: "string", Repeatable: true, Value: "JSON", Means: "a credential grant the egress proxy injects, as the plan's JSON"},
	{Name: "credentials-dir", Type: "string", Value: "DIR", Means: "the folder holding the credentials' values, placeholders and session CA"},
	{Name: "chain", Type: "bool", Means: "keep an existing hook and run it first"},
	{Name: "check", Type: "bool", Means: "write nothing: report what is stale"},
	{Name: "details", Type: "bool", Means: "every entry, not a summary"},
	{Name: "diff", Type: "bool", Means: "diff's change kinds instead of the lint rules"},
	{Name: "discover", Type: "bool", Means: "also the project's own client configs (.mcp.json, .vscode/mcp.json, ...)"},
	{Name: "dry-run", Type: "bool", Means: "show what would be written; write nothing"},
	{Name: "env-file", Type: "string", Value: "FILE", Means: "the file env grant values are read from (NAME=value lines, mode 600)"},
	{Name: "fail-on", Type: "string", Value: "LEVEL", Means: "the least finding or change that fails the command"},
	{Name: "file", Type: "string", Value: "FILE", Means: "the client file to edit"},
	{Name: "force", Type: "bool", Means: "replace what mcpolicy did not write (a backup is kept where it says so)"},
	{Name: "from-log", Type: "string", Value: "FILE|-", Means: "the egress decision log to read"},
	{Name: "host", Type: "bool", Means: "read an absolute target as a host path"},
	{Name: "hosts", Type: "string", Value: "FILE", Means: "an /etc/hosts-style table consulted before DNS"},
	{Name: "image", Type: "string", Value: "IMAGE", Means: "run this image instead of the policy's"},
	{Name: "keep-image", Type: "bool", Means: "keep the stand-in images"},
	{Name: "last", Type: "int", Value: "N", Means: "the newest N"},
	{Name: "lifeline", Type: "bool", Means: "exit when the proxy goes away"},
	{Name: "listen", Type: "string", Value: "ADDR:PORT", Means: "the TCP address to listen on"},
	{Name: "list-protected", Type: "bool", Means: "list every protected name absent in a read-write mount (default: their count per mount)"},
	{Name: "log", Type: "string", Value: "FILE|-", Means: "the egress decision log to append to"},
	{Name: "log-max", Type: "string", Value: "SIZE", Means: "the size the decision log stops growing at"},
	{Name: "manifest", Type: "string", Repeatable: true, Value: "FILE", Means: "a hand-written Kubernetes manifest"},
	{Name: "max-exposure", Type: "int", Value: "N", Means: "the highest exposure score allowed"},
	{Name: "max-grants", Type: "int", Value: "N", Means: "the most grants a server may have"},
	{Name: "namespace", Type: "string", Value: "NAMESPACE", Means: "the Kubernetes namespace of the objects printed"},
	{Name: "no-policy", Type: "bool", Means: "client configs only, no policy"},
	{Name: "plan", Type: "string", Value: "HASH", Means: "refuse to start unless the policy compiles to this plan"},
	{Name: "port", Type: "int", Value: "N", Means: "the loopback port to listen on"},
	{Name: "probe", Type: "string", Repeatable: true, Internal: true, Value: "PATH", Means: "another access to try under the confinement (prove: a host path to read; exec, as prove runs it: OP:TARGET)"},
	{Name: "program-sha256", Type: "string", Repeatable: true, Value: "PATH=sha256:HEX", Means: "a program's pinned digest (client entries)"},
	{Name: "project-root", Type: "string", Value: "DIR", Means: "the project of the pinned plan file (client entries)"},
	{Name: "resolve", Type: "bool", Means: "look a destination's name up here, as the egress proxy would"},
	{Name: "restore", Type: "bool", Means: "put back the newest backup"},
	{Name: "sandbox", Type: "bool", Means: "read an absolute target as a path inside the sandbox"},
	{Name: "sarif-category", Type: "string", Value: "CATEGORY", Means: "--format sarif: the run's code scanning category (automationDetails.id)"},
	{Name: "serve", Type: "bool", Internal: true, Means: "start the server confined, without the relay, on stdio (pin runs itself so)"},
	{Name: "self", Type: "string", Value: "FILE", Means: "the static binary bound into the sandbox as the egress forwarder"},
	{Name: "sha256", Type: "string", Value: "DIGEST", Means: "start the file given only if its SHA-256 is this (client entries)"},
	{Name: "socket", Type: "string", Value: "PATH", Means: "the proxy's unix socket"},
	{Name: "this-machine", Type: "bool", Means: "the client configs' paths are this machine's"},
	{Name: "timeout", Type: "duration", Value: "DURATION", Means: "the time allowed to each check"},
	{Name: "tool", Type: "string", Value: "NAME", Means: "also call this MCP tool of the real server"},
	{Name: "user", Type: "bool", Means: "the user-scope file rather than the project's"},
	{Name: "write", Type: "bool", Means: "write the file (default: show the change only)"},
}

// formatWords are the values --format takes, on every command that has
// it: each command prints some of them (formatFlag lists which).
var formatWords = []struct{ Name, Means string }{
	{"text", "for people: the default of every command but args"},
	{"json", "one JSON document on stdout: keys are lowercase, a position is {\"file\", \"line\", \"col\"}"},
	{"github", "GitHub Actions workflow commands: an annotation per finding"},
	{"sarif", "SARIF 2.1.0, for code scanning"},
	{"markdown", "a pull-request comment, or a doc (rules)"},
	{"cue", "the policy schema as written (schema)"},
	{"jsonschema", "the policy schema as a JSON Schema, for editors (schema)"},
}

// Flag annotations the grammar reads (pflag.Flag.Annotations).
const (
	annFormats    = "mcpolicy_formats"    // the formats a --format takes
	annDeprecated = "mcpolicy_deprecated" // what a deprecated alias stands for
)

// formatFlag is -f/--format FORMAT, taking formats (the first is the
// default). The value is checked before the command runs (checkFormat).
func formatFlag(cmd *cobra.Command, p *string, formats ...string) {
	cmd.Flags().StringVarP(p, "format", "f", formats[0], "output: "+orList(formats))
	_ = cmd.Flags().SetAnnotation("format", annFormats, formats)
}

// aliasFlag makes name, already defined on cmd, a hidden deprecated
// alias of what: using it works and prints a one-line notice
// (deprecationNotices).
func aliasFlag(cmd *cobra.Command, name, what string) {
	_ = cmd.Flags().MarkHidden(name)
	_ = cmd.Flags().SetAnnotation(name, annDeprecated, []string{what})
}

// checkGrammar runs before every command: each deprecated alias given
// is named on stderr (one line, so an old pre-commit config keeps
// working and says what to change), and --format is one the command
// prints, checked before any work.
func checkGrammar(cmd *cobra.Command, _ []string) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if what := f.Annotations[annDeprecated]; len(what) > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "mcpolicy: note: --%s is deprecated: use %s\n", f.Name, what[0])
		}
	})
	if f := cmd.Flags().Lookup("format"); f != nil {
		if formats := f.Annotations[annFormats]; len(formats) > 0 && !slices.Contains(formats, f.Value.String()) {
			err = &exitError{code: ExitError, err: fmt.Errorf("--format %q: %s prints %s", f.Value.String(), cmd.CommandPath(), orList(formats))}
		}
	}
	return err
}

// grammarEntry is the grammar's row for a flag name.
func grammarEntry(name string) (grammarFlag, bool) {
	for _, g := range grammar {
		if g.Name == name {
			return g, true
		}
	}
	return grammarFlag{}, false
}

// Markers delimit the generated tables in docs/commands.md.
const (
	grammarBegin = "<!-- generated: the command-line grammar (cmd/mcpolicy/cli/grammar.go; `make docs`); do not edit -->"
	grammarEnd   = "<!-- end generated: the command-line grammar -->"
)

// grammarMarkdown renders the grammar: every flag with the commands that
// have it (from root's tree), then the format vocabulary with the
// commands that print each.
func grammarMarkdown(root *cobra.Command) string {
	uses := map[string][]string{}    // flag name -> commands
	formats := map[string][]string{} // format -> commands
	walkCommands(root, func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			use := strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
			if c == root {
				use = root.Name()
			}
			if f.Value.Type() == "stringArray" {
				use += " (repeatable)"
			}
			if c.Hidden || (f.Hidden && len(f.Annotations[annDeprecated]) == 0) {
				use += " (hidden)"
			}
			uses[f.Name] = append(uses[f.Name], use)
			for _, format := range f.Annotations[annFormats] {
				formats[format] = append(formats[format], strings.TrimPrefix(c.CommandPath(), root.Name()+" "))
			}
		})
	})
	var b strings.Builder
	b.WriteString("| flag | value | means | on |\n|---|---|---|---|\n")
	for _, g := range grammar {
		flag := "`--" + g.Name + "`"
		if g.Short != "" {
			flag = "`-" + g.Short + "`, " + flag
		}
		means := g.Means
		if g.Alias != "" {
			means = "**deprecated**, hidden: " + means + "; use `" + g.Alias + "` (it still works, with a notice on stderr)"
		}
		on := "every command"
		if g.Name != "help" {
			on = strings.Join(uses[g.Name], ", ")
		}
		value := g.Value
		if value != "" {
			value = "`" + value + "`"
		}
		cell := strings.NewReplacer("|", `\|`).Replace // a | in a cell, code spans too, ends it
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", flag, cell(value), cell(means), on)
	}
	b.WriteString("\n| `--format` | prints | on |\n|---|---|---|\n")
	for _, f := range formatWords {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.Name, f.Means, strings.Join(formats[f.Name], ", "))
	}
	return b.String()
}

// walkCommands calls fn on c and every command below it, in help's order.
func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		walkCommands(s, fn)
	}
}

// spliceGrammar replaces the text between the markers in doc with the
// grammar's tables.
func spliceGrammar(doc string, root *cobra.Command) (string, error) {
	i, j := strings.Index(doc, grammarBegin), strings.Index(doc, grammarEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q ... %q markers", grammarBegin, grammarEnd)
	}
	return doc[:i] + grammarBegin + "\n\n" + grammarMarkdown(root) + "\n" + doc[j:], nil
}
