//go:build !linux

package launch

import (
	"fmt"
	"syscall"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// SignaledError: the sandbox's first process was killed by Signal.
type SignaledError struct{ Signal syscall.Signal }

func (e *SignaledError) Error() string { return fmt.Sprintf("killed by %v", e.Signal) }

// Reraise: Linux's (the launcher stays beside a sandbox there only).
func Reraise(sig syscall.Signal) {}

// Beside: bwrap is Linux's.
func (b *Bwrap) Beside(log *launchlog.Launch, relay *ToolRelay) (int, error) {
	return 0, needsLinux(artefact.BwrapProgram, "user namespaces")
}

func engineBeside(engine string, args, environ []string, log *launchlog.Launch, relay *ToolRelay) (int, error) {
	return 0, needsLinux("the engine launcher", "Linux containers")
}
