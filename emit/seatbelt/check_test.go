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
