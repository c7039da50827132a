//go:build !linux

package doctor

import (
	"context"
	"fmt"
	"runtime"

	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// linuxOnly are the backends that need Linux, with what of it they need:
// elsewhere doctor reports them unavailable without trying anything.
var linuxOnly = map[artefact.Sandbox]string{
	artefact.Bwrap:    "user and mount namespaces",
	artefact.Landlock: "Landlock, user and mount namespaces",
	artefact.Engine:   "mcpolicy opens every mount source with openat2 and checks the mounts inside the Linux container",
}

// host fits the checks to this system: the Linux backends say they need
// Linux, and seatbelt, macOS's, is checked.
func (c *Checker) host(byKind map[artefact.Sandbox]kindCheck) {
	for kind, needs := range linuxOnly {
		byKind[kind] = func(b emit.Backend) func(context.Context) Result {
			return func(context.Context) Result { return notLinux(b.Name(), needs) }
		}
	}
	byKind[artefact.Seatbelt] = c.check((*Checker).Seatbelt)
}

// notLinux is a Linux-only backend's result on another system.
func notLinux(backend, needs string) Result {
	return Result{Backend: backend, Status: Unavailable,
		Detail: fmt.Sprintf("mcpolicy's %s backend needs Linux (%s); this is %s", backend, needs, runtime.GOOS),
		Fix:    "on macOS use the seatbelt backend (docs/macos.md)"}
}

// Seatbelt checks macOS's sandbox-exec: there, and able to apply a
// profile to a program.
func (c *Checker) Seatbelt(ctx context.Context, b emit.Backend) Result {
	r := Result{Backend: b.Name()}
	sandboxExec := b.Runtime().Program
	if _, err := c.Stat(sandboxExec); err != nil {
		r.Status, r.Detail = Unavailable, fmt.Sprintf("%s is missing: %s", sandboxExec, firstLine(err.Error()))
		r.Fix = "the seatbelt backend runs on macOS, whose sandbox-exec applies the profiles"
		return r
	}
	if _, err := c.Run(ctx, sandboxExec, "-p", "(version 1)(allow default)", "/usr/bin/true"); err != nil {
		r.Status, r.Detail = Unavailable, "sandbox-exec cannot apply a profile: "+firstLine(err.Error())
		r.Fix = "sandbox-exec refuses inside another sandbox: run mcpolicy (and the client) outside one"
		return r
	}
	r.Status, r.Detail = OK, "sandbox-exec applies profiles: the wrappers in .mcpolicy/seatbelt/ run servers confined"
	return r
}

// egressHost: the seatbelt backend binds no forwarder into its sandbox;
// its server reaches the proxy on the host's loopback, so mcpolicy need
// not be static (a macOS executable is not an ELF one to check).
func egressHost() (Result, bool) {
	return Result{Backend: "egress", Status: OK,
		Detail: "mcpolicy run serves the egress proxy on the host's loopback for seatbelt servers: no forwarder is bound into the sandbox"}, true
}
