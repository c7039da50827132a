package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpolicy/mcpolicy/evidence/doctor"
	"github.com/spf13/cobra"
)

// doctorOptions are doctor's flags.
type doctorOptions struct {
	streams
	Format  string
	JSON    bool          // --json: the earlier spelling of --format json
	Timeout time.Duration // per check
	// --server: start that server through its entry (doctorserver.go).
	Server, Backend, Client, Policy string
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

It exits 0 when at least one backend is ok, and 4 when none is.

With --server S it starts that server instead, through its real entry (the
one mcpolicy client writes, or the one --client FILE holds), on each
backend of its plan (or --backend), speaks MCP to it (initialize,
tools/list, within --timeout) and prints per backend: ok, with the number
of tools and the time from spawn to the answer, or the failure explained
in grant terms from the launch log (the launcher's record of the start:
a refusal and its fix, or the exit status and the last stderr lines) —
a missing path and the mount that gives it, a read-only one and the
scratch or mount that makes it writable, a program not on the sandbox's
PATH, a read-write grant the server's user cannot write. It exits 5 when
a backend failed.`,
		Example: `  mcpolicy doctor
  mcpolicy doctor --format json | jq -r '.usable[]'
  mcpolicy doctor --server gopls
  mcpolicy doctor --server gopls --client .mcp.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.streams = streamsOf(cmd)
			if opts.JSON {
				if cmd.Flags().Changed("format") && opts.Format != "json" {
					return &exitError{code: ExitError, err: fmt.Errorf("--json and --format %s: give one", opts.Format)}
				}
				opts.Format = "json"
			}
			if opts.Server != "" {
				return doctorServerRun(cmd.Context(), opts)
			}
			if opts.Backend != "" || opts.Client != "" {
				return &exitError{code: ExitError, err: errors.New("--backend and --client go with --server")}
			}
			return doctorRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Server, "server", "", "start this server through its entry and explain a failure")
	cmd.Flags().StringVarP(&opts.Backend, "backend", "b", "", "with --server: only this backend")
	cmd.Flags().StringVar(&opts.Client, "client", "", "with --server: the client file whose entry to start")
	policyFlag(cmd, &opts.Policy)
	formatFlag(cmd, &opts.Format, "text", "json")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "the earlier spelling of --format json")
	aliasFlag(cmd, "json", "--format json")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 20*time.Second, "time allowed to each check")
	return cmd
}

// doctorRun checks every backend here and prints the report; none usable
// is exit 4.
func doctorRun(ctx context.Context, opts *doctorOptions) error {
	c := doctor.New()
	c.Timeout = opts.Timeout
	rep := c.Check(ctx)
	if opts.Format == "json" {
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
