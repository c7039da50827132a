package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/suggest"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
	"github.com/spf13/cobra"
)

// suggestOptions are suggest's flags.
type suggestOptions struct {
	streams
	Policy  string
	Server  string
	LogFile string   // --from-log; "" the server's own, "-" stdin
	Private []string // --allow-private
	Write   bool     // apply the patch
}

func newSuggestCmd() *cobra.Command {
	opts := &suggestOptions{}
	cmd := &cobra.Command{
		Use:   "suggest [--from-log FILE] [-p POLICY] [--server S] [--allow-private ADDR] [--write]",
		Short: "The smallest policy change that would allow what the egress proxy denied, as a patch",
		Long: `suggest reads the egress proxy's decision log (the server's own file, which
mcpolicy run appends to, by default; or --from-log FILE: mcpolicy run --log
FILE, or a stderr where lines that are not decisions are ignored; "-" reads
stdin) and
prints, as a unified diff of the policy file, the smallest change that
would have allowed what was denied: one exact host:port entry per denied
destination, deduplicated and sorted, added to the server's network.allow
where it is written (the list extended in its own layout, or made), every
other line of the file kept.

It never suggests a wildcard, and never a private address (loopback,
RFC 1918, link-local, ...) unless you name it with --allow-private ADDR. A
name that resolved to a private address gets no suggestion at all: no
entry naming a host allows a private answer. Denials no entry would change
(a name that does not resolve, an upstream failure, a connection from
outside the sandbox) are listed on stderr with the reason.

With --log -, mcpolicy run writes the decisions to the stderr it shares
with the server, which can write lines of its own that read as decisions:
suggest from a log only the proxy writes. What a line holds that a
terminal would act on (escape sequences, bidi overrides) is printed
escaped (\x1b, \u202e).

For a server with a tools section, it also reads the tool relay's
decisions (the server's launch log, $XDG_STATE_HOME/mcpolicy/logs/, or the
same --from-log): a tool call refused because no entry of tools.allow
matches it is proposed as that one tool, by its exact name (never a glob),
added to tools.allow. What else refused a call is said on stderr with the
rule's field: a deny (never removed: narrow or remove it by hand), an
argument constraint (the one widening it needs: the folder to add to
under, the maxBytes, the pattern, the enum; the log keeps no argument's
value), or the pin (run mcpolicy pin).

The patch is printed, not applied (--write applies it): it is a widening,
and mcpolicy diff reports each entry as EGRESS_ADDED, so it goes through
review like any other change. Apply it with git apply or patch -p1 from
the current folder.`,
		Example: `  mcpolicy run -p . --server github --backend bwrap
  mcpolicy suggest --server github > allow.patch
  git apply allow.patch && mcpolicy diff`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.streams = streamsOf(cmd)
			return suggestRun(opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringVar(&opts.LogFile, "from-log", "", `the decision log (JSON lines; "-" for stdin)`)
	cmd.Flags().StringVar(&opts.Server, "server", "", "the server the log is of (needed when the policy has several with an allowlist)")
	cmd.Flags().StringArrayVar(&opts.Private, "allow-private", nil, "a private address that may be suggested when a request named it (repeatable)")
	cmd.Flags().BoolVar(&opts.Write, "write", false, "apply the patch to the policy file (default: print it only)")
	return cmd
}

// suggestRun reads the server's decision log and prints (or applies)
// the patch that allows what it denied.
func suggestRun(opts *suggestOptions) error {
	var addrs []netip.Addr
	for _, p := range opts.Private {
		a, err := netip.ParseAddr(strings.Trim(p, "[]"))
		if err != nil {
			return &exitError{code: ExitError, err: fmt.Errorf("--allow-private %q: want an address (10.0.0.5, fd00::5)", p)}
		}
		addrs = append(addrs, a.Unmap())
	}
	proj, plans, err := compileProject(opts.Policy)
	if err != nil {
		return err
	}
	plan, err := suggestServer(plans, opts.Server, opts.Policy)
	if err != nil {
		return err
	}
	grants := writable(proj, plans)
	eo := suggest.Options{Private: addrs, Allowed: plan.Network.Rules()}
	var res *suggest.Result
	var tools *suggest.ToolResult
	switch {
	case opts.LogFile != "":
		// One log, read once for both: the egress proxy's decisions
		// and the tool relay's (a launch log).
		in, logFile, err := opts.openLog(proj, plans, plan, grants)
		if err != nil {
			return err
		}
		defer in.Close()
		if res, tools, err = readBoth(in, plan, eo); err != nil {
			return &exitError{code: ExitError, err: fmt.Errorf("%s: %v", logFile, err)}
		}
		// The launch log's lines are not the server's output.
		res.Other = max(0, res.Other-tools.Launch)
		reportUnsuggested(opts.Err, logFile, res)
	default:
		if plan.Network.Mode == "allowlist" || plan.Tools == nil {
			in, logFile, err := opts.openLog(proj, plans, plan, grants)
			if err != nil {
				return err
			}
			defer in.Close()
			if res, err = suggest.Read(in, eo); err != nil {
				return &exitError{code: ExitError, err: fmt.Errorf("%s: %v", logFile, err)}
			}
			reportUnsuggested(opts.Err, logFile, res)
		}
		if plan.Tools != nil {
			if tools, err = opts.readLaunchLog(proj, plan); err != nil {
				return err
			}
		}
	}
	if tools != nil {
		reportTools(opts.Err, tools)
	}
	if (res == nil || len(res.Add) == 0) && (tools == nil || len(tools.Allow) == 0) {
		if res != nil {
			fmt.Fprintf(opts.Err, "nothing to suggest for %s: %d decisions, %d denied\n", plan.Server, res.Lines, res.Denials)
		}
		if tools != nil {
			fmt.Fprintf(opts.Err, "nothing to allow for %s: %d tool relay decisions, %d calls refused\n", plan.Server, tools.Decisions, tools.Refused)
		}
		return nil
	}
	return opts.patch(proj, plan, res, tools, grants)
}

// readBoth reads one log for the egress proxy's decisions and the tool
// relay's, side by side, as it streams: nothing of it is held whole.
func readBoth(in io.Reader, plan *compiler.Plan, eo suggest.Options) (*suggest.Result, *suggest.ToolResult, error) {
	er, ew := io.Pipe()
	tr, tw := io.Pipe()
	go func() {
		_, err := io.Copy(io.MultiWriter(ew, tw), in)
		ew.CloseWithError(err)
		tw.CloseWithError(err)
	}()
	var (
		tools *suggest.ToolResult
		terr  error
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		tools, terr = suggest.ReadTools(tr, plan.Server, plan.Tools)
		io.Copy(io.Discard, tr) // the other reader is not held up by this one's error
	}()
	res, err := suggest.Read(er, eo)
	io.Copy(io.Discard, er)
	<-done
	if err == nil {
		err = terr
	}
	return res, tools, err
}

// readLaunchLog reads the server's launch log (runtime/launchlog) for the
// tool relay's decisions; a server with none yet has nothing to suggest.
func (opts *suggestOptions) readLaunchLog(proj *project.Project, plan *compiler.Plan) (*suggest.ToolResult, error) {
	state := launchlog.StateDir(os.Getenv)
	if state == "" {
		return &suggest.ToolResult{}, nil
	}
	path := launchlog.Path(state, proj.Root, plan.Server)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(opts.Err, "server %s has no launch log yet (%s): the tool relay logs there what it refuses\n", plan.Server, path)
		return &suggest.ToolResult{}, nil
	}
	if err != nil {
		return nil, &exitError{code: ExitError, err: err}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, &exitError{code: ExitError, err: fmt.Errorf("%s: not a regular file", path)}
	}
	res, err := suggest.ReadTools(f, plan.Server, plan.Tools)
	if err != nil {
		return nil, &exitError{code: ExitError, err: fmt.Errorf("%s: %v", path, err)}
	}
	return res, nil
}

// reportTools says on stderr each tool refusal suggest makes no patch for:
// the rule that refused it and what would change that.
func reportTools(stderr io.Writer, res *suggest.ToolResult) {
	for _, n := range res.Notes {
		what := "a call"
		if n.Tool != "" {
			what = fmt.Sprintf("tool %q", n.Tool)
		}
		if n.Arg != "" {
			what += fmt.Sprintf(" argument %q", n.Arg)
		}
		fmt.Fprintf(stderr, "not suggested: %s (%s): %s\n", what, timesRefused(n.Count), n.Say)
	}
}

func timesRefused(n int) string {
	if n == 1 {
		return "1 decision"
	}
	return fmt.Sprintf("%d decisions", n)
}

// openLog opens the decision log: the server's own by default, --from-log
// FILE (warning when a server may write it), or stdin. It returns the
// name the messages give it.
func (opts *suggestOptions) openLog(proj *project.Project, plans []*compiler.Plan, plan *compiler.Plan, grants []string) (io.ReadCloser, string, error) {
	home, _ := os.UserHomeDir()
	switch opts.LogFile {
	case "":
		machine := compiler.Machine{ProjectRoot: proj.Root, Home: home}
		f, path, err := supervise.OpenDefaultLogToRead(plan.Server, machine, grants)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", &exitError{code: ExitError, err: fmt.Errorf("server %s has no decision log yet (%s): mcpolicy run writes it when the proxy decides; or name one with --from-log", plan.Server, path)}
		}
		if err != nil {
			return nil, "", &exitError{code: ExitError, err: err}
		}
		return f, path, nil
	case "-":
		return io.NopCloser(opts.In), opts.LogFile, nil
	}
	// The grants the servers have now: the project as a whole (in
	// grants, for what mcpolicy writes) is not one.
	if abs, err := filepath.Abs(opts.LogFile); err == nil {
		if g, inside := launch.InsideAny(abs, proj.Granted(plans, home)); inside {
			fmt.Fprintf(opts.Err, "warning: %s lies inside %s, which a server of this project may write: its lines may be the server's, not the proxy's\n", opts.LogFile, g)
		}
	}
	f, err := os.Open(opts.LogFile)
	if err != nil {
		return nil, "", &exitError{code: ExitError, err: err}
	}
	return f, opts.LogFile, nil
}

// reportUnsuggested says on stderr what of the log suggest cannot vouch
// for (lines that are not decisions, a full log) and each denial it
// suggests nothing for, with the reason.
func reportUnsuggested(stderr io.Writer, logFile string, res *suggest.Result) {
	if res.Other > 0 {
		// What reads as a decision there may be the server's own.
		fmt.Fprintf(stderr, "warning: %s: %s not decisions: the log is shared with a server's output (mcpolicy run --log -), which can write lines that read as denials; suggest from a log only the proxy writes (mcpolicy run's default, or --log FILE)\n", logFile, notDecisions(res.Other))
	}
	if res.Full > 0 {
		fmt.Fprintf(stderr, "warning: %s: the log reached its limit (--log-max) and decisions after that were not logged: what they denied is not suggested; move the log aside and run again\n", logFile)
	}
	for _, s := range res.Skipped {
		dest := s.Dest
		if dest == "" {
			dest = "(no destination)"
		}
		fmt.Fprintf(stderr, "not suggested: %s (%s, %s): %s\n", dest, s.Denied, times(s.Count), s.Why)
	}
}

// patch prints the policy file's patch adding res's entries, and with
// --write applies it.
func (opts *suggestOptions) patch(proj *project.Project, plan *compiler.Plan, res *suggest.Result, tools *suggest.ToolResult, grants []string) error {
	// Each edit goes to the file that writes what it extends: the
	// network, the tools section (one patch when they are one file).
	type edit struct {
		file  string
		apply func(file string, src []byte) (*suggest.Patch, error)
	}
	var edits []edit
	if res != nil && len(res.Add) > 0 {
		edits = append(edits, edit{orFile(plan.Network.Pos.File, plan.Pos.File), func(file string, src []byte) (*suggest.Patch, error) {
			return suggest.PatchFile(file, src, plan.Server, res.Entries(), proj.Root)
		}})
	}
	if tools != nil && len(tools.Allow) > 0 {
		edits = append(edits, edit{orFile(plan.ToolsPos.Section.File, plan.Pos.File), func(file string, src []byte) (*suggest.Patch, error) {
			return suggest.PatchToolsFile(file, src, plan.Server, tools.Names(), proj.Root)
		}})
	}
	var files []string
	olds, news := map[string][]byte{}, map[string][]byte{}
	for _, e := range edits {
		if e.file == "" {
			return &exitError{code: ExitError, err: fmt.Errorf("internal error: no file holds server %q", plan.Server)}
		}
		if _, ok := news[e.file]; !ok {
			src, err := os.ReadFile(e.file)
			if err != nil {
				return &exitError{code: ExitError, err: err}
			}
			files = append(files, e.file)
			olds[e.file], news[e.file] = src, src
		}
		p, err := e.apply(e.file, news[e.file])
		if err != nil {
			return &exitError{code: ExitError, err: err}
		}
		news[e.file] = p.New
	}
	if res != nil {
		for _, e := range res.Add {
			fmt.Fprintf(opts.Err, "suggested: %s (%s: %s)\n", e.Dest, times(e.Count), strings.Join(e.Methods, ", "))
		}
	}
	if tools != nil {
		for _, a := range tools.Allow {
			fmt.Fprintf(opts.Err, "suggested: tool %s, by its exact name (%s refused: not in tools.allow)\n", a.Tool, callsOf(a.Count))
		}
	}
	for _, file := range files {
		fmt.Fprint(opts.Out, suggest.Unified(patchName(file), olds[file], news[file]))
	}
	if opts.Write {
		for _, file := range files {
			if err := hostfile.WriteFile(file, news[file], fileMode(file), grants); err != nil {
				return err // a link planted there is exit 8, as every refused tampering
			}
			fmt.Fprintf(opts.Err, "wrote %s: review it with mcpolicy diff\n", file)
		}
	}
	return nil
}

func orFile(file, otherwise string) string {
	if file != "" {
		return file
	}
	return otherwise
}

func callsOf(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// suggestServer is --server's plan, or the one the log can be of.
func suggestServer(plans []*compiler.Plan, server, policy string) (*compiler.Plan, error) {
	if server != "" {
		for _, p := range plans {
			if p.Server == server {
				return p, nil
			}
		}
		return nil, &exitError{code: ExitError, err: fmt.Errorf("no server %q in %s (servers: %s)", server, policy, names(plans))}
	}
	if len(plans) == 1 {
		return plans[0], nil
	}
	var egress []*compiler.Plan
	for _, p := range plans {
		if p.Network.Mode == "allowlist" || p.Tools != nil { // a log to read
			egress = append(egress, p)
		}
	}
	if len(egress) == 1 {
		return egress[0], nil
	}
	return nil, &exitError{code: ExitError, err: fmt.Errorf("the log does not name its server: give --server (servers: %s)", names(plans))}
}

func notDecisions(n int) string {
	if n == 1 {
		return "1 line is"
	}
	return fmt.Sprintf("%d lines are", n)
}

func times(n int) string {
	if n == 1 {
		return "1 denial"
	}
	return fmt.Sprintf("%d denials", n)
}

// patchName is the file as the patch names it: relative to the current
// folder when it is below it.
func patchName(file string) string {
	if abs, err := filepath.Abs(file); err == nil {
		if cwd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(cwd, abs); err == nil && !strings.HasPrefix(rel, "..") {
				return filepath.ToSlash(rel)
			}
		}
	}
	return filepath.ToSlash(filepath.Clean(file))
}

func fileMode(file string) os.FileMode {
	if fi, err := os.Stat(file); err == nil {
		return fi.Mode().Perm()
	}
	return 0o644
}
