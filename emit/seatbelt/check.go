package seatbelt

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/protect"
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
	"mach-priv*", "mach-bootstrap", "ipc-posix-sem*", "nvram-delete", "device-camera", "device-microphone",
	"process-info-pidinfo", "process-info-pidfdinfo", "process-info-listpids", "process-info-setcontrol",
	"process-info-dirtycontrol", "process-info-rusage", "process-codesigning-status*", "mach-priv-task-port",
	"signal", "network*", "network-outbound", "network-inbound", "network-bind", "system-socket",
	"mach*", "mach-lookup", "mach-host*", "mach-register", "mach-priv-host-port", "mach-task-name", "mach-per-user-lookup",
	"sysctl*", "sysctl-read", "sysctl-write", "ipc*", "ipc-posix*", "ipc-posix-shm", "ipc-posix-shm-read-data",
	"ipc-posix-shm-write-data", "ipc-posix-shm-write-create", "ipc-posix-shm-write-unlink", "ipc-posix-shm-read*", "ipc-posix-sem", "ipc-sysv*", "ipc-sysv-shm", "ipc-sysv-sem", "ipc-sysv-msg",
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
	"network*", "network-outbound", "default", "process*", "mach*")

// wideWhy are operations an unfiltered allow must never grant either, with
// what the peers' profiles showed they expose.
var wideWhy = map[string]string{
	"sysctl*":         "reads every sysctl: kern.proc.all and kern.procargs2 list the machine's processes and their command lines; allow the names a runtime reads (sysctl-name ...)",
	"sysctl-read":     "reads every sysctl: kern.proc.all and kern.procargs2 list the machine's processes and their command lines; allow the names a runtime reads (sysctl-name ...)",
	"ipc*":            "opens any POSIX or System V IPC object by name, other programs' included; name the objects (ipc-posix-name-regex ...)",
	"ipc-posix*":      "opens any POSIX shared memory or semaphore by name, other programs' included; name the objects (ipc-posix-name-regex ...)",
	"network-bind":    "listens on every address and port of the host, whose loopback every local process shares: it can take a port another program trusts (another server's egress proxy) and anyone who reaches the machine can connect in",
	"network-inbound": "accepts connections on every address and port of the host: any local process or web page, and anyone who reaches the machine, can connect in",
}

// sensitiveSysctls are names no filtered sysctl-read may cover, with what
// they give away: the machine's processes and their command lines. A pid,
// group or uid in a name stands for any.
var sensitiveSysctls = []struct{ name, why string }{
	{"kern.proc.all", "lists the machine's processes"},
	{"kern.procargs2", "gives any process's command line and environment"},
	{"kern.procargs", "gives any process's command line"},
	{"kern.proc.pid.1", "describes any process by its pid (name, owner, parent, state): counting pids lists them all"},
	{"kern.proc.pgrp.1", "lists any process group's members"},
	{"kern.proc.uid.501", "lists any user's processes"},
	{"kern.proc.ruid.501", "lists any user's processes"},
}

// homebrewPrivate are the folders of Homebrew's prefixes (Apple silicon,
// Intel) that hold the user's data, not programs: no allow of reading,
// mapping, running or writing may reach into them (a named file, such as
// the CA bundle in etc, excepted: the probes below are names of no file).
var homebrewPrivate = []string{"/opt/homebrew/var", "/opt/homebrew/etc", "/usr/local/var", "/usr/local/etc"}

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
// (allow network-outbound (remote tcp "localhost:PORT")): any other
// destination ("*:443", "localhost:*", a unix socket), or (remote ip ...)
// (UDP too), is an error. An address it cannot read, such as
// (param "PORT"), is a warning.
//
// It also refuses the over-grants the peers' profiles do without: an
// unfiltered sysctl-read or ipc-posix-shm, a sysctl filter that reaches
// kern.proc.all or kern.procargs2, an allow that reaches Homebrew's var or
// etc; and a protected path (a name of package protect, such as .git) kept
// from writes while a folder above it can be renamed or removed.
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
			add(f, "error", "unknown top-level form (%s): a function a (define) or an import made may add rules the checker cannot see; write allow and deny rules", h)
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
			if h == "allow" && !hasFilter(flts) {
				if why, ok := wideWhy[op.Text]; ok {
					add(op, "error", "(allow %s) without a filter %s", op.Text, why)
				} else if strings.HasPrefix(op.Text, "ipc-posix-shm") {
					add(op, "error", "(allow %s) without a filter opens any POSIX shared memory by name, other programs' included; name the objects a runtime needs (ipc-posix-name-regex ...)", op.Text)
				}
			}
		}
		if h == "allow" && hasFilter(flts) {
			checkNetwork(f, ops, flts, p, add)
		}
		if h == "allow" && p != nil && p.Network.Mode != "allowlist" && opNamed(f, "system-socket") {
			add(f, "error", "(allow system-socket ...): the plan allows no network, so no socket either")
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
	checkGrants(forms, add)
	checkEscapes(forms, add)
	checkMovable(forms, add)
	if p != nil {
		checkProtected(forms, p, add)
	}
	return fs
}

// checkNetwork holds a filtered allow of a network operation to the one
// shape the egress proxy needs. Without a plan, filtered network-inbound
// and network-bind (listening) are refused too, but for a unix socket, a
// warning (checkListen).
func checkNetwork(f *Node, ops, flts []*Node, p *compiler.Plan, add func(*Node, string, string, ...any)) {
	var net []string
	reaches := false
	for _, op := range ops {
		if strings.HasPrefix(op.Text, "network") {
			net = append(net, op.Text)
			reaches = reaches || outbound[op.Text]
		}
	}
	if len(net) == 0 {
		return
	}
	if !reaches && p == nil {
		checkListen(f, net, flts, add)
		return
	}
	if p != nil && p.Network.Mode != "allowlist" {
		add(f, "error", "(allow %s ...): the plan allows no network", strings.Join(net, " "))
		return
	}
	if len(ops) != 1 || ops[0].Text != "network-outbound" {
		add(f, "error", `(allow %s ...): the only network allow is (allow network-outbound (remote tcp "localhost:PORT")), to the egress proxy`, opNames(ops))
		return
	}
	var real []*Node
	for _, fl := range flts {
		if fl.Head() != "with" {
			real = append(real, fl)
		}
	}
	if len(real) != 1 {
		add(f, "error", `(allow network-outbound %s) is not the egress proxy's rule: write one (remote tcp "localhost:PORT")`, joinNodes(real))
		return
	}
	fl := real[0]
	proto := ""
	if fl.Head() == "remote" && len(fl.Items) == 3 && fl.Items[1].Kind == Symbol {
		proto = fl.Items[1].Text
	}
	if proto != "tcp" && proto != "ip" {
		add(fl, "error", `(allow network-outbound %s) reaches more than the egress proxy: write (remote tcp "localhost:PORT")`, joinNodes(real))
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
	case proto == "ip":
		add(fl, "error", `(remote ip %q) admits UDP to that port as well as TCP: the egress proxy speaks TCP, write (remote tcp %q)`, addr.Text, addr.Text)
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

// checkGrants refuses filtered allows that still reach too far: a sysctl
// filter covering the machine's process list, a path filter reaching into
// Homebrew's var or etc. Each allow is evaluated alone, as if it were the
// profile's only rule.
func checkGrants(forms []*Node, add func(*Node, string, string, ...any)) {
	for _, f := range forms {
		if f.Head() != "allow" || !hasFilter(filtersOf(f)) {
			continue
		}
		one := NewEvaluator([]*Node{f}, nil)
		for _, s := range sensitiveSysctls {
			if d, err := one.Decide("sysctl-read", s.name); err == nil && d.Allow {
				at := f
				if _, fl := one.Reaches(f, "sysctl-read", s.name); fl != nil {
					at = fl // the filter that reaches it
				}
				add(at, "error", "(allow sysctl-read ...) reaches %s, which %s: allow the names a runtime reads, never kern.proc.* or kern.procargs2", s.name, s.why)
				break
			}
		}
	probe:
		for _, root := range homebrewPrivate {
			for _, op := range []string{"file-read-data", "file-map-executable", "process-exec", OpWrite} {
				if r, _ := one.Reaches(f, op, probePath); r != ReachNever && (op == "file-read-data" || op == OpWrite) {
					continue // it reads or writes every path: checkEscapes says so
				}
				if d, err := one.Decide(op, root+"/mcpolicy-probe"); err == nil && d.Allow {
					prefix, dir := path.Split(root)
					add(f, "error", "(allow %s ...) reaches %s, the user's Homebrew %s: grant %sbin, lib, opt, Cellar and Frameworks, never var or etc",
						op, root, map[string]string{"var": "data (databases, logs)", "etc": "configuration"}[dir], prefix)
					break probe
				}
			}
		}
	}
}

func filtersOf(f *Node) []*Node {
	var flts []*Node
	for _, it := range f.Items[1:] {
		if it.Kind != Symbol {
			flts = append(flts, it)
		}
	}
	return flts
}

// synthetic gives every (param ...) of the profile a path of its own,
// "/@NAME", so a profile can be evaluated without its -D values; show
// spells such a path back as SBPL.
func synthetic(forms []*Node) map[string]string {
	params := map[string]string{}
	for _, f := range forms {
		walk(f, func(n *Node) {
			if n.Head() == "param" && len(n.Items) == 2 && n.Items[1].Kind == String {
				params[n.Items[1].Text] = "/@" + n.Items[1].Text
			}
		})
	}
	return params
}

func show(p string) string {
	if rest, ok := strings.CutPrefix(p, "/@"); ok {
		name, below, _ := strings.Cut(rest, "/")
		s := fmt.Sprintf("(param %q)", name)
		if below != "" {
			s += "/" + below
		}
		return s
	}
	return p
}

// checkMovable refuses a protected path that can be moved aside: a deny of
// writes to a path holding a protected name (package protect: .git,
// .mcpolicy, the policies...) while a folder above it may be unlinked,
// which is what renaming it does: `mv .git g; edit g/config; mv g .git`
// touches no denied path. Each such folder is reported once.
func checkMovable(forms []*Node, add func(*Node, string, string, ...any)) {
	e := NewEvaluator(forms, synthetic(forms))
	reported := map[string]bool{}
	for _, f := range forms {
		if f.Head() != "deny" {
			continue
		}
		writes := false
		for _, it := range f.Items[1:] {
			if it.Kind == Symbol && (opCovers(it.Text, OpWrite) || opCovers(it.Text, OpUnlink)) && it.Text != "default" {
				writes = true
			}
		}
		if !writes {
			continue
		}
		for _, p := range e.deniedPaths(filtersOf(f)) {
			if !holdsProtected(p) {
				continue
			}
			for dir := path.Dir(p); ; dir = path.Dir(dir) {
				if d, err := e.Decide(OpUnlink, dir); err == nil && d.Allow && !reported[dir] {
					reported[dir] = true
					add(f, "error", "%s is kept from writes, but %s above it can be renamed or removed (file-write-unlink allowed by the rule at %d:%d): move it aside, edit it, move it back; deny file-write* on that folder and every folder above it (literal, path-ancestors)",
						show(p), show(dir), d.Rule.Line, d.Rule.Col)
				}
				if dir == "/" {
					break
				}
			}
		}
	}
}

// deniedPaths are the paths a deny's path filters name (literal, subpath,
// prefix; inside require-any too), with params read as e's.
func (e *Evaluator) deniedPaths(flts []*Node) []string {
	var out []string
	for _, f := range flts {
		switch f.Head() {
		case "literal", "path", "subpath", "prefix":
			if len(f.Items) == 2 {
				if v, ok, err := e.value(f.Items[1]); err == nil && ok && strings.HasPrefix(v, "/") {
					out = append(out, v)
				}
			}
		case "require-any":
			out = append(out, e.deniedPaths(f.Items[1:])...)
		case "require-all":
			// The most specific path of the conjunction is what it denies.
			sub := e.deniedPaths(f.Items[1:])
			if len(sub) > 0 {
				longest := sub[0]
				for _, s := range sub[1:] {
					if len(s) > len(longest) {
						longest = s
					}
				}
				out = append(out, longest)
			}
		}
	}
	return out
}

// holdsProtected reports whether a path has a component that a protected
// name matches (the last one may be a prefix, as a glob's rule spells it).
func holdsProtected(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c != "" && protect.Match(c) != "" {
			return true
		}
	}
	return false
}

// checkProtected holds a profile to its plan's protected names: at the top
// of every read-write mount the profile names, each name that is not
// unprotected, and everything below it, can be neither written, created
// nor removed, and the mount itself cannot be moved; an ordinary file
// there stays writable.
func checkProtected(forms []*Node, p *compiler.Plan, add func(*Node, string, string, ...any)) {
	params := synthetic(forms)
	e := NewEvaluator(forms, params)
	at := &Node{Line: 1, Col: 1}
	for i, m := range p.Mounts {
		if _, named := params[mountParam(i)]; m.Mode != compiler.ReadWrite || !named {
			continue // read-only, or a profile (a fragment) that never names it
		}
		root := "/@" + mountParam(i)
		probes := []string{root, root + "/mcpolicy-probe", root + "/mcpolicy-probe/file"}
		for _, pat := range protect.Patterns() {
			name := strings.Replace(pat, "*", "probe", 1)
			probes = append(probes, root+"/"+name, root+"/"+name+"/config")
		}
		for _, probe := range probes {
			top, _, _ := strings.Cut(strings.TrimPrefix(probe, root+"/"), "/")
			want := probe != root && protect.Except(top, p.UnprotectedNames()) == ""
			for _, op := range []string{OpWrite, OpCreate, OpUnlink} {
				if probe == root && op != OpUnlink {
					continue // the folder itself: only moving it matters
				}
				d, err := e.Decide(op, probe)
				if err != nil {
					add(at, "error", "cannot evaluate %s on %s: %v", op, show(probe), err)
					return
				}
				if d.Allow != want {
					verb := map[bool]string{true: "allowed", false: "denied"}[d.Allow]
					add(at, "error", "%s on %s is %s; the plan's %s mount at %s says otherwise", op, show(probe), verb, m.Mode, m.Target)
				}
			}
		}
	}
}
