package compiler

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/bytesize"

	"github.com/mcpolicy/mcpolicy/backend"
)

// Explain renders a plan for a reviewer: the grants as a numbered list with
// their count and source positions, then what is taken away.
func Explain(p *Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  (%s)\n", p.Server, p.Pos)
	if p.Description != "" {
		fmt.Fprintf(&b, "  %s\n", p.Description)
	}
	fmt.Fprintf(&b, "plan %s\n", p.Hash)
	fmt.Fprintf(&b, "backends: %s", strings.Join(p.Backends, ", "))
	for _, b2 := range p.Backends {
		if !backend.RunsImage(b2) {
			fmt.Fprintf(&b, " (host runtime baseline %q)", p.Runtime.Name)
			break
		}
	}
	b.WriteString("\n\n")
	gs := p.Grants()
	fmt.Fprintf(&b, "%s\n", GrantSummary(gs))
	for i, g := range gs {
		fmt.Fprintf(&b, "  %d. %-9s  %s  (%s)\n", i+1, g.Kind, g.Summary, g.Pos)
	}
	b.WriteString("\nTaken away:\n")
	s := p.Subtractions
	line := func(on bool, text string) {
		if on {
			fmt.Fprintf(&b, "  - %s\n", text)
		}
	}
	// seatbelt has no network namespace: the only loopback is the host's,
	// so "none" there means none at all, and the proxy sits on the host.
	seatbelt := false
	for _, name := range p.Backends {
		seatbelt = seatbelt || backend.NoNetns(name)
	}
	noNet, proxyAt := "network: none (loopback only)", "loopback port %d in the sandbox"
	if seatbelt {
		noNet = "network: none (loopback only; on seatbelt not even that)"
		proxyAt = "loopback port %d in the sandbox; on seatbelt the host's, TCP only"
	}
	line(s.NoNetwork, noNet)
	line(p.Network.Mode == "allowlist", fmt.Sprintf("network: everything but the %d egress destinations above, checked by mcpolicy's egress proxy (started by mcpolicy run; "+proxyAt+")", len(p.Network.Allow), p.Network.ProxyPort))
	line(s.ReadOnlyRoot, "root filesystem: read-only")
	line(s.DropAllCaps, "capabilities: all dropped")
	line(s.NoNewPrivileges, "no new privileges (setuid binaries cannot raise them)")
	if p.User.Invoker {
		line(s.NonRootUser, "user: the invoking user's own ids (never root: a root launch is refused)")
	} else {
		if p.User.RootGroup() {
			line(s.NonRootUser, fmt.Sprintf("user: %s (not root, but in root's group: gid 0)", p.User))
		} else {
			line(s.NonRootUser, fmt.Sprintf("user: %s (not root)", p.User))
		}
	}
	line(len(p.Env) == 0, "environment: empty (no variable passed through)")
	line(s.MemoryBytes > 0, "memory: at most "+bytesize.Format(s.MemoryBytes))
	line(s.Pids > 0, fmt.Sprintf("processes: at most %d", s.Pids))
	line(s.MilliCPUs > 0, fmt.Sprintf("cpus: at most %g", float64(s.MilliCPUs)/1000))
	for _, m := range p.Mounts {
		if m.FixedTop() {
			fmt.Fprintf(&b, "\nTop level of %s fixed at launch (mcpolicy-launch; landlock refuses it): no name\ncan be added, renamed or removed there, and every protected name present then\n(.git, .mcpolicy, the policies, client configs, .env*: mcpolicy schema) is read-only", m.Target)
			if len(p.Unprotected) > 0 {
				fmt.Fprintf(&b, "\nbut the unprotected %s", strings.Join(p.UnprotectedNames(), ", "))
			}
			b.WriteString(".\n")
		}
	}
	if len(p.Protected) > 0 {
		b.WriteString("\nRead-only inside read-write mounts (protected):\n")
		for _, pr := range p.Protected {
			fmt.Fprintf(&b, "  - %s\n", pr.Target)
		}
	}
	if len(p.Absent) > 0 {
		b.WriteString("\nProtected names absent when compiled: docker, bwrap and landlock cannot keep\na server with write access from creating them (seatbelt denies them by path):\n")
		for _, a := range p.Absent {
			fmt.Fprintf(&b, "  - %s\n", a.Target)
		}
	}
	return b.String()
}
