package seatbelt

import (
	"fmt"
	"sort"
	"strings"
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

// Check makes the structural checks on a parsed profile. params, when not
// nil, are the -D names the invocation defines; every (param ...) must be
// one of them (an undefined param is #f, and a filter on #f fails).
func Check(forms []*Node, params map[string]bool) []Finding {
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
