package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/writereport"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/spf13/cobra"
)

// sessionsOptions are sessions' flags.
type sessionsOptions struct {
	streams
	Policy  string
	Last    int    // the newest N sessions; 0 all
	Details bool   // every entry of each
	Accept  string // mark this session (or all) reviewed
}

func newSessionsCmd() *cobra.Command {
	opts := &sessionsOptions{}
	cmd := &cobra.Command{
		Use:   "sessions [-p POLICY] [--last N] [--details] [--accept ID|all]",
		Short: "List the project's last server sessions and what each wrote in its read-write grants",
		Long: `sessions lists the sessions mcpolicy-launch recorded for the project
($XDG_STATE_HOME/mcpolicy, else ~/.local/state/mcpolicy), newest first:
the server, the backend, when, and how many entries of its read-write
grants git does not track were created or changed during it, and how many
are of a kind a host runs (bytecode, .pth, shared objects, executables,
hooks, build files and .envrc below the project's top, node_modules/.bin,
symlinks, setuid, a .git below the top, conftest.py, sitecustomize.py,
anything in a python environment, a tracked path now of another type).
--details lists each entry. The first line says how many sessions were
read, and from which folder: a client started with another XDG_STATE_HOME
records elsewhere. Records in a folder that is not yours, or that group or
others may write, are refused. --accept ID (or all) marks sessions
reviewed: what they wrote until now no longer fails ` + "`mcpolicy check`" + `.
A session is pruned (beyond the last 100) only once a report found it
ended with nothing pending; an engine's or Landlock's session whose
launcher is gone stays open until accepted (its container, or a daemon,
may still run).`,
		Example: `  mcpolicy sessions --details --last 3
  mcpolicy sessions --accept all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.streams = streamsOf(cmd)
			return sessionsRun(opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().IntVar(&opts.Last, "last", 10, "the newest N sessions (0: all kept)")
	cmd.Flags().BoolVar(&opts.Details, "details", false, "list every entry of each session")
	cmd.Flags().StringVar(&opts.Accept, "accept", "", "mark a session (its ID, or all) reviewed")
	return cmd
}

// sessionsRun lists the project's recorded sessions, or with --accept
// marks them reviewed.
func sessionsRun(opts *sessionsOptions) error {
	proj, err := project.Discover(opts.Policy)
	if err != nil {
		return err
	}
	state := writereport.StateDir(os.Getenv)
	if state == "" {
		return fmt.Errorf("no HOME and no XDG_STATE_HOME: no session is recorded")
	}
	if opts.Accept != "" {
		ids, err := writereport.Accept(state, proj.Root, opts.Accept)
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.Out, "accepted: %s\n", strings.Join(ids, ", "))
		return nil
	}
	// As check reads them (a policy that no longer compiles: without
	// the servers' names and mounts).
	home, _ := os.UserHomeDir()
	plans, _ := proj.Compile(home)
	reps, err := proj.WriteReports(state, plans, home, opts.Last)
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.Out, writereport.Summary(len(reps), state, proj.Root))
	for _, r := range reps {
		fmt.Fprintln(opts.Out, r.Head())
		if opts.Details {
			for _, l := range r.Details() {
				fmt.Fprintln(opts.Out, l)
			}
		}
	}
	return nil
}
