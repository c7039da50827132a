package cli

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpolicy/mcpolicy/evidence/doctor"
	"github.com/spf13/cobra"
)

// doctorOptions are doctor's flags.
type doctorOptions struct {
	streams
	JSON    bool
	Timeout time.Duration // per check
}

func newDoctorCmd() *cobra.Command {
	opts := &doctorOptions{}
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
			opts.streams = streamsOf(cmd)
			return doctorRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 20*time.Second, "time allowed to each check")
	return cmd
}

// doctorRun checks every backend here and prints the report; none usable
// is exit 4.
func doctorRun(ctx context.Context, opts *doctorOptions) error {
	c := doctor.New()
	c.Timeout = opts.Timeout
	rep := c.Check(ctx)
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := doctor.WriteTable(opts.Out, rep); err != nil {
		return err
	}
	if len(rep.Usable) == 0 {
		return &errSilent{code: ExitUnsupported}
	}
	return nil
}
