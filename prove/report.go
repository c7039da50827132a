package prove

import (
	"encoding/json"
	"fmt"
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
	b.WriteString("Because the program differs from the server and the answer does not, the refusal is a property of the confinement, not of the server's code.\n")
	for _, be := range r.Backends {
		fmt.Fprintf(&b, "\n## %s\n\n", be.Backend)
		if be.Skipped != "" {
			fmt.Fprintf(&b, "Not run: %s\n", be.Skipped)
			continue
		}
		fmt.Fprintf(&b, "%s. How the probe got in: %s.\n\n", be.Version, be.Probe)
		b.WriteString("| access | target | expected | kernel said | meaning | |\n|---|---|---|---|---|---|\n")
		for _, row := range be.Rows {
			mark := "✅"
			if !row.Agrees {
				mark = "❌ **disagrees**"
			}
			if row.Expect == "" {
				mark = ""
			}
			fmt.Fprintf(&b, "| %s %s | `%s` | %s | **%s** | %s | %s |\n", row.Op, row.What, row.Target, row.Expect, row.Result, row.Meaning, mark)
		}
		if sv := be.Server; sv != nil {
			b.WriteString("\n**The controlled comparison.** The same confinement, the real server, the same target:\n\n")
			if sv.Skipped != "" {
				fmt.Fprintf(&b, "Not run: %s\n", sv.Skipped)
			} else {
				verdict := "same result: the refusal belongs to the confinement, not to either program"
				if !sv.Same {
					verdict = "different results"
				}
				fmt.Fprintf(&b, "| program | asked | answer | errno |\n|---|---|---|---|\n")
				fmt.Fprintf(&b, "| probe | read | | **%s** |\n", sv.Probe)
				fmt.Fprintf(&b, "| server | `%s` %v | %s | **%s** |\n\n%s.\n", sv.Tool, sv.Args, mdCell(sv.Text), sv.Errno, verdict)
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

// Disagreements counts rows where the kernel and the plan differ.
func (r *Report) Disagreements() int {
	n := 0
	for _, be := range r.Backends {
		for _, row := range be.Rows {
			if !row.Agrees {
				n++
			}
		}
	}
	return n
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
