package prove

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// JSON renders the report.
func (r *Report) JSON() []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic("internal error: report does not marshal: " + err.Error())
	}
	return append(b, '\n')
}

// Markdown renders the report for a reviewer: what the columns mean, the
// tool call's arguments, then each backend's table, its why
// disagreements, its controlled comparison and its reproduce commands.
func (r *Report) Markdown() []byte {
	var b strings.Builder
	r.mdPreamble(&b)
	if c := r.Call; c != nil {
		mdCall(&b, c)
	}
	for _, be := range r.Backends {
		fmt.Fprintf(&b, "\n## %s\n\n", mdText(be.Backend))
		if be.Skipped != "" {
			fmt.Fprintf(&b, "Not run: %s\n", mdText(be.Skipped))
			continue
		}
		fmt.Fprintf(&b, "%s. How the probe got in: %s.\n\n", mdText(be.Version), mdText(be.Probe))
		mdWhyDisagreements(&b, mdRows(&b, be.Rows))
		if sv := be.Server; sv != nil {
			r.mdComparison(&b, be, sv)
		}
		mdReproduce(&b, be.Rows)
	}
	r.mdTools(&b)
	return []byte(b.String())
}

// mdTools is the tool layer's section, after every backend's kernel rows
// and apart from them: calls the relay refuses by the policy.
func (r *Report) mdTools(b *strings.Builder) {
	n := 0
	for _, be := range r.Backends {
		n += len(be.Tools)
	}
	if n == 0 {
		return
	}
	b.WriteString("\n## The tool layer: refused by the relay (policy), not the kernel\n\n")
	b.WriteString("Each row is a call put to the real server, started as its client entry starts it, through the tool relay on its stdio pipe. ")
	b.WriteString("The relay answers it with a JSON-RPC error (-32001) naming the rule, and the server never sees it. ")
	b.WriteString("This is a control on what a cooperating server is asked, beside the kernel's: it does not limit what the process can open.\n\n")
	b.WriteString("| backend | call | tool | arguments | refused by | expected | got | |\n|---|---|---|---|---|---|---|---|\n")
	for _, be := range r.Backends {
		for _, t := range be.Tools {
			if t.Skipped != "" {
				fmt.Fprintf(b, "| %s | %s | %s | | %s | %s | not run: %s | |\n", mdText(be.Backend), mdText(t.What), mdCode(t.Tool, true), mdCode(t.Rule, true), mdText(t.Expect), mdText(t.Skipped))
				continue
			}
			mark := "✅"
			if !t.Agrees {
				mark = "❌ **disagrees**"
			}
			got := "**" + mdText(t.Result) + "**"
			if t.Message != "" {
				got += ": " + mdText(t.Message)
			}
			if t.Note != "" {
				got += " (" + mdText(t.Note) + ")"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", mdText(be.Backend), mdText(t.What), mdCode(t.Tool, true), argList(t.Args), mdCode(t.Rule, true), mdText(t.Expect), got, mark)
		}
	}
}

// mdPreamble names the server and the plan and says how to read a row:
// the kernel's answer, and why's beside it.
func (r *Report) mdPreamble(b *strings.Builder) {
	fmt.Fprintf(b, "# Evidence: what server %s can open\n\n", mdCode(r.Server, false))
	fmt.Fprintf(b, "Policy %s, plan %s. Kernel %s, Landlock ABI %d.\n\n", mdCode(r.PolicyFile, false), mdCode(r.Plan, false), mdText(r.Kernel), r.LandlockABI)
	b.WriteString("Each row is an access attempted by a probe — `mcpolicy probe`, not the server — under the server's compiled confinement, and the kernel's answer. ")
	b.WriteString("ENOENT: the path is not in the process's view of the filesystem at all. EACCES/EPERM: visible, refused by policy. EROFS: read-only. ")
	b.WriteString("Because the program differs from the server and the answer does not, the refusal is a property of the confinement, not of the server's code.\n\n")
	b.WriteString("The `mcpolicy why` column is why's answer for the same target on the same backend, from the same plan: the grant that makes it reachable, with its file:line:col, or the rules that stop it (evidence.json has each rule's detail). ")
	b.WriteString("⚠️ marks a row where why and the expectation differ: both come from the plan, so one of the two has a bug. It is shown, and listed under the table, but is not the kernel disagreeing (❌) and does not change the exit code.\n")
}

// mdCall lists the tool call's path arguments once, before the backends:
// each backend's comparison refers to them.
func mdCall(b *strings.Builder, c *CallPlan) {
	fmt.Fprintf(b, "\n**The tool call** %s (%s). Its path arguments, by how the tool uses them — each backend's server is given the path that backend shows (the host path under Landlock, the sandbox path elsewhere):\n\n", mdCode(c.Tool.Name, false), mdText(c.Listed))
	if len(c.Args) == 0 {
		b.WriteString("none: the call is shown, not judged.\n")
		return
	}
	b.WriteString("| argument | use | why | sandbox path | host path | plan |\n|---|---|---|---|---|---|\n")
	for _, a := range c.Args {
		expect := a.Expect
		if expect == "" {
			expect = "shown only"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s: %s |\n", mdText(a.Key), mdText(a.Use), mdText(a.Why), mdCode(a.Target, true), mdCode(a.Host, true), mdText(expect), mdText(a.Reason))
	}
}

// mdRows is a backend's table, a row per attempt, and returns the rows
// where why and the expectation differ, listed under it.
func mdRows(b *strings.Builder, rows []Row) (whyDis []Row) {
	b.WriteString("| access | target | expected | `mcpolicy why` says | kernel said | meaning | |\n|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		if row.Skipped != "" {
			fmt.Fprintf(b, "| %s %s | %s | %s | | not run | %s | |\n", mdText(row.Op), mdText(row.What), mdCode(row.Target, true), mdText(row.Expect), mdText(row.Skipped))
			continue
		}
		says := whyCell(row)
		if !row.WhyAgrees {
			whyDis = append(whyDis, row)
		}
		mark := "✅"
		if !row.Agrees {
			mark = "❌ **disagrees**"
		}
		expect := mdText(row.Expect)
		if row.Expect == "" {
			mark = ""
			if row.Why != "" {
				expect = "shown only: " + mdText(row.Why)
			}
		}
		fmt.Fprintf(b, "| %s %s | %s | %s | %s | **%s** | %s | %s |\n", mdText(row.Op), mdText(row.What), mdCode(row.Target, true), expect, says, mdText(row.Result), mdText(row.Meaning), mark)
	}
	return whyDis
}

// mdWhyDisagreements lists the rows where why and prove's expectation
// differ: a bug in one of the two, not the kernel's.
func mdWhyDisagreements(b *strings.Builder, whyDis []Row) {
	if len(whyDis) == 0 {
		return
	}
	fmt.Fprintf(b, "\n⚠️ **`mcpolicy why` and prove's expectation disagree on %d %s.** Both are computed from the plan alone, so one of the two has a bug; the kernel's answer above says which is right:\n\n", len(whyDis), plural(len(whyDis), "row", "rows"))
	for _, row := range whyDis {
		fmt.Fprintf(b, "- %s %s %s: %s\n", mdText(row.Op), mdText(row.What), mdCode(row.Target, false), mdText(row.WhyNote))
	}
}

// mdComparison sets the server's answer to the tool call beside the
// probe's for the same paths, then what the host saw change and what
// prove put back.
func (r *Report) mdComparison(b *strings.Builder, be BackendReport, sv *ServerRow) {
	b.WriteString("\n**The controlled comparison.** The same confinement, the real server, the same target:\n\n")
	if sv.Skipped != "" {
		fmt.Fprintf(b, "Not run: %s\n", mdText(sv.Skipped))
	} else {
		probe := sv.Probe
		if probe == "" {
			probe = "no path to probe"
		}
		fmt.Fprintf(b, "| program | asked | answer | result |\n|---|---|---|---|\n")
		fmt.Fprintf(b, "| probe | %s | | **%s** |\n", r.askedProbe(be), mdText(probe))
		fmt.Fprintf(b, "| server | %s %s | %s | %s |\n\n%s\n", mdCode(sv.Tool, true), argList(sv.Args), mdText(sv.Text), serverResult(sv), verdict(sv))
	}
	for _, h := range sv.Host {
		fmt.Fprintf(b, "\nThe host saw: %s.", mdText(h))
	}
	if len(sv.Restored) > 0 {
		fmt.Fprintf(b, "\nPut back afterwards: %s.", mdJoin(sv.Restored, "; "))
	}
	if len(sv.NotRestored) > 0 {
		fmt.Fprintf(b, "\n**Not put back:** %s.", mdJoin(sv.NotRestored, "; "))
	}
	if len(sv.Host)+len(sv.Restored)+len(sv.NotRestored) > 0 {
		b.WriteString("\n")
	}
	if sv.Stderr != "" {
		fmt.Fprintf(b, "\nThe server's stderr (last lines):\n\n%s", mdFence("", strings.Split(sv.Stderr, "\n")))
	}
}

// mdReproduce is a backend's reproduce commands, one a row that has one.
func mdReproduce(b *strings.Builder, rows []Row) {
	b.WriteString("\nTo reproduce a row, paste its command:\n\n")
	var commands []string
	for _, row := range rows {
		if row.Reproduce != "" {
			// One line each (mdFence spells a newline in a line): a
			// newline in a target or a name would make the rest of
			// the comment a command.
			commands = append(commands, fmt.Sprintf("%s   # %s -> %s", row.Reproduce, row.What, row.Result))
		}
	}
	b.WriteString(mdFence("sh", commands))
}

// Disagreements counts rows where the kernel and the plan differ, and
// server calls whose outcome (or whose write, as the host saw it) the
// plan denies.
func (r *Report) Disagreements() int {
	n := 0
	for _, be := range r.Backends {
		for _, row := range be.Rows {
			if !row.Agrees && row.Skipped == "" {
				n++
			}
		}
		if sv := be.Server; sv != nil && !sv.Agrees {
			n++
		}
		for _, t := range be.Tools {
			if !t.Agrees && t.Skipped == "" {
				n++
			}
		}
	}
	return n
}

// WhyDisagreements counts rows where `mcpolicy why` and prove's
// expectation differ: a bug in one of the two, not a sandbox wider than
// its plan, so not counted by Disagreements.
func (r *Report) WhyDisagreements() int {
	n := 0
	for _, be := range r.Backends {
		for _, row := range be.Rows {
			if !row.WhyAgrees && row.Skipped == "" {
				n++
			}
		}
	}
	return n
}

// whyCell is what `mcpolicy why` says of a row, for the report: the grants
// that make it reachable, with their positions, or the rules that stop
// it (the details are in evidence.json, and `mcpolicy why` prints them).
func whyCell(row Row) string {
	var parts []string
	for _, g := range row.Grant {
		parts = append(parts, mdText(g))
	}
	for _, s := range row.Stop {
		parts = append(parts, mdText(stopRule(s)))
	}
	cell := ""
	switch {
	case len(row.Grant) > 0:
		cell = "grant: " + strings.Join(parts, "; ")
	case len(row.Stop) > 0:
		cell = "stop: " + strings.Join(parts, ", ")
	case row.WhySays != "":
		cell = mdText(row.WhySays) // reachable through no grant: the read-only root, a direct route
	case row.WhyNote != "" && row.WhyAgrees:
		cell = mdText(row.WhyNote)
	}
	if !row.WhyAgrees {
		cell = strings.TrimSpace(cell + " ⚠️ **why disagrees**")
	}
	return cell
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// askedProbe is what the probe tried for the call's paths.
func (r *Report) askedProbe(be BackendReport) string {
	var asked []string
	for _, row := range be.Rows {
		if strings.HasPrefix(row.What, "--tool ") && row.Skipped == "" {
			asked = append(asked, fmt.Sprintf("%s %s → %s", mdText(row.Op), mdCode(row.Target, true), mdText(row.Result)))
		}
	}
	if len(asked) == 0 {
		return "nothing (no path argument)"
	}
	return strings.Join(asked, "; ")
}

// argList renders a call's arguments in key order.
func argList(args map[string]any) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, mdText(k)+"="+mdCode(fmt.Sprint(args[k]), true))
	}
	return strings.Join(out, " ")
}

// serverResult is the server's outcome: ok, an errno, or what it said when
// it refused by its own check.
func serverResult(sv *ServerRow) string {
	if sv.Errno != "" {
		return "**" + mdText(sv.Errno) + "**"
	}
	return "refused by the server: " + mdText(sv.Refused)
}

// verdict sets the two programs' outcomes side by side, then against the
// plan.
func verdict(sv *ServerRow) string {
	var v string
	probe, errno, expect, note := mdText(sv.Probe), mdText(sv.Errno), mdText(sv.Expect), mdText(sv.Note)
	probeOK := sv.Probe == "ok" || sv.Probe == ""
	switch {
	case !sv.Same:
		v = "Different results: the probe " + map[bool]string{true: "was allowed", false: "was refused (" + probe + ")"}[probeOK] +
			", the server " + map[bool]string{true: "was allowed", false: "was refused"}[sv.Errno == "ok"] + "."
	case sv.Errno == "ok":
		v = "Same result: both allowed."
	case sv.Errno == sv.Probe:
		v = "Same result: the refusal belongs to the confinement, not to either program."
	case sv.Errno == "":
		v = "Both refused: the kernel refused the probe (" + probe + "), the server refused by its own check before the kernel was asked."
	default:
		v = "Both refused: the kernel said " + probe + " to the probe and " + errno + " to the server."
	}
	switch {
	case !sv.Agrees:
		v += " ❌ **Disagrees with the plan** (expected " + expect + "): " + note + "."
	case sv.Expect != "":
		v += " ✅ As the plan says (expected " + expect + ")."
		if sv.Note != "" {
			r, n := utf8.DecodeRuneInString(sv.Note)
			v += " " + mdText(string(unicode.ToUpper(r))+sv.Note[n:]) + "."
		}
	}
	return v
}

// Escaping. evidence.md is reviewed rendered (GitHub's CommonMark with
// tables) and read raw (cat in a terminal), and most of what it shows
// was written by someone else: the server (its tool names, parameter
// keys and descriptions, results, error messages, stderr), a grant (a
// file name firstFile picked in a read-write mount, which the server can
// create), the policy, the machine. Every such string reaches the file
// through mdText, mdCode or mdFence, and each first goes through
// printable.String, so no control, bidi or other invisible character is
// ever written raw: no newline or carriage return ends a table row, no
// escape sequence runs in a terminal. Only prove's own words are written
// as they are.

// mdText is s as inline markdown text, in a table cell or a paragraph:
// it shows as s (its invisible characters spelled out) and can open
// nothing. < and & are HTML-escaped (no tag, comment or entity); | is
// escaped (no new cell); ` * [ ] ~ are escaped (no code span, emphasis,
// link, image or strikethrough), _ too except inside a word where it
// cannot open emphasis, $ when two could open GitHub's math, and a
// backslash where it would escape what follows. > is left: with no < and
// no line start, it opens nothing.
func mdText(s string) string {
	s = printable.String(s)
	if !strings.ContainsAny(s, "\\<&|`*[]~_$") {
		return s
	}
	math := strings.Count(s, "$") > 1
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		switch r {
		case '<':
			b.WriteString("&lt;")
			continue
		case '&':
			b.WriteString("&amp;")
			continue
		case '|', '`', '*', '[', ']', '~':
			b.WriteByte('\\')
		case '_':
			if i == 0 || i == len(rs)-1 || !wordRune(rs[i-1]) || !wordRune(rs[i+1]) {
				b.WriteByte('\\')
			}
		case '$':
			if math {
				b.WriteByte('\\')
			}
		case '\\':
			// Before ASCII punctuation (or at the end, before the
			// template's) a backslash would escape what follows: it is
			// doubled there, and only there.
			if i == len(rs)-1 || strings.ContainsRune(asciiPunct, rs[i+1]) {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// asciiPunct is what a backslash escapes in CommonMark.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// wordRune: a letter or digit, beside which an underscore on both sides
// can neither open nor close emphasis.
func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// mdJoin is mdText of each of ss, joined by sep.
func mdJoin(ss []string, sep string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = mdText(s)
	}
	return strings.Join(out, sep)
}

// mdCode is s as a code span: fenced by one backtick more than its
// longest run of backticks (the CommonMark rule, so nothing in it closes
// the span), padded with a space each side when it starts or ends with a
// backtick, or starts and ends with a space (which CommonMark would
// strip). In a table cell (cell), | is escaped: GFM splits a row into
// cells before it reads code spans. Inside a code span nothing else is
// markdown: no HTML, no emphasis, no entity.
func mdCode(s string, cell bool) string {
	s = printable.String(s)
	if cell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	if s == "" {
		return "` `" // a lone `` would be a run that a later span's fence could close
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if s[0] == '`' || s[len(s)-1] == '`' || s[0] == ' ' && s[len(s)-1] == ' ' && strings.Trim(s, " ") != "" {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

// mdFence is lines as a fenced code block with info string info: the
// fence is at least three backticks and longer than any run of backticks
// in the lines, so no line closes it. Each line is spelled by
// printable.String (a carriage return in a line is \x0d, not the end of
// one), tabs apart: a tab in a fenced block, a stack trace's indent, is
// harmless.
func mdFence(info string, lines []string) string {
	body := make([]string, len(lines))
	run := 2
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j, p := range parts {
			parts[j] = printable.String(p)
		}
		body[i] = strings.Join(parts, "\t")
		run = max(run, longestRun(body[i], '`'))
	}
	fence := strings.Repeat("`", run+1)
	var b strings.Builder
	b.WriteString(fence + info + "\n")
	for _, l := range body {
		b.WriteString(l + "\n")
	}
	b.WriteString(fence + "\n")
	return b.String()
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != c {
			n = 0
			continue
		}
		n++
		longest = max(longest, n)
	}
	return longest
}
