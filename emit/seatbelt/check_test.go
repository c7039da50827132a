package seatbelt

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
)

func errorsOf(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Severity == "error" {
			out = append(out, f.String())
		}
	}
	return out
}

// TestCheckerPassesOurs: every runtime, with and without an allowlist, with
// and without scratch: our profiles pass the checker, alone and against
// their plan.
func TestCheckerPassesOurs(t *testing.T) {
	for _, runtime := range []string{"static", "system", "node", "python"} {
		for _, egress := range []bool{false, true} {
			p := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
			if egress {
				p = allowlistPlan()
			}
			p.Runtime.Name = runtime
			pr, text := build(t, p)
			forms, err := Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			if fs := Check(forms, pr.ParamNames()); len(fs) > 0 {
				t.Errorf("%s (egress %v): %v", runtime, egress, fs)
			}
			if fs := CheckPlan(forms, pr.ParamNames(), p); len(fs) > 0 {
				t.Errorf("%s (egress %v) against its plan: %v", runtime, egress, fs)
			}
			if trustd := strings.Contains(text, `"com.apple.trustd.agent"`); trustd != egress {
				t.Errorf("%s (egress %v): trustd.agent allowed: %v", runtime, egress, trustd)
			}
			for _, over := range []string{"(allow sysctl-read)\n", "(allow ipc-posix-shm)", `(subpath "/opt/homebrew")`, `(subpath "/usr/local")`, "(allow network-outbound (remote ip "} {
				if strings.Contains(text, over) {
					t.Errorf("%s (egress %v): profile holds %s", runtime, egress, over)
				}
			}
		}
	}
}

// TestCheckerRejectsOverGrants: each over-grant the peers do without, put
// back into our own profile by hand, is an error of check-profile.
func TestCheckerRejectsOverGrants(t *testing.T) {
	pr, ours := build(t, plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"}))
	sysctl := ours[strings.Index(ours, "(allow sysctl-read\n"):]
	sysctl = sysctl[:strings.Index(sysctl, "))\n")+3]
	ancestors := "(deny file-write*\n    (literal (param \"MOUNT_0\"))\n    (path-ancestors (param \"MOUNT_0\")))\n"
	gitDeny := "(deny file-write* (subpath (string-append (param \"MOUNT_0\") \"/.git\")))\n"
	if !strings.Contains(ours, ancestors) || !strings.Contains(ours, gitDeny) {
		t.Fatalf("profile lacks the rules this test edits:\n%s", ours)
	}
	edits := []struct {
		name, from, to, want string
	}{
		{"unfiltered sysctl-read", sysctl, "(allow sysctl-read)\n", "(allow sysctl-read) without a filter reads every sysctl: kern.proc.all"},
		{"sysctl prefix over the process list", sysctl, "(allow sysctl-read (sysctl-name-prefix \"kern.proc.\"))\n", "reaches kern.proc.all"},
		{"all of /opt/homebrew", sysctl, sysctl + "(allow file-read* file-map-executable process-exec (subpath \"/opt/homebrew\"))\n", "reaches /opt/homebrew/var, the user's Homebrew data"},
		{"all of /usr/local", sysctl, sysctl + "(allow file-read* (subpath \"/usr/local\"))\n", "reaches /usr/local/var"},
		{"Homebrew's etc", sysctl, sysctl + "(allow file-read* (subpath \"/opt/homebrew/etc\"))\n", "reaches /opt/homebrew/etc, the user's Homebrew configuration"},
		{"unfiltered ipc-posix-shm", sysctl, sysctl + "(allow ipc-posix-shm)\n", "(allow ipc-posix-shm) without a filter opens any POSIX shared memory"},
		{"unfiltered shm read", sysctl, sysctl + "(allow ipc-posix-shm-read-data)\n", "(allow ipc-posix-shm-read-data) without a filter"},
		{"writable .git ancestor (the project)", ancestors, "", `(param "MOUNT_0")/.git is kept from writes, but (param "MOUNT_0") above it can be renamed or removed`},
		{"writable .git (only config and hooks denied)", gitDeny,
			"(deny file-write* (literal (string-append (param \"MOUNT_0\") \"/.git/config\")))\n(deny file-write* (subpath (string-append (param \"MOUNT_0\") \"/.git/hooks\")))\n",
			`(param "MOUNT_0")/.git/config is kept from writes, but (param "MOUNT_0")/.git above it can be renamed or removed`},
	}
	for _, c := range edits {
		edited := strings.Replace(ours, c.from, c.to, 1)
		if edited == ours {
			t.Fatalf("%s: the edit changed nothing", c.name)
		}
		forms, err := Parse(edited)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		errs := errorsOf(Check(forms, pr.ParamNames()))
		if len(errs) != 1 || !strings.Contains(errs[0], c.want) {
			t.Errorf("%s: errors %q, want one saying %q", c.name, errs, c.want)
		}
	}
	// Hand-written profiles: the ancestors deny is what makes a .git deny
	// hold, whoever wrote it.
	for src, want := range map[string]string{
		`(allow file-read* file-write* (subpath "/Users/me/proj"))
(deny file-write* (subpath "/Users/me/proj/.git"))`: `/Users/me/proj/.git is kept from writes, but /Users/me/proj above it can be renamed`,
		`(allow file-read* file-write* (subpath "/Users/me"))
(deny file-write* (subpath "/Users/me/proj/.git"))
(deny file-write-unlink (literal "/Users/me/proj"))`: `but /Users/me above it can be renamed`,
	} {
		forms, err := Parse("(version 1)\n(deny default)\n" + src)
		if err != nil {
			t.Fatal(err)
		}
		if errs := errorsOf(Check(forms, nil)); len(errs) != 1 || !strings.Contains(errs[0], want) {
			t.Errorf("%s: errors %q, want one saying %q", src, errs, want)
		}
	}
	forms, _ := Parse(`(version 1)
(deny default)
(allow file-read* file-write* (subpath "/Users/me/proj"))
(deny file-write* (subpath "/Users/me/proj/.git"))
(deny file-write* (literal "/Users/me/proj") (path-ancestors "/Users/me/proj"))`)
	if fs := Check(forms, nil); len(fs) > 0 {
		t.Errorf("a hand-written profile that holds: %v", fs)
	}
}

// TestCheckPlanProtected: against its plan, a profile must keep each
// protected name the plan does not unprotect, and nothing more.
func TestCheckPlanProtected(t *testing.T) {
	p := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
	pr, ours := build(t, p)
	for _, c := range []struct{ from, to, want string }{
		{"(deny file-write* (subpath (string-append (param \"MOUNT_0\") \"/.git\")))\n", "", `file-write-data on (param "MOUNT_0")/.git is allowed`},
		{"(deny file-write* (prefix (string-append (param \"MOUNT_0\") \"/.env\")))\n", "", `on (param "MOUNT_0")/.envprobe is allowed`},
		{"(deny network*)\n", "(deny network*)\n(deny file-write* (subpath (string-append (param \"MOUNT_0\") \"/.vscode\")))\n", `(param "MOUNT_0")/.vscode is denied`},
	} {
		edited := strings.Replace(ours, c.from, c.to, 1)
		forms, err := Parse(edited)
		if err != nil || edited == ours {
			t.Fatalf("edit %q: %v", c.from, err)
		}
		if errs := errorsOf(CheckPlan(forms, pr.ParamNames(), p)); len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), c.want) {
			t.Errorf("without %q: errors %q, want one saying %q", c.from, errs, c.want)
		}
	}
}

// TestCheckerRefusesEscapes: each way out of the sandbox the peers' and
// Apple's profiles show is refused (or warned of, with the reason) at the
// line and column of the form that opens it, and is the only finding.
func TestCheckerRefusesEscapes(t *testing.T) {
	for rule, want := range map[string]string{
		`(allow process-exec (literal "/bin/ps") (with no-sandbox))`:            "3:41: error: (with no-sandbox) runs the program outside the sandbox",
		`(allow process-exec* (with no-sandbox))`:                               "3:22: error: (with no-sandbox)",
		`(allow file-read*)`:                                                    "3:8: error: (allow file-read*) reaches every path: it may read any file the user can",
		`(allow file-read-data (subpath "/"))`:                                  `3:23: error: (allow file-read-data (subpath "/")) reaches every path`,
		`(allow file-write* (vnode-type REGULAR-FILE))`:                         "3:20: error: (allow file-write* (vnode-type REGULAR-FILE)) names nothing the checker can read, so it may reach every path: it may change any file",
		`(allow file-write-data (require-not (subpath "/System")))`:             "3:24: error: (allow file-write-data (require-not (subpath \"/System\"))) reaches every path",
		`(allow file-write* (extension "com.apple.app-sandbox.read-write"))`:    "3:20: error: (allow file-write* (extension",
		`(allow file-write-mode)`:                                               "3:8: error: (allow file-write-mode) reaches every path: it may change any file",
		`(allow file-link)`:                                                     "3:8: error: (allow file-link) reaches every path",
		`(allow file-read-metadata)`:                                            "3:8: warning: (allow file-read-metadata) reaches every path: it sees the name, size and times of every file",
		`(allow file-ioctl (regex #"^/dev/ttys[0-9]+"))`:                        `3:19: error: (allow file-ioctl (regex #"^/dev/ttys[0-9]+")) reaches the terminals (/dev/ttys*): it may drive the terminal the server inherits`,
		`(allow file-ioctl)`:                                                    "3:8: error: (allow file-ioctl) reaches every path",
		`(allow mach-lookup)`:                                                   "3:8: error: (allow mach-lookup) reaches every mach service: it may ask any mach service",
		`(allow mach-lookup (global-name-regex #"^com\.apple\."))`:              "", // wide, but names services: not every one
		`(allow mach-lookup (require-not (global-name "com.apple.securityd")))`: `3:20: error: (allow mach-lookup (require-not (global-name "com.apple.securityd"))) reaches every mach service`,
		`(allow lsopen)`:                                                        "3:8: error: (allow lsopen) opens files and applications through Launch Services",
		`(allow appleevent-send (appleevent-destination "com.apple.Terminal"))`: "3:8: error: (allow appleevent-send) sends Apple Events",
		`(allow network-bind (local ip "localhost:*"))`:                         `3:21: error: (allow network-bind (local ip "localhost:*")) listens on the host's network`,
		`(allow network-inbound (local tcp "localhost:8080"))`:                  `3:24: error: (allow network-inbound (local tcp "localhost:8080")) listens on the host's network`,
		`(allow network-bind (local unix-socket (subpath "/private/tmp/s")))`:   "3:21: warning: (allow network-bind (local unix-socket",
		`(allow network-bind)`:                                                  "3:8: error: (allow network-bind) without a filter listens on every address and port",
		`(allow sysctl-read (sysctl-name-prefix "kern.proc.pid."))`:             `3:20: error: (allow sysctl-read ...) reaches kern.proc.pid.1, which describes any process by its pid`,
		`(allow sysctl-read (sysctl-name-regex #"^kern\.proc\.pgrp\."))`:        "3:20: error: (allow sysctl-read ...) reaches kern.proc.pgrp.1",
		`(import "bsd.sb")`:                                                     `3:1: error: (import "bsd.sb") brings in rules this checker cannot read`,
		`(allow mach-priv*)`:                                                    "3:8: error: (allow mach-priv*) without (target same-sandbox) hands out the task ports",
		`(allow mach-priv-task-port (target others))`:                           "3:8: error: (allow mach-priv-task-port) without (target same-sandbox)",
		`(allow mach-priv-host-port)`:                                           "3:8: error: (allow mach-priv-host-port) hands out the host's privileged port",
		`(when (param "X") (allow file-read* (subpath "/")))`:                   "3:19: error: (allow ...) inside (when ...) is not checked",
		`(define (open-all) (allow default))`:                                   "3:20: error: (allow ...) inside (define ...) is not checked",
		`(open-all)`:                                                            "3:1: error: unknown top-level form (open-all)",
		`(allow system-socket)`:                                                 "3:1: warning: (allow system-socket) without a filter creates any kind of socket",
	} {
		forms, err := Parse("(version 1)\n(deny default)\n" + rule)
		if err != nil {
			t.Fatalf("%s: %v", rule, err)
		}
		var got []string
		for _, f := range Check(forms, nil) {
			got = append(got, f.String())
		}
		if want == "" {
			if len(got) > 0 {
				t.Errorf("%s: findings %q, want none", rule, got)
			}
			continue
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], want) {
			t.Errorf("%s:\n got %q\nwant one starting %q", rule, got, want)
		}
	}
	// What the widely run profiles write for the same needs holds.
	for _, rule := range []string{
		`(deny mach-priv*)`, `(deny lsopen)`, `(deny file-read*)`, `(deny process-exec (with no-sandbox))`,
		`(allow mach-priv-task-port (target same-sandbox))`,
		`(allow file-write-data (require-all (path "/dev/null") (vnode-type CHARACTER-DEVICE)))`,
		`(allow file-read* file-write* (require-all (regex #"^/dev/ttys[0-9]+") (extension "com.apple.sandbox.pty")))`,
		`(allow file-ioctl (literal "/dev/dtracehelper"))`,
		`(allow system-socket (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))`,
		`(allow sysctl-read (sysctl-name "kern.osrelease") (sysctl-name-prefix "hw.optional.arm."))`,
		`(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))`,
	} {
		forms, err := Parse("(version 1)\n(deny default)\n" + rule)
		if err != nil {
			t.Fatalf("%s: %v", rule, err)
		}
		if fs := Check(forms, nil); len(fs) > 0 {
			t.Errorf("%s: %v", rule, fs)
		}
	}
}
