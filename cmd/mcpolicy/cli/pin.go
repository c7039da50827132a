package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/evidence/prove"
	"github.com/mcpolicy/mcpolicy/evidence/toolpin"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// pinOptions are pin's flags and argument.
type pinOptions struct {
	streams
	Policy   string
	Server   string
	Backends []string      // the backends to try, in order (default: the plan's that prove runs)
	Check    bool          // write nothing: exit 3 when the live surface is not the pin
	Timeout  time.Duration // the server's start and its tools/list
	// Serve is pin's own child: the server confined on Backends[0], its
	// stdio this process's, with no relay (what the pin is made of must
	// be the server's surface, not the relay's view of it).
	Serve bool
}

func newPinCmd() *cobra.Command {
	opts := &pinOptions{}
	cmd := &cobra.Command{
		Use:   "pin [-p POLICY] [-b BACKEND] [--check] SERVER",
		Short: "Record the server's tools/list (names, descriptions, schemas) as the reviewed pin beside the policy",
		Long: `pin starts the server confined, as prove does (the first of its backends that
starts here, or -b), asks it over MCP for its tools (tools/list, every page),
and writes them, canonical and sorted, with their digest to
mcpolicy.pins/SERVER.json in the policy file's folder: a file to review and
commit like the policy. With tools: pin: true in the server's policy, the
relay compares every tools/list with it, and a tool whose description,
title, schemas or annotations changed since (or one that is new) is hidden,
or the relay refuses to go on (onPinChange: "refuse").

The server is started without the relay: the pin is the server's own
surface, whatever the policy's allow and deny show a client. What changed
against the pin already there (tools added, removed, changed, and which
part) is printed; the file is replaced atomically, never left half written.
mcpolicy.* is a protected name: no read-write grant lets a server rewrite
its own pin.

--check writes nothing and exits 3 when the live surface differs from the
pin (or there is none): for CI. tools/list is bounded: 10000 tools, 16 MiB
of them, 1000 pages, and --timeout.`,
		Example: `  mcpolicy pin memory
  mcpolicy pin -p examples/code-index --backend docker code-index
  mcpolicy pin --check memory`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return missingArg("pin", "a SERVER", opts.Policy, func(s string) string {
					return "mcpolicy pin " + shellQuote(s) + policyArg(opts.Policy)
				})
			}
			opts.streams, opts.Server = streamsOf(cmd), args[0]
			if opts.Serve {
				return pinServe(cmd.Context(), opts)
			}
			return pinRun(cmd.Context(), opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringArrayVarP(&opts.Backends, "backend", "b", nil, "start the server under this backend: "+strings.Join(prove.Backends, ", ")+" (repeatable: tried in order; default: the server's)")
	cmd.Flags().BoolVar(&opts.Check, "check", false, "write nothing: exit 3 when the server's tools differ from the pin")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", toolpin.DefaultTimeout, "the time the server has to start and list its tools")
	cmd.Flags().BoolVar(&opts.Serve, "serve", false, "start the server confined, without the relay, on stdio (mcpolicy pin runs itself so)")
	cmd.Flags().MarkHidden("serve")
	return cmd
}

// pinRun lists the server's tools confined and writes (or checks) its pin.
func pinRun(parent context.Context, opts *pinOptions) error {
	for _, b := range opts.Backends {
		if err := checkBackend("pin", b, prove.Backends); err != nil {
			return err
		}
	}
	proj, plan, plans, pinned, err := compilePin(opts.Policy, opts.Server)
	if err != nil {
		return err
	}
	backends, err := prove.SelectBackends(plan, opts.Backends)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	pin, backend, err := opts.list(ctx, self, backends)
	if err != nil {
		return err
	}
	untrusted := writable(proj, plans)
	file := toolpin.File(filepath.Join(proj.Root, filepath.FromSlash(plan.PolicyFile)), plan.Server)
	old, oldErr := toolpin.Read(file, untrusted)
	if errors.As(oldErr, new(*hostfile.TamperedError)) {
		return oldErr // exit 8 (root.go)
	}
	rel := relPath(file)
	changes := toolpin.Compare(old, pin)
	switch {
	case oldErr != nil:
		fmt.Fprintf(opts.Err, "mcpolicy pin: the pin there is not read (%v): every tool counts as added\n", oldErr)
	case old == nil:
		fmt.Fprintf(opts.Out, "%s: no pin yet\n", rel)
	case len(changes) == 0:
		fmt.Fprintf(opts.Out, "%s: %d tools of %s as pinned (%s)\n", rel, len(pin.Tools), plan.Server, pin.Digest)
	}
	if old != nil || oldErr != nil {
		for _, c := range changes {
			fmt.Fprintf(opts.Out, "  %s\n", c)
		}
	}
	// What lint will call TOOL_POISONING is said now, before the pin is
	// reviewed: a reviewer signing a pin should not sign an attack.
	for _, p := range lint.PoisonedTools(pin) {
		fmt.Fprintf(opts.Err, "mcpolicy pin: warning: tool %q: %s: %s: %s (lint: TOOL_POISONING)\n", p.Tool, p.Where, p.What, p.Excerpt)
	}
	if opts.Check {
		if old == nil {
			fmt.Fprintf(opts.Err, "mcpolicy pin: server %q has no pin at %s: run `mcpolicy pin %s`, review the file and commit it\n", plan.Server, rel, plan.Server)
			return &errSilent{code: ExitStale}
		}
		if len(changes) > 0 || old.Digest != pin.Digest {
			fmt.Fprintf(opts.Err, "mcpolicy pin: the tools server %q lists (under %s) differ from its pin %s, as above: run `mcpolicy pin %s`, then review what changed with `git diff %s` before committing it\n", plan.Server, backend, rel, plan.Server, rel)
			return &errSilent{code: ExitStale}
		}
		return nil
	}
	if old == nil || old.Digest != pin.Digest || oldErr != nil {
		if err := toolpin.Write(file, pin, untrusted); err != nil {
			return err // a link planted on the way: exit 8 (root.go)
		}
		fmt.Fprintf(opts.Out, "wrote %s: %d tools of %s, listed under %s (%s)\n", rel, len(pin.Tools), plan.Server, backend, pin.Digest)
	}
	if !pinned {
		fmt.Fprint(opts.Out, pinHint(plan, pin))
	}
	return nil
}

// pinHint is what to add to the policy for it to read the pin: pin: true
// in its tools section, or a tools section allowing exactly the tools
// pinned (allow is required, and every tool it admits is a grant).
func pinHint(plan *compiler.Plan, pin *toolpolicy.Pin) string {
	at := "servers." + cueLabel(plan.Server)
	if plan.Tools != nil {
		return fmt.Sprintf("the policy does not read it yet: add to %s.tools in %s:\n\tpin: true\n", at, plan.PolicyFile)
	}
	names := make([]string, len(pin.Tools))
	for i, t := range pin.Tools {
		names[i] = fmt.Sprintf("%q", printable.String(t.Name))
	}
	return fmt.Sprintf("the policy does not read it yet: add to %s in %s (allow: the tools a client may see and call; keep only those it needs):\n\ttools: {allow: [%s], pin: true}\n", at, plan.PolicyFile, strings.Join(names, ", "))
}

// list starts the server under each backend in turn, until one lists its
// tools; the errors of those that did not are said together.
func (opts *pinOptions) list(ctx context.Context, self string, backends []string) (pin *toolpolicy.Pin, backend string, err error) {
	var why []string
	for _, b := range backends {
		if ctx.Err() != nil {
			return nil, "", &exitError{code: ExitError, err: errors.New("interrupted")}
		}
		argv := []string{self, "pin", "--serve", "--policy", opts.Policy, "--backend", b, "--", opts.Server}
		cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		p, err := toolpin.List(cctx, opts.Server, argv, os.Environ())
		cancel()
		if err == nil {
			return p, b, nil
		}
		why = append(why, b+": "+err.Error())
	}
	return nil, "", &exitError{code: ExitError, err: fmt.Errorf("server %q listed no tools under %s:\n%s\nhint: `mcpolicy doctor --server %s` starts it through its client entry and explains a failed start in grant terms", opts.Server, strings.Join(backends, ", "), strings.Join(why, "\n"), opts.Server)}
}

// pinServe is pin's child: the server confined under Backends[0], with
// stdin and stdout passed through and no relay in between. Its exit
// code is the server's.
func pinServe(ctx context.Context, opts *pinOptions) error {
	if len(opts.Backends) != 1 {
		return &exitError{code: ExitError, err: errors.New("--serve takes one --backend")}
	}
	backend := opts.Backends[0]
	if err := launch.CloseInherited(); err != nil {
		return err
	}
	proj, plan, plans, _, err := compilePin(opts.Policy, opts.Server)
	if err != nil {
		return err
	}
	// No relay between pin and the server whose surface it records.
	plan.Tools = nil
	home, _ := os.UserHomeDir()
	machine := compiler.Machine{ProjectRoot: proj.Root, Home: home, Invoker: compiler.CurrentUser()}
	environ, err := serverEnviron(plans, plan, machine, "")
	if err != nil {
		return err
	}
	if sandboxOf(backend) == artefact.Landlock {
		rs, err := landlock.Build(plan, machine)
		if err != nil {
			return err
		}
		code, err := launch.Start(rs, launch.Options{Environ: environ, ProjectRoot: proj.Root, Home: home})
		var ue *launch.UnsupportedError
		if errors.As(err, &ue) {
			return &exitError{code: ExitUnsupported, err: err}
		}
		if err != nil {
			return err
		}
		return &errSilent{code: code}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	code, err := supervise.Run(ctx, plan, supervise.Options{
		Backend: backend, Machine: machine, Environ: environ,
		Stdin: opts.In, Stdout: opts.Out, Stderr: opts.Err, Log: opts.Err,
	})
	if err != nil {
		return err
	}
	return &errSilent{code: code}
}

// sandboxOf is the kind of sandbox the named backend runs in.
func sandboxOf(backend string) artefact.Sandbox {
	b, err := registry.Lookup(backend)
	if err != nil {
		return artefact.Cluster
	}
	return b.Runtime().Sandbox
}

// relPath is file relative to the working folder when it lies below it.
func relPath(file string) string {
	wd, err := os.Getwd()
	if err != nil {
		return file
	}
	if r, err := filepath.Rel(wd, file); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return file
}

// cueLabel is a server's name as a CUE label: quoted unless an identifier.
func cueLabel(name string) string {
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Sprintf("%q", printable.String(name))
		}
	}
	return name
}
