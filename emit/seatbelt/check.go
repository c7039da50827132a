package seatbelt

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
)

// Finding is one problem the checker sees in a profile.
type Finding struct {
	Line, Col int
	Severity  string // "error" or "warning"
	Msg       string
}

func (f Finding) String() string {
	return fmt.Sprintf("%d:%d: %s: %s", f.Line, f.Col, f.Severity, f.Msg)
}

// operations are the SBPL operation names seen in Apple's, Codex's,
// Chromium's, Bazel's and Nix's profiles. A name outside this list is most
// likely a typo, which in a deny would silently deny nothing.
var operations = set(
	"default", "file*", "file-read*", "file-read-data", "file-read-metadata", "file-read-xattr",
	"file-write*", "file-write-data", "file-write-create", "file-write-unlink", "file-write-mode",
	"file-write-setugid", "file-write-xattr", "file-write-flags", "file-write-times", "file-write-owner",
	"file-ioctl", "file-map-executable", "file-test-existence", "file-link", "file-revoke", "file-clone",
	"file-issue-extension", "file-mknod", "file-chroot", "file-search",
	"process*", "process-exec", "process-exec*", "process-exec-interpreter", "process-fork", "process-info*",
	"process-info-pidinfo", "process-info-pidfdinfo", "process-info-listpids", "process-info-setcontrol",
	"process-info-dirtycontrol", "process-info-rusage", "process-codesigning-status*",
	"signal", "network*", "network-outbound", "network-inbound", "network-bind", "system-socket",
	"mach*", "mach-lookup", "mach-host*", "mach-register", "mach-priv-host-port", "mach-task-name", "mach-per-user-lookup",
	"sysctl*", "sysctl-read", "sysctl-write", "ipc*", "ipc-posix*", "ipc-posix-shm", "ipc-posix-shm-read-data",
	"ipc-posix-shm-write-data", "ipc-posix-shm-write-create", "ipc-posix-sem", "ipc-sysv*", "ipc-sysv-shm", "ipc-sysv-sem", "ipc-sysv-msg",
	"iokit*", "iokit-open", "iokit-get-properties", "iokit-set-properties", "pseudo-tty", "user-preference-read",
	"user-preference-write", "dynamic-code-generation", "job-creation", "lsopen", "nvram*", "nvram-get", "nvram-set",
	"system*", "system-audit", "system-fsctl", "system-info", "system-sched", "system-kext-query", "appleevent-send",
	"distributed-notification-post", "authorization-right-obtain", "hid-control", "darwin-notification-post",
)

// filters are the filter and expression heads a rule may use.
var filters = set(
	"literal", "path", "subpath", "prefix", "regex", "path-ancestors", "vnode-type", "extension", "target",
	"global-name", "global-name-regex", "local-name", "local-name-regex", "sysctl-name", "sysctl-name-prefix",
	"sysctl-name-regex", "local", "remote", "socket-domain", "socket-type", "socket-protocol",
	"require-all", "require-any", "require-not", "ipc-posix-name", "ipc-posix-name-prefix", "ipc-posix-name-regex",
	"iokit-user-client-class", "iokit-registry-entry-class", "process-path", "signing-identifier",
	"param", "string-append", "with", "path-literal", "unix-socket", "device-major", "device-minor",
	"xattr", "file-mode", "preference-domain", "appleevent-destination", "notification-name", "right-name",
)

// wide are operations an unfiltered allow must never grant.
var wide = set("file*", "file-write*", "file-write-data", "file-write-create", "file-write-unlink",
	"network*", "network-outbound", "network-inbound", "network-bind", "default", "process*", "mach*")

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// outbound are the operations that let a process connect out.
var outbound = set("network*", "network-outbound")

// Check makes the structural checks on a parsed profile. params, when not
// nil, are the -D names the invocation defines; every (param ...) must be
// one of them (an undefined param is #f, and a filter on #f fails).
//
// The one outbound network allow it accepts is the egress proxy's,
// (allow network-outbound (remote ip "localhost:PORT")): any other
// destination ("*:443", "localhost:*", a unix socket) is an error. An
// address it cannot read, such as (param "PORT"), is a warning.
func Check(forms []*Node, params map[string]bool) []Finding {
	return check(forms, params, nil)
}

// CheckPlan is Check for a profile built from p: a network allow must be
// the proxy rule at p.Network.ProxyPort (and only with an allowlist), and
// an address the checker cannot read is an error.
func CheckPlan(forms []*Node, params map[string]bool, p *compiler.Plan) []Finding {
	return check(forms, params, p)
}

func check(forms []*Node, params map[string]bool, p *compiler.Plan) []Finding {
	var fs []Finding
	add := func(n *Node, sev, format string, args ...any) {
		fs = append(fs, Finding{n.Line, n.Col, sev, fmt.Sprintf(format, args...)})
	}
	if len(forms) == 0 || forms[0].Head() != "version" || len(forms[0].Items) != 2 || forms[0].Items[1].Text != "1" {
		n := &Node{Line: 1, Col: 1}
		if len(forms) > 0 {
			n = forms[0]
		}
		add(n, "error", "a profile starts with (version 1)")
	}
	sawDeny := false
	for _, f := range forms {
		h := f.Head()
		switch h {
		case "version", "import", "define", "if", "when", "unless", "debug":
			continue
		case "allow", "deny":
		default:
			add(f, "warning", "unexpected top-level form (%s)", h)
			continue
		}
		var ops []*Node
		var flts []*Node
		for _, it := range f.Items[1:] {
			if it.Kind == Symbol {
				ops = append(ops, it)
			} else {
				flts = append(flts, it)
			}
		}
		if len(ops) == 0 {
			add(f, "error", "(%s) names no operation", h)
		}
		for _, op := range ops {
			if !operations[op.Text] {
				add(op, "error", "unknown operation %q", op.Text)
			}
			if h == "deny" && op.Text == "default" {
				sawDeny = true
			}
			if h == "allow" && op.Text == "default" {
				add(op, "error", "(allow default) allows everything not denied")
				continue
			}
			if h == "allow" && wide[op.Text] && !hasFilter(flts) {
				add(op, "error", "(allow %s) without a filter grants it everywhere", op.Text)
			}
		}
		if h == "allow" && hasFilter(flts) {
			checkNetwork(f, ops, flts, p, add)
		}
		for _, fl := range flts {
			walk(fl, func(n *Node) {
				if n.Kind != List {
					return
				}
				if hd := n.Head(); hd != "" && !filters[hd] {
					add(n, "warning", "unknown filter %q", hd)
				}
				if n.Head() == "param" {
					if len(n.Items) != 2 || n.Items[1].Kind != String {
						add(n, "error", "(param) takes one string")
					} else if params != nil && !params[n.Items[1].Text] {
						add(n, "error", "param %q is not defined by the invocation (-D %s=...)", n.Items[1].Text, n.Items[1].Text)
					}
				}
			})
		}
	}
	if !sawDeny {
		add(&Node{Line: 1, Col: 1}, "error", "no (deny default): everything not denied is allowed")
	}
	return fs
}

// checkNetwork holds a filtered allow of a network operation to the one
// shape the egress proxy needs. Without a plan, filtered network-inbound
// and network-bind (listening) are left alone: they reach nothing.
func checkNetwork(f *Node, ops, flts []*Node, p *compiler.Plan, add func(*Node, string, string, ...any)) {
	var net []string
	reaches := false
	for _, op := range ops {
		if strings.HasPrefix(op.Text, "network") {
			net = append(net, op.Text)
			reaches = reaches || outbound[op.Text]
		}
	}
	if len(net) == 0 || (!reaches && p == nil) {
		return
	}
	if p != nil && p.Network.Mode != "allowlist" {
		add(f, "error", "(allow %s ...): the plan allows no network", strings.Join(net, " "))
		return
	}
	if len(ops) != 1 || ops[0].Text != "network-outbound" {
		add(f, "error", `(allow %s ...): the only network allow is (allow network-outbound (remote ip "localhost:PORT")), to the egress proxy`, opNames(ops))
		return
	}
	var real []*Node
	for _, fl := range flts {
		if fl.Head() != "with" {
			real = append(real, fl)
		}
	}
	if len(real) != 1 {
		add(f, "error", `(allow network-outbound %s) is not the egress proxy's rule: write one (remote ip "localhost:PORT")`, joinNodes(real))
		return
	}
	fl := real[0]
	if fl.Head() != "remote" || len(fl.Items) != 3 || fl.Items[1].Kind != Symbol || fl.Items[1].Text != "ip" {
		add(fl, "error", `(allow network-outbound %s) reaches more than the egress proxy: write (remote ip "localhost:PORT")`, joinNodes(real))
		return
	}
	addr := fl.Items[2]
	if addr.Kind != String {
		sev := "warning"
		if p != nil {
			sev = "error"
		}
		add(addr, sev, `network-outbound to %s: not a literal address, so not checked to be the egress proxy's "localhost:PORT"`, addr)
		return
	}
	host, port, ok := strings.Cut(addr.Text, ":")
	n, err := strconv.Atoi(port)
	switch {
	case !ok || host != "localhost":
		add(addr, "error", `network-outbound to %q: the only destination is the egress proxy, "localhost:PORT"`, addr.Text)
	case port == "*":
		add(addr, "error", `network-outbound to %q: every port on the host's loopback, not only the egress proxy's`, addr.Text)
	case err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port:
		add(addr, "error", `network-outbound to %q: the port is not a number from 1 to 65535`, addr.Text)
	case p != nil && n != p.Network.ProxyPort:
		add(addr, "error", `network-outbound to %q: the plan's egress proxy listens on port %d`, addr.Text, p.Network.ProxyPort)
	}
}

func opNames(ops []*Node) string {
	var s []string
	for _, op := range ops {
		s = append(s, op.Text)
	}
	return strings.Join(s, " ")
}

func joinNodes(ns []*Node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.String())
	}
	return strings.Join(s, " ")
}

func hasFilter(flts []*Node) bool {
	for _, f := range flts {
		if f.Head() != "with" {
			return true
		}
	}
	return false
}

func walk(n *Node, visit func(*Node)) {
	visit(n)
	for _, it := range n.Items {
		walk(it, visit)
	}
}

// Rule is one allow or deny, reduced to what it means: the action, its
// operations (sorted) and its filters as written (sorted), so two profiles
// that differ only in layout, comments or order of names compare equal.
type Rule struct {
	Action  string
	Ops     []string
	Filters []string
}

func (r Rule) String() string {
	return fmt.Sprintf("(%s %s %s)", r.Action, strings.Join(r.Ops, " "), strings.Join(r.Filters, " "))
}

// Rules lists the rules of a profile, in order (order matters: the last
// matching rule wins).
func Rules(forms []*Node) []Rule {
	var rs []Rule
	for _, f := range forms {
		h := f.Head()
		if h != "allow" && h != "deny" {
			continue
		}
		r := Rule{Action: h}
		for _, it := range f.Items[1:] {
			if it.Kind == Symbol {
				r.Ops = append(r.Ops, it.Text)
			} else {
				r.Filters = append(r.Filters, it.String())
			}
		}
		sort.Strings(r.Ops)
		sort.Strings(r.Filters)
		rs = append(rs, r)
	}
	return rs
}
