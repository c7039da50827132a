package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckProfileOursAndOverGrants: check-profile passes the profile
// mcpolicy builds, and refuses it once an over-grant is put back by hand:
// an unfiltered sysctl-read, an /opt/homebrew subpath, a .git whose folder
// can be renamed.
func TestCheckProfileOursAndOverGrants(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), `version: "v1"
servers: s: {
	command: ["node", "/workspace/index.js"]
	runtime: "node"
	backends: ["seatbelt"]
	mounts: [{source: ".", target: "/workspace", mode: "rw"}]
}
`)
	if code, _, stderr := run(t, "build", dir); code != ExitOK {
		t.Fatalf("build: exit %d: %s", code, stderr)
	}
	sb := filepath.Join(dir, ".mcpolicy", "seatbelt", "s.sb")
	ours, err := os.ReadFile(sb)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, "check-profile", sb, "-D", "MOUNT_0="+dir); code != ExitOK || !strings.Contains(out, ": ok, ") {
		t.Fatalf("check-profile on ours: exit %d\n%s", code, out)
	}
	text := string(ours)
	sysctl := text[strings.Index(text, "(allow sysctl-read\n"):]
	sysctl = sysctl[:strings.Index(sysctl, "))\n")+3]
	ancestors := "(deny file-write*\n    (literal (param \"MOUNT_0\"))\n    (path-ancestors (param \"MOUNT_0\")))\n"
	for name, c := range map[string]struct{ from, to, want string }{
		"unfiltered sysctl-read": {sysctl, "(allow sysctl-read)\n", "(allow sysctl-read) without a filter"},
		"/opt/homebrew subpath":  {sysctl, sysctl + "(allow file-read* process-exec (subpath \"/opt/homebrew\"))\n", "reaches /opt/homebrew/var"},
		"writable .git ancestor": {ancestors, "", `(param "MOUNT_0")/.git is kept from writes, but (param "MOUNT_0") above it can be renamed or removed`},
	} {
		edited := strings.Replace(text, c.from, c.to, 1)
		if edited == text {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		bad := filepath.Join(dir, "bad.sb")
		writeFile(t, bad, edited)
		code, out, _ := run(t, "check-profile", bad, "-D", "MOUNT_0="+dir)
		if code != ExitInvalid || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, want %d and %q:\n%s", name, code, ExitInvalid, c.want, out)
		}
	}
}

// TestCheckProfileEscapes: check-profile refuses, at the form's line and
// column, each construct by which a server leaves or reaches past the
// sandbox (issue #39), and warns with the reason where the reach is
// smaller; a warning alone still passes.
func TestCheckProfileEscapes(t *testing.T) {
	dir := t.TempDir()
	sb := filepath.Join(dir, "bad.sb")
	for _, c := range []struct {
		rule, want string
		code       int
	}{
		{`(allow process-exec (literal "/bin/ps") (with no-sandbox))`, "bad.sb:3:41: error: (with no-sandbox) runs the program outside the sandbox", ExitInvalid},
		{`(allow file-read*)`, "bad.sb:3:8: error: (allow file-read*) reaches every path: it may read any file the user can", ExitInvalid},
		{`(allow file-write* (vnode-type REGULAR-FILE))`, "bad.sb:3:20: error: (allow file-write* (vnode-type REGULAR-FILE)) names nothing the checker can read, so it may reach every path", ExitInvalid},
		{`(allow mach-lookup)`, "bad.sb:3:8: error: (allow mach-lookup) reaches every mach service", ExitInvalid},
		{`(allow lsopen)`, "bad.sb:3:8: error: (allow lsopen) opens files and applications through Launch Services", ExitInvalid},
		{`(allow appleevent-send)`, "bad.sb:3:8: error: (allow appleevent-send) sends Apple Events", ExitInvalid},
		{`(allow network-bind (local ip "localhost:*"))`, `bad.sb:3:21: error: (allow network-bind (local ip "localhost:*")) listens on the host's network`, ExitInvalid},
		{`(allow network-inbound (local tcp "localhost:8080"))`, `bad.sb:3:24: error: (allow network-inbound (local tcp "localhost:8080")) listens on the host's network`, ExitInvalid},
		{`(allow sysctl-read (sysctl-name-prefix "kern.proc.pid."))`, "bad.sb:3:20: error: (allow sysctl-read ...) reaches kern.proc.pid.1", ExitInvalid},
		{`(import "bsd.sb")`, `bad.sb:3:1: error: (import "bsd.sb") brings in rules this checker cannot read`, ExitInvalid},
		{`(allow mach-priv*)`, "bad.sb:3:8: error: (allow mach-priv*) without (target same-sandbox) hands out the task ports", ExitInvalid},
		{`(deny mach-priv*)`, "bad.sb: ok, 2 rules", ExitOK},
		{`(allow network-bind (local unix-socket (subpath "/private/tmp/s")))`, "bad.sb:3:21: warning: (allow network-bind (local unix-socket", ExitOK},
		{`(allow file-read-metadata)`, "bad.sb:3:8: warning: (allow file-read-metadata) reaches every path", ExitOK},
	} {
		writeFile(t, sb, "(version 1)\n(deny default)\n"+c.rule+"\n")
		code, out, _ := run(t, "check-profile", sb)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d (want %d)\n%s\nwant a line containing %q", c.rule, code, c.code, out, c.want)
		}
	}
}
