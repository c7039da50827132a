package launch

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
)

// UnsupportedError says this machine cannot run the ruleset as the policy
// demands (no Landlock, an ABI too old, no user namespaces): exit code 4.
type UnsupportedError struct{ Err error }

func (e *UnsupportedError) Error() string { return e.Err.Error() }
func (e *UnsupportedError) Unwrap() error { return e.Err }

// Check refuses a host that cannot enforce the ruleset, unless the policy
// accepted the named degradation. emit/landlock's report says the same
// thing row by row; a test keeps the two in agreement.
func CheckRuleset(rs *artefact.Ruleset, h hostcaps.Host) error {
	refuse := func(format string, args ...any) error {
		return &UnsupportedError{fmt.Errorf("server %q: "+format+" (this machine: Landlock ABI %d, user namespaces %s)",
			append(append([]any{rs.Server}, args...), h.ABI, yesNo(h.UserNS))...)}
	}
	if h.ABI < artefact.MinABI {
		return refuse("Landlock ABI %d is below %d (Linux 6.2): refusing to start unconfined", h.ABI, artefact.MinABI)
	}
	if !h.UserNS && rs.Network == "none" {
		if h.ABI < 4 {
			return refuse("without user namespaces and below ABI 4 nothing on the network can be denied; use the bwrap or docker backend")
		}
		if !rs.Accepts(artefact.AcceptTCPOnly) {
			return refuse("without user namespaces only TCP can be denied (UDP, MPTCP and unix sockets stay open); enable them, or accept %q in the policy", artefact.AcceptTCPOnly)
		}
	}
	if !h.UserNS && rs.Proc {
		// No degradation accepts it: the only /proc left is the host's.
		return refuse("this plan needs /proc (proc: true), and only a procfs of the server's own PID namespace is ever given, which takes user namespaces; they are not available here, and the host's /proc is never granted: enable unprivileged user namespaces, or use the bwrap or docker backend")
	}
	if !h.UserNS && (rs.FixedTop != "" || len(rs.Protected) > 0) {
		// No degradation accepts it: a writable top level, or a protected
		// path, would be the server's to rewrite.
		what := "a read-write project whose top level is fixed (" + rs.FixedTop + ")"
		if rs.FixedTop == "" {
			what = fmt.Sprintf("protected paths inside read-write grants (%s)", rs.Protected[0])
		}
		return refuse("this plan has %s, which only the launcher's minimal root can bind read-only, and that takes user namespaces; they are not available here, and Landlock alone cannot keep names from being created in a writable hierarchy: enable unprivileged user namespaces, make the mount \"ro\" and mount only the folders the server writes, or use the bwrap or docker backend", what)
	}
	if !h.UserNS && len(rs.Hidden) > 0 {
		// No degradation accepts it: Landlock alone cannot deny a path
		// below a granted hierarchy.
		return refuse("this plan hides paths inside its mounts (hide), which only the minimal root can mask, and that takes user namespaces; Landlock alone cannot deny a path below a granted hierarchy: enable unprivileged user namespaces, or use the bwrap or docker backend")
	}
	if !h.UserNS && len(rs.MoreScratch) > 0 {
		return refuse("without user namespaces no tmpfs can be mounted, and the one private folder landlock-scratch-dir gives cannot stand at %d scratch targets; enable them, or use the bwrap or docker backend", len(rs.ScratchTargets()))
	}
	if !h.UserNS && rs.Scratch != "" && !rs.Accepts(artefact.AcceptScratchDir) {
		return refuse("without user namespaces the scratch cannot be a bounded tmpfs; enable them, or accept %q in the policy", artefact.AcceptScratchDir)
	}
	if h.ABI < artefact.ScopeABI && !rs.Accepts(artefact.AcceptNoScope) {
		return refuse("Landlock ABI %d cannot scope abstract unix sockets and signals (ABI %d); accept %q in the policy, or use the bwrap or docker backend", h.ABI, artefact.ScopeABI, artefact.AcceptNoScope)
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "available"
	}
	return "unavailable"
}
