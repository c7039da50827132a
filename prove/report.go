package prove

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// JSON renders the report.
func (r *Report) JSON() []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic("internal error: report does not marshal: " + err.Error())
	}
	return append(b, '\n')
}

// Markdown renders the report for a reviewer.
func (r *Report) Markdown() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Evidence: what server `%s` can open\n\n", r.Server)
	fmt.Fprintf(&b, "Policy `%s`, plan `%s`. Kernel %s, Landlock ABI %d.\n\n", r.PolicyFile, r.Plan, r.Kernel, r.LandlockABI)
	b.WriteString("Each row is an access attempted by a probe — `mcpolicy probe`, not the server — under the server's compiled confinement, and the kernel's answer. ")
	b.WriteString("ENOENT: the path is not in the process's view of the filesystem at all. EACCES/EPERM: visible, refused by policy. EROFS: read-only. ")
	b.WriteString("Because the program differs from the server and the answer does not, the refusal is a property of the confinement, not of the server's code.\n\n")
	b.WriteString("The `mcpolicy why` column is why's answer for the same target on the same backend, from the same plan: the grant that makes it reachable, with its file:line:col, or the rules that stop it (evidence.json has each rule's detail). ")
	b.WriteString("⚠️ marks a row where why and the expectation differ: both come from the plan, so one of the two has a bug. It is shown, and listed under the table, but is not the kernel disagreeing (❌) and does not change the exit code.\n")
	if c := r.Call; c != nil {
		fmt.Fprintf(&b, "\n**The tool call** `%s` (%s). Its path arguments, by how the tool uses them — each backend's server is given the path that backend shows (the host path under Landlock, the sandbox path elsewhere):\n\n", c.Tool.Name, c.Listed)
		if len(c.Args) == 0 {
			b.WriteString("none: the call is shown, not judged.\n")
		} else {
			b.WriteString("| argument | use | why | sandbox path | host path | plan |\n|---|---|---|---|---|---|\n")
			for _, a := range c.Args {
				expect := a.Expect
				if expect == "" {
					expect = "shown only"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | `%s` | `%s` | %s: %s |\n", a.Key, a.Use, mdCell(a.Why), a.Target, a.Host, expect, mdCell(a.Reason))
			}
		}
	}
	for _, be := range r.Backends {
		fmt.Fprintf(&b, "\n## %s\n\n", be.Backend)
		if be.Skipped != "" {
			fmt.Fprintf(&b, "Not run: %s\n", be.Skipped)
			continue
		}
		fmt.Fprintf(&b, "%s. How the probe got in: %s.\n\n", be.Version, be.Probe)
		b.WriteString("| access | target | expected | `mcpolicy why` says | kernel said | meaning | |\n|---|---|---|---|---|---|---|\n")
		var whyDis []Row
		for _, row := range be.Rows {
			if row.Skipped != "" {
				fmt.Fprintf(&b, "| %s %s | `%s` | %s | | not run | %s | |\n", row.Op, mdCell(row.What), row.Target, row.Expect, mdCell(row.Skipped))
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
			expect := row.Expect
			if row.Expect == "" {
				mark = ""
				if row.Why != "" {
					expect = "shown only: " + mdCell(row.Why)
				}
			}
			fmt.Fprintf(&b, "| %s %s | `%s` | %s | %s | **%s** | %s | %s |\n", row.Op, mdCell(row.What), row.Target, expect, says, row.Result, row.Meaning, mark)
		}
		if len(whyDis) > 0 {
			fmt.Fprintf(&b, "\n⚠️ **`mcpolicy why` and prove's expectation disagree on %d %s.** Both are computed from the plan alone, so one of the two has a bug; the kernel's answer above says which is right:\n\n", len(whyDis), plural(len(whyDis), "row", "rows"))
			for _, row := range whyDis {
				fmt.Fprintf(&b, "- %s %s `%s`: %s\n", row.Op, mdCell(row.What), row.Target, mdCell(row.WhyNote))
			}
		}
		if sv := be.Server; sv != nil {
			b.WriteString("\n**The controlled comparison.** The same confinement, the real server, the same target:\n\n")
			if sv.Skipped != "" {
				fmt.Fprintf(&b, "Not run: %s\n", mdCell(sv.Skipped))
			} else {
				probe := sv.Probe
				if probe == "" {
					probe = "no path to probe"
				}
				fmt.Fprintf(&b, "| program | asked | answer | result |\n|---|---|---|---|\n")
				fmt.Fprintf(&b, "| probe | %s | | **%s** |\n", r.askedProbe(be), probe)
				fmt.Fprintf(&b, "| server | `%s` %s | %s | %s |\n\n%s\n", sv.Tool, argList(sv.Args), mdCell(sv.Text), serverResult(sv), verdict(sv))
			}
			for _, h := range sv.Host {
				fmt.Fprintf(&b, "\nThe host saw: %s.", h)
			}
			if len(sv.Restored) > 0 {
				fmt.Fprintf(&b, "\nPut back afterwards: %s.", strings.Join(sv.Restored, "; "))
			}
			if len(sv.NotRestored) > 0 {
				fmt.Fprintf(&b, "\n**Not put back:** %s.", strings.Join(sv.NotRestored, "; "))
			}
			if len(sv.Host)+len(sv.Restored)+len(sv.NotRestored) > 0 {
				b.WriteString("\n")
			}
			if sv.Stderr != "" {
				fmt.Fprintf(&b, "\nThe server's stderr (last lines):\n\n```\n%s\n```\n", sv.Stderr)
			}
		}
		b.WriteString("\nTo reproduce a row, paste its command:\n\n```sh\n")
		for _, row := range be.Rows {
			if row.Reproduce != "" {
				fmt.Fprintf(&b, "%s   # %s -> %s\n", row.Reproduce, row.What, row.Result)
			}
		}
		b.WriteString("```\n")
	}
	return []byte(b.String())
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
		parts = append(parts, mdCell(g))
	}
	for _, s := range row.Stop {
		parts = append(parts, mdCell(stopRule(s)))
	}
	cell := ""
	switch {
	case len(row.Grant) > 0:
		cell = "grant: " + strings.Join(parts, "; ")
	case len(row.Stop) > 0:
		cell = "stop: " + strings.Join(parts, ", ")
	case row.WhySays != "":
		cell = mdCell(row.WhySays) // reachable through no grant: the read-only root, a direct route
	case row.WhyNote != "" && row.WhyAgrees:
		cell = mdCell(row.WhyNote)
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
			asked = append(asked, fmt.Sprintf("%s `%s` → %s", row.Op, row.Target, row.Result))
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
		out = append(out, fmt.Sprintf("%s=`%v`", k, args[k]))
	}
	return strings.Join(out, " ")
}

// serverResult is the server's outcome: ok, an errno, or what it said when
// it refused by its own check.
func serverResult(sv *ServerRow) string {
	if sv.Errno != "" {
		return "**" + sv.Errno + "**"
	}
	return "refused by the server: " + mdCell(sv.Refused)
}

// verdict sets the two programs' outcomes side by side, then against the
// plan.
func verdict(sv *ServerRow) string {
	var v string
	probeOK := sv.Probe == "ok" || sv.Probe == ""
	switch {
	case !sv.Same:
		v = "Different results: the probe " + map[bool]string{true: "was allowed", false: "was refused (" + sv.Probe + ")"}[probeOK] +
			", the server " + map[bool]string{true: "was allowed", false: "was refused"}[sv.Errno == "ok"] + "."
	case sv.Errno == "ok":
		v = "Same result: both allowed."
	case sv.Errno == sv.Probe:
		v = "Same result: the refusal belongs to the confinement, not to either program."
	case sv.Errno == "":
		v = "Both refused: the kernel refused the probe (" + sv.Probe + "), the server refused by its own check before the kernel was asked."
	default:
		v = "Both refused: the kernel said " + sv.Probe + " to the probe and " + sv.Errno + " to the server."
	}
	switch {
	case !sv.Agrees:
		v += " ❌ **Disagrees with the plan** (expected " + sv.Expect + "): " + sv.Note + "."
	case sv.Expect != "":
		v += " ✅ As the plan says (expected " + sv.Expect + ")."
		if sv.Note != "" {
			v += " " + strings.ToUpper(sv.Note[:1]) + sv.Note[1:] + "."
		}
	}
	return v
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
