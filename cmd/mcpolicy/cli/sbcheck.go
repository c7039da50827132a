package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/mcpolicy/mcpolicy/emit/seatbelt"
	"github.com/spf13/cobra"
)

// checkProfileOptions are check-profile's flags and argument.
type checkProfileOptions struct {
	streams
	Profile string   // the .sb file
	Defines []string // -D NAME=VALUE, as sandbox-exec gets them
}

func newCheckProfileCmd() *cobra.Command {
	opts := &checkProfileOptions{}
	cmd := &cobra.Command{
		Use:   "check-profile PROFILE.sb [-D NAME=VALUE...]",
		Short: "Parse and check a macOS seatbelt profile offline",
		Long: `check-profile reads any SBPL profile (ours or hand-written) and checks its
structure: balanced, (version 1) first, (deny default) present, known
operation and filter names, no (allow default), no unfiltered file-write*
or network* allow, no network allow but the egress proxy's
(allow network-outbound (remote tcp "localhost:PORT")), and — when -D names
are given as sandbox-exec would get them — every (param ...) defined.
It refuses the over-grants the widely used profiles do without: an
unfiltered sysctl-read (kern.proc.all and kern.procargs2 list every
process and its command line) or ipc-posix-shm, an allow reaching
Homebrew's var or etc, (remote ip ...) for the proxy (UDP too); and a
protected path such as .git kept from writes while a folder above it
can be renamed (mv .git g; edit g/config; mv g .git).
It refuses the ways out of the sandbox, each at its line and column with
the reason: a program run (with no-sandbox); an allow that names no path
or service (an unfiltered file-read*, writes behind vnode-type alone, an
unfiltered mach-lookup, file-ioctl on the terminals); lsopen and
appleevent-send (other applications act outside the sandbox); listening
on the host's network; kern.proc.pid.* and other process-listing
sysctls; other processes' task ports (mach-priv*); and rules it cannot
see: (import ...), rules inside a condition or a define. Smaller reaches
(file-read-metadata everywhere, a unix socket listener, an unfiltered
system-socket) are warnings. It exits 2 when it finds an error.`,
		Example: `  mcpolicy check-profile .mcpolicy/seatbelt/code-index.sb -D MOUNT_0=/x -D MOUNT_1=/y -D SCRATCH=/z
  mcpolicy check-profile ~/Library/my-server.sb`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.streams, opts.Profile = streamsOf(cmd), args[0]
			return checkProfileRun(opts)
		},
	}
	cmd.Flags().StringArrayVarP(&opts.Defines, "define", "D", nil, "a parameter sandbox-exec gets (NAME=VALUE); when any is given, every (param) must be one")
	return cmd
}

// checkProfileRun parses the profile and prints each finding; an error
// among them is exit 2.
func checkProfileRun(opts *checkProfileOptions) error {
	src, err := os.ReadFile(opts.Profile)
	if err != nil {
		return err
	}
	forms, err := seatbelt.Parse(string(src))
	if err != nil {
		return &exitError{code: ExitInvalid, err: fmt.Errorf("%s:%v", opts.Profile, err)}
	}
	var params map[string]bool
	if len(opts.Defines) > 0 {
		params = map[string]bool{}
		for _, d := range opts.Defines {
			name, _, _ := strings.Cut(d, "=")
			params[name] = true
		}
	}
	errors := 0
	for _, f := range seatbelt.Check(forms, params) {
		fmt.Fprintf(opts.Out, "%s:%s\n", opts.Profile, f)
		if f.Severity == "error" {
			errors++
		}
	}
	if errors > 0 {
		return &errSilent{code: ExitInvalid}
	}
	fmt.Fprintf(opts.Out, "%s: ok, %d rules\n", opts.Profile, len(seatbelt.Rules(forms)))
	return nil
}
