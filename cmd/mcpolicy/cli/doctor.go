package cli

import (
	"encoding/json"
	"time"

	"github.com/mcpolicy/mcpolicy/evidence/doctor"
	"github.com/spf13/cobra"
)

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check which backends (bwrap, landlock, docker, podman) can run servers on this machine",
		Long: `doctor tries every backend on this machine, as the user running it, and
prints a table: the backend, its status, what was found, and how to fix it.

  ok           runs, enforcing everything the backend can
  degraded     runs weaker; policies must accept the degradations named
  unavailable  cannot run a server here

It starts a real bwrap sandbox (so a kernel or AppArmor setting that denies
user namespaces is named, with the sysctl or profile that fixes it), reads
the Landlock ABI and tries the namespaces mcpolicy exec uses, and asks the
docker and podman engines for their version. Each check has a timeout.
On macOS it checks seatbelt's sandbox-exec instead, and reports bwrap,
landlock, docker and podman as needing Linux.

It exits 0 when at least one backend is ok, and 4 when none is.`,
		Example: `  mcpolicy doctor
  mcpolicy doctor --json | jq -r '.usable[]'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := doctor.New()
			c.Timeout = timeout
			rep := c.Check(cmd.Context())
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else if err := doctor.WriteTable(out, rep); err != nil {
				return err
			}
			if len(rep.Usable) == 0 {
				return &errSilent{code: ExitUnsupported}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().DurationVar(&timeout, "timeout", 20*time.Second, "time allowed to each check")
	return cmd
}
