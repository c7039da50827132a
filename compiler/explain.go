package compiler

import (
	"fmt"
	"path"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/bytesize"

	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
)

// ExplainOptions are how Explain renders a plan.
type ExplainOptions struct {
	// ListAbsent lists every protected name absent at compile time; by
	// default each read-write mount gets one line with their count.
	ListAbsent bool
}

// Explain renders a plan for a reviewer: the grants as a numbered list with
// their count and source positions, then what is taken away. The protected
// names absent at compile time are counted per mount (ExplainWith lists them).
func Explain(p *Plan) string { return ExplainWith(p, ExplainOptions{}) }

// ExplainWith is Explain, rendered as o says.
func ExplainWith(p *Plan, o ExplainOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  (%s)\n", p.Server, p.Pos)
	if p.Description != "" {
		fmt.Fprintf(&b, "  %s\n", p.Description)
	}
	fmt.Fprintf(&b, "plan %s\n", p.Hash)
	fmt.Fprintf(&b, "backends: %s", strings.Join(p.Backends, ", "))
	for _, b2 := range p.Backends {
		if !backendtraits.RunsImage(b2) {
			fmt.Fprintf(&b, " (host runtime baseline %q", p.Runtime.Name)
			if p.Network.Mode == "allowlist" {
				// compiler.runtime adds them: a TLS client needs them.
				b.WriteString(", and the CA certificates its egress is verified with")
			}
			b.WriteString(")")
			break
		}
	}
	b.WriteString("\n\n")
	gs := p.Grants()
	fmt.Fprintf(&b, "%s\n", GrantSummary(gs))
	for i, g := range gs {
		fmt.Fprintf(&b, "  %d. %-9s  %s  (%s)\n", i+1, g.Kind, g.Summary, g.Pos)
	}
	explainPacks(&b, p)
	b.WriteString("\nTaken away:\n")
	s := p.Subtractions
	line := func(on bool, text string) {
		if on {
			fmt.Fprintf(&b, "  - %s\n", text)
		}
	}
	// seatbelt has no network namespace: the only loopback is the host's,
	// so "none" there means none at all, and the proxy sits on the host.
	// kubernetes has no mcpolicy run: the proxy is a Pod of its own, and
	// the server's Pod is on the pod network, which NetworkPolicies close.
	seatbelt, cluster, local := false, false, false
	for _, name := range p.Backends {
		seatbelt = seatbelt || backendtraits.NoNetns(name)
		cluster = cluster || backendtraits.InCluster(name)
		local = local || !backendtraits.InCluster(name)
	}
	noNet, proxyAt := "network: none (loopback only)", "started by mcpolicy run; loopback port %d in the sandbox"
	if seatbelt {
		noNet = "network: none (loopback only; on seatbelt not even that)"
		proxyAt = "started by mcpolicy run; loopback port %d in the sandbox; on seatbelt the host's, TCP only"
	}
	const podProxy = "the egress-proxy Pod, reached at its Service's port %d"
	switch {
	case cluster && !local:
		noNet = "network: none (a deny-all NetworkPolicy)"
		proxyAt = podProxy
	case cluster:
		noNet = strings.TrimSuffix(noNet, ")") + "; on kubernetes a deny-all NetworkPolicy)"
		proxyAt += "; on kubernetes " + strings.ReplaceAll(podProxy, "%d", "%[2]d")
	}
	line(s.NoNetwork, noNet)
	line(p.Network.Mode == "allowlist", fmt.Sprintf("network: everything but the %d egress destinations above, checked by mcpolicy's egress proxy ("+proxyAt+")", len(p.Network.Allow), p.Network.ProxyPort))
	line(s.ReadOnlyRoot, "root filesystem: read-only")
	sb := seatbeltFacts(p)
	line(s.DropAllCaps, sb.caps)
	line(s.NoNewPrivileges, sb.privileges)
	if p.User.Invoker {
		line(s.NonRootUser, "user: the invoking user's own ids (never root: a root launch is refused)")
	} else {
		user := fmt.Sprintf("user: %s (not root)", p.User)
		if p.User.RootGroup() {
			user = fmt.Sprintf("user: %s (not root, but in root's group: gid 0)", p.User)
		}
		line(s.NonRootUser, sb.user(user))
	}
	creds := len(p.Credentials) > 0
	line(len(p.Env) == 0 && len(p.SetEnv) == 0 && !creds, "environment: empty (no variable passed through)")
	line(len(p.Env) == 0 && len(p.SetEnv) > 0 && !creds, "environment: only the values set above (no variable passed through)")
	line(len(p.Env) == 0 && len(p.SetEnv) == 0 && creds, "environment: only the credentials' placeholders (no variable passed through)")
	line(len(p.Env) == 0 && len(p.SetEnv) > 0 && creds, "environment: only the values set above and the credentials' placeholders (no variable passed through)")
	credLine := "credentials: their values never enter the sandbox: the server holds a placeholder, and\n    mcpolicy's egress proxy (intercepting TLS for their destinations alone, under a CA made\n    at spawn) puts the value in its place on requests to those destinations, and the\n    placeholder back in its place in their responses (docs/credentials.md)"
	switch {
	case cluster && !local:
		credLine = "credentials: their values never enter the sandbox: the server holds a placeholder, and\n    mcpolicy's egress proxy (intercepting TLS for their destinations alone, under a CA drawn\n    by mcpolicy credentials) puts the value in its place on requests to those destinations,\n    and the placeholder back in its place in their responses (docs/credentials.md)"
	case cluster:
		credLine = "credentials: their values never enter the sandbox: the server holds a placeholder, and\n    mcpolicy's egress proxy (intercepting TLS for their destinations alone, under a CA made\n    at spawn, on kubernetes drawn by mcpolicy credentials) puts the value in its place on\n    requests to those destinations, and the placeholder back in its place in their responses\n    (docs/credentials.md)"
	}
	line(creds, credLine)
	line(s.Hidden > 0, fmt.Sprintf("hidden paths: %d inside the mounts (listed below)", s.Hidden))
	line(s.MemoryBytes > 0, "memory: at most "+bytesize.Format(s.MemoryBytes))
	line(s.Pids > 0, fmt.Sprintf("processes: at most %d", s.Pids))
	line(s.MilliCPUs > 0, fmt.Sprintf("cpus: at most %g", float64(s.MilliCPUs)/1000))
	if p.Proc {
		fmt.Fprintf(&b, "\n/proc: the server's own (proc: true, %s): a read-only procfs of its own PID\nnamespace, never the host's. bwrap, docker, podman and kubernetes give every server\none; landlock mounts it for this plan only (its own processes, no host-wide file),\nand refuses to start where user namespaces are not available.\n", p.ProcPos)
	}
	for _, m := range p.Mounts {
		if m.FixedTop() {
			fmt.Fprintf(&b, "\nTop level of %s fixed at launch (mcpolicy-launch; on landlock, with user namespaces): no name\ncan be added, renamed or removed there, and every protected name present then\n(.git, .mcpolicy, the policies, client configs, .env*: mcpolicy schema) is read-only", m.Target)
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
	if s.Hidden > 0 {
		how := "masked at spawn: the entry stays, its content is unreadable"
		if p.RunsOn(backendtraits.Seatbelt) {
			how += "; on seatbelt denied by path (EPERM)"
		}
		fmt.Fprintf(&b, "\nHidden inside mounts (hide; %s):\n", how)
		for _, m := range p.Mounts {
			for i, h := range m.Hide {
				at := m.Pos
				if i < len(m.HidePos) {
					at = m.HidePos[i]
				}
				fmt.Fprintf(&b, "  - %s  hidden (EACCES)  (%s)\n", path.Join(m.Target, h), at)
			}
		}
	}
	explainTools(&b, p)
	if len(p.Absent) > 0 {
		b.WriteString("\nProtected names absent when compiled: docker, bwrap and landlock cannot keep\na server with write access from creating them (seatbelt denies them by path):\n")
		if o.ListAbsent {
			for _, a := range p.Absent {
				fmt.Fprintf(&b, "  - %s\n", a.Target)
			}
		} else {
			for _, m := range absentByMount(p.Absent) {
				fmt.Fprintf(&b, "  - %s: %s absent (explain --list-protected lists them)\n", m.target, Plural(m.n, "protected name"))
			}
		}
	}
	return b.String()
}

// explainTools says what the tools section takes away, and how: a relay
// on the stdio pipe, a control for a cooperating server beside the
// kernel's (docs/tools.md).
func explainTools(b *strings.Builder, p *Plan) {
	t := p.Tools
	if t == nil {
		return
	}
	fmt.Fprintf(b, "\nTool surface (tools, %s): a relay on the stdio pipe\n(mcpolicy-launch, outside the sandbox) shows the client only the tools allowed\nabove and refuses any other call, and any call whose arguments break a\nconstraint above. It decides what the model is offered, not what the server's\nprocess can do inside its grants (docs/tools.md).\n", p.ToolsPos.Section)
	for _, d := range t.Deny {
		fmt.Fprintf(b, "  - denied: %s, never shown nor called  (%s)\n", d.Pattern, orPos(p.ToolsPos.At(d.Field), p.Pos))
	}
	if t.Pin != nil {
		how := "hidden from the client"
		if t.OnPinChange == "refuse" {
			how = "refused: that tools/list and every later list and call"
		}
		fmt.Fprintf(b, "  - pinned: %s, %s; a tool the pin does not hold, or whose description, title,\n    schemas or annotations differ from it, is %s  (%s)\n",
			PinFile(p.Server), Plural(len(t.Pin.Tools), "tool"), how, orPos(p.ToolsPos.Pin, p.Pos))
	}
	if p.Accepts(AcceptToolsNotRelayed) {
		// Which backends cannot run it is the emitters' to say (explain --backend).
		fmt.Fprintf(b, "  - accepted %s: a backend that cannot run the relay (seatbelt, kubernetes)\n    starts the server without it, and there the client sees and calls every tool\n", AcceptToolsNotRelayed)
	}
}

// facts are the lines of "Taken away" that differ on seatbelt, which runs
// the server under sandbox-exec as whoever starts it: macOS has no
// capability sets, no no-new-privileges flag and no way to switch ids
// without root.
type facts struct {
	caps, privileges string
	user             func(string) string
}

func seatbeltFacts(p *Plan) facts {
	f := facts{caps: "capabilities: all dropped", privileges: "no new privileges (setuid binaries cannot raise them)",
		user: func(s string) string { return s }}
	if !p.RunsOn(backendtraits.Seatbelt) {
		return f
	}
	const setuid = "refuses to run a setuid or setgid program inside the sandbox (forbidden-exec-sugid: su, sudo, login, /bin/ps), and no rule runs one outside it (with no-sandbox)"
	if len(p.Backends) == 1 {
		f.caps = "capabilities: macOS has none to drop; the wrapper refuses to start as root"
		f.privileges = "privileges: macOS has no no-new-privileges flag, but seatbelt " + setuid
		f.user = func(string) string {
			return "user: never root (the wrapper refuses); the invoking user's own ids, not " + p.User.String() + " (macOS cannot switch ids without root: counted above)"
		}
		return f
	}
	f.caps = "capabilities: all dropped (on seatbelt: macOS has none; the wrapper refuses to start as root)"
	f.privileges = "no new privileges (setuid binaries cannot raise them); seatbelt has no such flag, but " + setuid
	f.user = func(s string) string {
		return s + "; on seatbelt the invoking user's own ids (counted above)"
	}
	return f
}

// absentMount is how many protected names are absent in one mount.
type absentMount struct {
	target string
	n      int
}

// absentByMount counts the absent names of each mount, in plan order (a
// name's mount is its target without the name).
func absentByMount(as []AbsentProtected) []absentMount {
	var out []absentMount
	for _, a := range as {
		t := strings.TrimSuffix(strings.TrimSuffix(a.Target, a.Name), "/")
		if t == "" {
			t = "/"
		}
		if len(out) > 0 && out[len(out)-1].target == t {
			out[len(out)-1].n++
			continue
		}
		out = append(out, absentMount{target: t, n: 1})
	}
	return out
}
