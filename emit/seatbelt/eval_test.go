package seatbelt

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
)

func evaluator(t *testing.T, src string, params map[string]string) *Evaluator {
	t.Helper()
	forms, err := Parse(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return NewEvaluator(forms, params)
}

func decide(t *testing.T, e *Evaluator, op, subject string) bool {
	t.Helper()
	d, err := e.Decide(op, subject)
	if err != nil {
		t.Fatalf("%s %s: %v", op, subject, err)
	}
	return d.Allow
}

// TestEvaluatorRules: the last matching rule wins; filters read as the
// emitter writes them.
func TestEvaluatorRules(t *testing.T) {
	e := evaluator(t, `(version 1)
(deny default)
(allow file-read* (subpath "/a"))
(deny file-read* (literal "/a/secret"))
(allow file-read-metadata (literal "/a/secret"))
(allow file-write* (prefix (string-append (param "P") "/tmp")))
(deny file-write-unlink (regex #"^/p/tmp[^/]*/keep$"))
(allow file-read-metadata (path-ancestors "/x/y/z"))
(allow file-read-data (require-all (subpath "/b") (require-not (literal "/b/no"))))
(allow file-read-data (require-any (literal "/c") (literal "/d")))
(allow file-read-data (subpath (param "UNDEFINED")))
(allow sysctl-read (sysctl-name "hw.ncpu") (sysctl-name-prefix "hw.optional.arm."))
`, map[string]string{"P": "/p"})
	for _, c := range []struct {
		op, subject string
		want        bool
	}{
		{"file-read-data", "/a", true},
		{"file-read-data", "/a/b/c", true},
		{"file-read-data", "/ab", false}, // subpath is by component
		{"file-read-data", "/a/secret", false},
		{"file-read-metadata", "/a/secret", true}, // a later, narrower allow
		{"file-read-xattr", "/a/secret", false},
		{OpWrite, "/p/tmp", true},
		{OpWrite, "/p/tmpfile/x", true}, // prefix is by character
		{OpUnlink, "/p/tmpx/keep", false},
		{OpUnlink, "/p/tmpx/other", true},
		{OpWrite, "/p/other", false},
		{"file-read-metadata", "/x/y", true},
		{"file-read-metadata", "/x", true},
		{"file-read-metadata", "/", true},
		{"file-read-metadata", "/x/y/z", false}, // strictly above
		{"file-read-metadata", "/x/yy", false},
		{"file-read-data", "/b/yes", true},
		{"file-read-data", "/b/no", false},
		{"file-read-data", "/d", true},
		{"file-read-data", "/e", false},
		{"sysctl-read", "hw.ncpu", true},
		{"sysctl-read", "hw.optional.arm.FEAT_AES", true},
		{"sysctl-read", "kern.proc.all", false},
		{"mach-lookup", "com.apple.trustd.agent", false},
	} {
		if got := decide(t, e, c.op, c.subject); got != c.want {
			t.Errorf("%s %s: allow=%v, want %v", c.op, c.subject, got, c.want)
		}
	}
	if _, err := evaluator(t, "(deny default)\n(allow file-read* (vnode-type DIRECTORY))", nil).Decide("file-read-data", "/x"); err == nil {
		t.Errorf("an unknown filter was evaluated")
	}
	// A rule for another operation is not consulted, whatever its filter.
	if decide(t, evaluator(t, "(deny default)\n(allow mach-lookup (vnode-type DIRECTORY))", nil), "file-read-data", "/x") {
		t.Errorf("allowed by a rule for another operation")
	}
}

// profileParams are the -D values of plan()'s profile on a plausible Mac.
var profileParams = map[string]string{
	"MOUNT_0": "/Users/dev/proj",
	"MOUNT_1": "/Users/dev/.cache/x",
	"SCRATCH": "/private/var/folders/ab/xyz/T/mcpolicy-scratch.AbCd",
}

// TestProtectedPathsEvaluate is the .git bypass, decided by the profile's
// own rules: `mv .git g; edit g/config; mv g .git` is refused at its first
// step, and so is every other way to write the protected names, while an
// ordinary file of the project stays writable.
func TestProtectedPathsEvaluate(t *testing.T) {
	_, text := build(t, plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"}))
	e := evaluator(t, text, profileParams)
	m, scratch := profileParams["MOUNT_0"], profileParams["SCRATCH"]

	deny := []struct{ op, path string }{
		{OpUnlink, m + "/.git"}, // rename(MOUNT/.git, ...) and rmdir
		{OpUnlink, m + "/.git/config"},
		{OpWrite, m + "/.git/config"},
		{OpCreate, m + "/.git/hooks/pre-commit"},
		{OpWrite, m + "/.mcpolicy/seatbelt/s.sb"},
		{OpCreate, m + "/.mcpolicy/seatbelt/s.sh"},
		{OpUnlink, m + "/.mcpolicy"},
		{OpCreate, m + "/.mcpolicy"}, // absent: cannot be created
		{OpWrite, m + "/mcpolicy.cue"},
		{OpCreate, m + "/mcpolicy.d/extra.cue"},
		{OpWrite, m + "/.env"},
		{OpWrite, m + "/.env.local"},
		{OpCreate, m + "/.env.d/secrets"}, // a .env* folder, as a whole
		{OpCreate, m + "/.mcp.json"},
		{OpUnlink, m}, // the mount itself cannot be moved aside
		{OpUnlink, "/Users/dev"},
		{OpWrite, "/Users/dev/.zshrc"},
		{"file-read-data", "/Users/dev/.ssh/id_ed25519"},
		{OpWrite, profileParams["MOUNT_1"] + "/file"}, // a read-only mount
	}
	for _, c := range deny {
		if decide(t, e, c.op, c.path) {
			t.Errorf("%s %s is allowed", c.op, c.path)
		}
	}
	allow := []struct{ op, path string }{
		{OpWrite, m + "/src/index.ts"},
		{OpCreate, m + "/src/new.ts"},
		{OpUnlink, m + "/src/old.ts"},
		{OpUnlink, m + "/src"},
		{OpWrite, m + "/sub/.env"},              // protected names are at the mount's top
		{OpWrite, m + "/.vscode/settings.json"}, // unprotected by the plan
		{OpWrite, scratch + "/tmpfile"},
		{"file-read-data", m + "/.git/config"}, // read-only, not hidden
		{"file-read-metadata", "/Users"},       // realpath() of the project
		{"file-read-metadata", "/private/var/folders/ab"},
		{"file-read-metadata", "/opt/homebrew"},
		{"process-exec", "/opt/homebrew/Cellar/node/22.1.0/bin/node"},
	}
	for _, c := range allow {
		if !decide(t, e, c.op, c.path) {
			t.Errorf("%s %s is denied", c.op, c.path)
		}
	}
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{m + "/.git", m + "/g", false},
		{m + "/g", m + "/.git", false},
		{m + "/src/a.ts", m + "/src/b.ts", true},
		{m + "/src/a.ts", m + "/.git/hooks/pre-commit", false},
		{m + "/.env", m + "/env", false},
		{m, scratch + "/proj", false},
		{scratch + "/x", m + "/.mcpolicy", false},
	} {
		got, err := e.Rename(c.from, c.to)
		if err != nil || got != c.want {
			t.Errorf("rename(%s, %s): allow=%v (%v), want %v", c.from, c.to, got, err, c.want)
		}
	}
	// Homebrew's var and etc are not the runtime's; sysctls are named.
	for _, c := range []struct{ op, subject string }{
		{"file-read-data", "/opt/homebrew/var/postgresql@16/postgresql.conf"},
		{"file-read-data", "/opt/homebrew/etc/my.cnf"},
		{"file-read-data", "/usr/local/var/db/redis/dump.rdb"},
		{"sysctl-read", "kern.proc.all"},
		{"sysctl-read", "kern.procargs2"},
		{"ipc-posix-shm-read-data", "/some-app-shm"},
	} {
		if decide(t, e, c.op, c.subject) {
			t.Errorf("%s %s is allowed", c.op, c.subject)
		}
	}
	for _, c := range []struct{ op, subject string }{
		{"file-read-data", "/opt/homebrew/etc/openssl@3/cert.pem"},
		{"sysctl-read", "hw.ncpu"},
		{"sysctl-read", "kern.tcsm_available"}, // the node baseline's
	} {
		if !decide(t, e, c.op, c.subject) {
			t.Errorf("%s %s is denied", c.op, c.subject)
		}
	}
}

// TestReadOnlyInsideReadWrite: a read-only mount inside a read-write one is
// denied, with the folders above it; a read-write one inside it is writable
// again, its own protected names included.
func TestReadOnlyInsideReadWrite(t *testing.T) {
	p := plan(compiler.HostPath{Base: compiler.ProjectRoot, Rel: "vendor"})
	p.Mounts = append(p.Mounts, compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "vendor/cache"}, Target: "/cache", Mode: compiler.ReadWrite})
	_, text := build(t, p)
	e := evaluator(t, text, map[string]string{"MOUNT_0": "/p", "MOUNT_1": "/p/vendor", "MOUNT_2": "/p/vendor/cache", "SCRATCH": "/s"})
	for _, c := range []struct {
		op, path string
		want     bool
	}{
		{OpWrite, "/p/src/x", true},
		{OpWrite, "/p/vendor/lib.js", false},
		{OpUnlink, "/p/vendor", false},
		{OpWrite, "/p/vendor/cache/blob", true},
		{OpWrite, "/p/vendor/cache/.git/config", false},
		{OpUnlink, "/p/vendor/cache", false},
	} {
		if got := decide(t, e, c.op, c.path); got != c.want {
			t.Errorf("%s %s: allow=%v, want %v", c.op, c.path, got, c.want)
		}
	}
	forms, _ := Parse(text)
	if fs := CheckPlan(forms, nil, p); len(fs) > 0 {
		t.Errorf("plan checker: %v", fs)
	}
}

// TestRWHoldsProject: a read-write mount above the project (accepted) gets
// the project's own protected names denied through a PROJECT parameter.
func TestRWHoldsProject(t *testing.T) {
	p := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
	p.Mounts[0].Source = compiler.HostPath{Base: compiler.Home, Rel: "code"}
	p.Accept = append(p.Accept, compiler.Accepted{Name: compiler.AcceptRWHoldsProject})
	pr, text := build(t, p)
	if !pr.ParamNames()[ProjectParam] {
		t.Fatalf("no %s parameter: %v", ProjectParam, pr.Params)
	}
	e := evaluator(t, text, map[string]string{"MOUNT_0": "/Users/dev/code", "MOUNT_1": "/c", "SCRATCH": "/s", ProjectParam: "/Users/dev/code/proj"})
	for _, c := range []struct {
		op, path string
		want     bool
	}{
		{OpWrite, "/Users/dev/code/proj/src/x", true},
		{OpWrite, "/Users/dev/code/proj/mcpolicy.cue", false},
		{OpCreate, "/Users/dev/code/proj/.mcpolicy/seatbelt/s.sb", false},
		{OpUnlink, "/Users/dev/code/proj/.git", false},
		{OpUnlink, "/Users/dev/code/proj", false},
		{OpWrite, "/Users/dev/code/.git/config", false},
	} {
		if got := decide(t, e, c.op, c.path); got != c.want {
			t.Errorf("%s %s: allow=%v, want %v", c.op, c.path, got, c.want)
		}
	}
	args, err := Args(p, pr, compiler.Placeholders{}, "x.sb")
	if err != nil || !strings.Contains(strings.Join(args, " "), "PROJECT=${PROJECT_ROOT}") {
		t.Errorf("args (%v): %q", err, args)
	}
	sh, err := Wrapper(p, pr, "../..")
	if err != nil || !strings.Contains(string(sh), `PROJECT=$(canon "${PROJECT_ROOT}")`) {
		t.Errorf("wrapper (%v):\n%s", err, sh)
	}
}

// TestHiddenWayEvaluate (#42, red team): a hidden path below a folder of
// a read-write project root (config/key) is denied by path; renaming
// config (`mv config c2; cat c2/key`) would move the file out of the
// rule's reach at once. The folders on a hidden path's way cannot be
// removed or renamed; what they hold stays writable.
func TestHiddenWayEvaluate(t *testing.T) {
	p := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
	p.Mounts[0].Hide = []string{"config/deep/key", "secrets"}
	pr, text := build(t, p)
	forms, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if fs := append(Check(forms, pr.ParamNames()), CheckPlan(forms, pr.ParamNames(), p)...); len(fs) > 0 {
		t.Errorf("checker findings: %v", fs)
	}
	e := evaluator(t, text, profileParams)
	m := profileParams["MOUNT_0"]
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{m + "/config", m + "/c2", false},
		{m + "/config/deep", m + "/config/d2", false},
		{m + "/config/deep/key", m + "/k", false},
		{m + "/secrets", m + "/s2", false},
		{m + "/config/other", m + "/config/o2", true},
		{m + "/src", m + "/s3", true},
	} {
		got, err := e.Rename(c.from, c.to)
		if err != nil || got != c.want {
			t.Errorf("rename(%s, %s): allow=%v (%v), want %v", c.from, c.to, got, err, c.want)
		}
	}
	for _, c := range []struct{ op, path string }{
		{OpCreate, m + "/config/new"},
		{OpWrite, m + "/config/deep/other"},
	} {
		if !decide(t, e, c.op, c.path) {
			t.Errorf("%s %s is denied", c.op, c.path)
		}
	}
	if decide(t, e, "file-read-data", m+"/config/deep/key") {
		t.Errorf("the hidden key is readable")
	}
}
