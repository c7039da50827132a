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
