//go:build !linux

package launch

import (
	"fmt"
	"os"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/exitcode"
)

// Start: the Landlock launcher (`mcpolicy exec`, mcpolicy-launch) is
// Linux's: Landlock, user and mount namespaces, capabilities, seccomp.
func Start(rs *artefact.Ruleset, opts Options) (int, error) {
	return 0, needsLinux(fmt.Sprintf("server %q: the Landlock launcher", rs.Server), "Landlock / mount namespaces")
}

// Stage2 runs only inside the namespaces Start makes, which exist on
// Linux alone: anywhere else it says so and exits.
func Stage2() {
	fmt.Fprintf(os.Stderr, "mcpolicy exec: %v\n", needsLinux("the Landlock launcher's stage 2", "Landlock / mount namespaces"))
	os.Exit(exitcode.Unsupported)
}

// Handover: there is no Landlock launcher to hand a launch to here.
func Handover(launcher string, rs *artefact.Ruleset, opts Options) error {
	return needsLinux(fmt.Sprintf("server %q: the Landlock launcher", rs.Server), "Landlock / mount namespaces")
}
