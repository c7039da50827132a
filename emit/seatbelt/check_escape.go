package seatbelt

import (
	"fmt"
	"strings"
)

// Probes are subjects no legitimate filter names: a rule that reaches one
// reaches every subject of its kind.
const (
	probePath     = "/mcpolicy-probe/any/file"
	probeTerminal = "/dev/ttys000"
	probeService  = "com.mcpolicy.probe.any"
)

// reachClass is a kind of access an allow must aim at named subjects: the
// operations that grant it, the probe that tells "everything", and why
// reaching everything is a way out of the sandbox.
type reachClass struct {
	ops      []string
	probes   []string
	severity string
	what     string // what the rule then does, after "it "
	hint     string
}

var reachClasses = []reachClass{
	{ops: []string{OpWrite, OpCreate, OpUnlink, "file-write-mode", "file-write-xattr", "file-write-flags", "file-write-times",
		"file-write-owner", "file-write-setugid", "file-link"}, probes: []string{probePath}, severity: "error",
		what: "may change any file the user can write (~/.zshrc, ~/.ssh/authorized_keys, other projects), not only the grants",
		hint: "name the paths with subpath, literal or prefix (alone, or beside this filter in require-all)"},
	{ops: []string{"file-read-data"}, probes: []string{probePath}, severity: "error",
		what: "may read any file the user can (~/.ssh, ~/.aws/credentials, browser profiles), not only the grants",
		hint: "name the paths with subpath, literal or prefix (alone, or beside this filter in require-all)"},
	{ops: []string{"file-read-metadata", "file-read-xattr", "file-test-existence"}, probes: []string{probePath}, severity: "warning",
		what: "sees the name, size and times of every file the user can reach, though not their contents",
		hint: "name the paths; realpath() needs only the folders above a grant (path-ancestors)"},
	{ops: []string{"file-ioctl"}, probes: []string{probePath, probeTerminal}, severity: "error",
		what: "may drive the terminal the server inherits, the user's own: TIOCSTI pushes keystrokes into its input, which the user's shell runs outside the sandbox",
		hint: `name the devices it needs, never /dev/ttys* (literal "/dev/dtracehelper")`},
	{ops: []string{"mach-lookup"}, probes: []string{probeService}, severity: "error",
		what: "may ask any mach service, and the daemons behind them act outside the sandbox on its behalf (launchservicesd opens applications, securityd answers from the keychain, pboard holds the clipboard)",
		hint: `name the services (global-name "com.apple.system.opendirectoryd.libinfo")`},
}

// leaving are operations no allow may grant, filtered or not: each one has
// something outside the sandbox act for the server.
var leaving = map[string]string{
	"lsopen":              "opens files and applications through Launch Services, which starts them outside the sandbox with the user's full rights (open -a Terminal script.command)",
	"appleevent-send":     "sends Apple Events, which script other applications outside the sandbox (tell application \"Terminal\" to do script ...)",
	"mach-priv-host-port": "hands out the host's privileged port, which controls the machine's processors and tasks",
}

// taskPorts are operations that hand out another process's task port: an
// allow must keep them to the sandbox's own processes.
var taskPorts = set("mach-priv*", "mach-priv-task-port")

// checkEscapes refuses, in any profile, the rules by which a server leaves
// the sandbox or reaches past it: a program run (with no-sandbox), an
// allow whose filter names no path or service (unfiltered file-read*, a
// write behind vnode-type alone, an unfiltered mach-lookup), Launch
// Services and Apple Events, other processes' task ports, and rules the
// checker cannot see: an import, or rules inside a condition or a define.
func checkEscapes(forms []*Node, add func(*Node, string, string, ...any)) {
	params := synthetic(forms)
	for _, f := range forms {
		switch f.Head() {
		case "import":
			add(f, "error", "%s brings in rules this checker cannot read (Apple's bsd.sb allows process-fork, dozens of mach services and sysctls of its own): write out the rules the server needs instead", f)
		case "if", "when", "unless", "define":
			if r := nestedRule(f); r != nil {
				add(r, "error", "(%s ...) inside (%s ...) is not checked: the checker does not evaluate conditions or definitions; write the rule at the top level", r.Head(), f.Head())
			}
		case "allow":
			ruleEscapes(f, NewEvaluator([]*Node{f}, params), add)
		}
	}
}

// nestedRule is the first allow or deny below f, or nil.
func nestedRule(f *Node) *Node {
	var found *Node
	for _, it := range f.Items[1:] {
		walk(it, func(n *Node) {
			if h := n.Head(); found == nil && (h == "allow" || h == "deny") {
				found = n
			}
		})
	}
	return found
}

func ruleEscapes(f *Node, one *Evaluator, add func(*Node, string, string, ...any)) {
	flts := filtersOf(f)
	filtered := hasFilter(flts)
	for _, it := range flts {
		if it.Head() == "with" && len(it.Items) > 1 && it.Items[1].Text == "no-sandbox" {
			add(it, "error", "(with no-sandbox) runs the program outside the sandbox: it and every child read, write and reach whatever the user can")
		}
	}
	reported := map[*Node]bool{}
	for _, op := range f.Items[1:] {
		if op.Kind != Symbol {
			continue
		}
		if why, ok := leaving[op.Text]; ok {
			reported[op] = true
			add(op, "error", "(allow %s) %s", op.Text, why)
		}
		if taskPorts[op.Text] && !sameSandboxOnly(flts) {
			reported[op] = true
			add(op, "error", "(allow %s) without (target same-sandbox) hands out the task ports of processes outside the sandbox: whoever holds one reads that process's memory and runs code in it", op.Text)
		}
	}
	for _, c := range reachClasses {
		for _, op := range f.Items[1:] {
			if op.Kind != Symbol || reported[op] || !coversAny(op.Text, c.ops) || (!filtered && wide[op.Text]) {
				continue
			}
			for _, probe := range c.probes {
				r, at := one.Reaches(f, firstCovered(op.Text, c.ops), probe)
				if r == ReachNever {
					continue
				}
				reported[op] = true
				rule, pos := "("+f.Head()+" "+op.Text+")", op
				if at != nil {
					rule, pos = "("+f.Head()+" "+op.Text+" "+at.String()+")", at
				}
				add(pos, c.severity, "%s %s: it %s; %s", rule, reachWhat(r, probe), c.what, c.hint)
				break
			}
		}
	}
	if !filtered && opNamed(f, "system-socket") {
		add(f, "warning", "(allow system-socket) without a filter creates any kind of socket, kernel-control (AF_SYSTEM) and routing sockets included, which report the machine's network state; name the kind: (require-all (socket-domain AF_INET) (socket-type SOCK_STREAM))")
	}
}

func reachWhat(r Reach, probe string) string {
	what := map[string]string{probePath: "every path", probeTerminal: "the terminals (/dev/ttys*)", probeService: "every mach service"}[probe]
	if r == ReachMaybe {
		return "names nothing the checker can read, so it may reach " + what
	}
	return "reaches " + what
}

func coversAny(rule string, ops []string) bool { return firstCovered(rule, ops) != "" }

func firstCovered(rule string, ops []string) string {
	for _, op := range ops {
		if opCovers(rule, op) && rule != "default" {
			return op
		}
	}
	return ""
}

func opNamed(f *Node, op string) bool {
	for _, it := range f.Items[1:] {
		if it.Kind == Symbol && it.Text == op {
			return true
		}
	}
	return false
}

// sameSandboxOnly: every filter is (target self) or (target same-sandbox).
func sameSandboxOnly(flts []*Node) bool {
	n := 0
	for _, fl := range flts {
		if fl.Head() == "with" {
			continue
		}
		n++
		if fl.Head() != "target" || len(fl.Items) != 2 || (fl.Items[1].Text != "self" && fl.Items[1].Text != "same-sandbox") {
			return false
		}
	}
	return n > 0
}

// checkListen holds a filtered network-bind or network-inbound, in a
// profile checked without its plan: seatbelt has no network of its own, so
// a server that listens does so on the host's.
func checkListen(f *Node, net []string, flts []*Node, add func(*Node, string, string, ...any)) {
	at := f
	unix := true
	for _, fl := range flts {
		if fl.Head() == "with" {
			continue
		}
		if at == f {
			at = fl
		}
		if fl.Head() != "local" || len(fl.Items) < 2 || !strings.HasPrefix(fl.Items[1].Text, "unix") {
			unix = false
		}
	}
	rule := fmt.Sprintf("(allow %s %s)", strings.Join(net, " "), at)
	if unix {
		add(at, "warning", "%s listens on a unix socket: any local process that can reach its path connects in", rule)
		return
	}
	add(at, "error", "%s listens on the host's network, whose loopback every local process shares: the server can take a port another program trusts (another server's egress proxy, a dev server) and read what is sent to it, and any local process or web page can connect in; mcpolicy's profiles never listen", rule)
}
