package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// machine is a fake host: which programs exist, what they print or fail
// with, the sysctls, the Landlock ABI, and whether a user namespace can be
// made.
type machine struct {
	uid      int
	paths    map[string]string // program -> path; absent: not on PATH
	setuid   map[string]bool
	files    map[string]string // /proc/sys/..., /sys/kernel/security/lsm, /.dockerenv
	outputs  map[string]string // "prog arg0" -> stdout
	failures map[string]error  // "prog arg0" -> error
	abi      int
	abiErr   error
	nsErr    error
	execNS   bool
	dynamic  error // the Static check's answer
}

// healthy is a machine where every backend works, seen by uid 1000.
func healthy() *machine {
	return &machine{
		uid:   1000,
		paths: map[string]string{"bwrap": "/usr/bin/bwrap", "docker": "/usr/bin/docker", "podman": "/usr/bin/podman"},
		files: map[string]string{
			"/proc/sys/user/max_user_namespaces": "63448\n",
			"/sys/kernel/security/lsm":           "lockdown,capability,landlock,yama,apparmor",
		},
		outputs: map[string]string{
			"/usr/bin/bwrap --version":     "bubblewrap 0.9.0\n",
			"/usr/bin/docker info":         "27.3.1\n",
			"/usr/bin/podman info":         "5.0.3\n",
			"/usr/bin/bwrap --unshare-all": "",
		},
		failures: map[string]error{},
		abi:      7,
		execNS:   true,
	}
}

type fileInfo struct {
	fs.FileInfo
	mode fs.FileMode
}

func (f fileInfo) Mode() fs.FileMode { return f.mode }

func (m *machine) checker() *Checker {
	return &Checker{
		Run: func(_ context.Context, name string, args ...string) ([]byte, error) {
			key := name
			if len(args) > 0 {
				key += " " + args[0]
			}
			if err, ok := m.failures[key]; ok {
				return nil, err
			}
			if out, ok := m.outputs[key]; ok {
				return []byte(out), nil
			}
			return nil, fmt.Errorf("fake machine: no answer for %q", key)
		},
		ReadFile: func(name string) ([]byte, error) {
			if s, ok := m.files[name]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		},
		LookPath: func(file string) (string, error) {
			if p, ok := m.paths[file]; ok {
				return p, nil
			}
			return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
		},
		Stat: func(name string) (fs.FileInfo, error) {
			if m.setuid[name] {
				return fileInfo{mode: 0o755 | fs.ModeSetuid}, nil
			}
			if _, ok := m.files[name]; ok {
				return fileInfo{mode: 0o644}, nil
			}
			for _, p := range m.paths {
				if p == name {
					return fileInfo{mode: 0o755}, nil
				}
			}
			return nil, fs.ErrNotExist
		},
		LandlockABI:    func() (int, error) { return m.abi, m.abiErr },
		UserNS:         func(context.Context) error { return m.nsErr },
		ExecUsesUserNS: func() bool { return m.execNS },
		Getuid:         func() int { return m.uid },
		Executable:     func() (string, error) { return "/usr/local/bin/mcpolicy", nil },
		Static:         func(string) error { return m.dynamic },
		Timeout:        5 * time.Second,
	}
}

func (m *machine) check(t *testing.T) map[string]Result {
	t.Helper()
	rep := m.checker().Check(t.Context())
	got := map[string]Result{}
	for _, r := range rep.Backends {
		got[r.Backend] = r
	}
	return got
}

// want checks a result's status and that detail and fix hold the given
// substrings.
func want(t *testing.T, r Result, status Status, detail, fix []string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %s, want %s\ndetail: %s\nfix: %s", r.Backend, r.Status, status, r.Detail, r.Fix)
	}
	for _, s := range detail {
		if !strings.Contains(r.Detail, s) {
			t.Errorf("%s: detail %q lacks %q", r.Backend, r.Detail, s)
		}
	}
	for _, s := range fix {
		if !strings.Contains(r.Fix, s) {
			t.Errorf("%s: fix %q lacks %q", r.Backend, r.Fix, s)
		}
	}
}

func TestHealthyMachine(t *testing.T) {
	rep := healthy().checker().Check(t.Context())
	var names []string
	for _, r := range rep.Backends {
		names = append(names, r.Backend)
		want(t, r, OK, nil, nil)
		if r.Fix != "" {
			t.Errorf("%s: ok with a fix: %q", r.Backend, r.Fix)
		}
	}
	if got := strings.Join(names, ","); got != "bwrap,landlock,docker,podman" {
		t.Errorf("backends %s, want bwrap,landlock,docker,podman in that order", got)
	}
	if got := strings.Join(rep.Usable, ","); got != "bwrap,landlock,docker,podman" {
		t.Errorf("usable %s", got)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"BACKEND", "STATUS", "DETAIL", "FIX", "bubblewrap 0.9.0", "docker 27.3.1", "podman 5.0.3: the engine answers (rootless)", "can run: bwrap, landlock, docker, podman"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
}

// Ubuntu 23.10+: bwrap without an AppArmor profile granting userns gets a
// user namespace without capabilities, and fails setting up its uid map.
func TestBwrapAppArmorRestriction(t *testing.T) {
	m := healthy()
	m.files["/proc/sys/kernel/apparmor_restrict_unprivileged_userns"] = "1\n"
	m.failures["/usr/bin/bwrap --unshare-all"] = errors.New("bwrap: setting up uid map: Permission denied: exit status 1")
	m.nsErr = errors.New("fork/exec /usr/bin/true: permission denied")
	m.execNS = false // launch reads the same sysctl
	got := m.check(t)
	want(t, got[Bwrap], Unavailable,
		[]string{"cannot create a sandbox", "kernel.apparmor_restrict_unprivileged_userns=1"},
		[]string{"profile bwrap /usr/bin/bwrap", "userns,", "/etc/apparmor.d/bwrap", "apparmor_parser -r", "kernel.apparmor_restrict_unprivileged_userns=0"})
	// exec runs without namespaces: TCP-only network and TMPDIR scratch,
	// and the profile to grant is mcpolicy's own.
	want(t, got[Landlock], Degraded,
		[]string{"kernel.apparmor_restrict_unprivileged_userns=1", "landlock-tcp-only", "landlock-scratch-dir"},
		[]string{"profile mcpolicy /usr/local/bin/mcpolicy", "userns,"})

	// Root is not bound by the AppArmor switch: ok, with a word for others.
	m.uid = 0
	delete(m.failures, "/usr/bin/bwrap --unshare-all")
	m.nsErr, m.execNS = nil, true
	got = m.check(t)
	want(t, got[Bwrap], OK, []string{"as root", "apparmor_restrict_unprivileged_userns=1"}, []string{"for other users"})
	want(t, got[Landlock], OK, nil, nil)
}

func TestBwrapUserNamespacesOff(t *testing.T) {
	cases := []struct {
		name, file, value string
		uid               int
		fix               string
	}{
		{"debian", "/proc/sys/kernel/unprivileged_userns_clone", "0", 1000, "sudo sysctl -w kernel.unprivileged_userns_clone=1"},
		{"max-zero", "/proc/sys/user/max_user_namespaces", "0", 1000, "sudo sysctl -w user.max_user_namespaces=15000"},
		{"max-zero-root", "/proc/sys/user/max_user_namespaces", "0", 0, "sudo sysctl -w user.max_user_namespaces=15000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := healthy()
			m.uid = c.uid
			m.files[c.file] = c.value + "\n"
			m.failures["/usr/bin/bwrap --unshare-all"] = errors.New("bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces: exit status 1")
			m.nsErr = syscall.EPERM
			m.execNS = false
			got := m.check(t)
			sysctl := strings.ReplaceAll(strings.TrimPrefix(c.file, "/proc/sys/"), "/", ".") + "=" + c.value
			want(t, got[Bwrap], Unavailable, []string{sysctl}, []string{c.fix, "/etc/sysctl.d/"})
			want(t, got[Landlock], Degraded, []string{sysctl, "landlock-tcp-only"}, []string{c.fix})
		})
	}
}

// With the sysctls allowing user namespaces, a failure has another cause:
// here a container's seccomp profile. exec would try namespaces and fail.
func TestUserNamespacesDeniedInContainer(t *testing.T) {
	m := healthy()
	m.files["/.dockerenv"] = ""
	m.failures["/usr/bin/bwrap --unshare-all"] = errors.New("bwrap: Creating new namespace failed: Operation not permitted: exit status 1")
	m.nsErr = errors.New("fork/exec /usr/bin/true: operation not permitted")
	got := m.check(t)
	want(t, got[Bwrap], Unavailable, []string{"inside a container", "Operation not permitted"}, []string{"seccomp"})
	want(t, got[Landlock], Unavailable, []string{"refuses to start"}, []string{"seccomp"})
}

func TestMissingBinaries(t *testing.T) {
	m := healthy()
	m.paths = map[string]string{}
	rep := m.checker().Check(t.Context())
	got := map[string]Result{}
	for _, r := range rep.Backends {
		got[r.Backend] = r
	}
	want(t, got[Bwrap], Unavailable, []string{"not on PATH"}, []string{"install bubblewrap"})
	want(t, got[Docker], Unavailable, []string{"not on PATH"}, []string{"install Docker"})
	want(t, got[Podman], Unavailable, []string{"not on PATH"}, []string{"install podman"})
	want(t, got[Landlock], OK, nil, nil) // needs no binary
	if strings.Join(rep.Usable, ",") != "landlock" {
		t.Errorf("usable %v, want [landlock]", rep.Usable)
	}

	m.abi, m.abiErr = 0, syscall.ENOSYS
	rep = m.checker().Check(t.Context())
	if len(rep.Usable) != 0 {
		t.Errorf("usable %v, want none", rep.Usable)
	}
	var b bytes.Buffer
	WriteTable(&b, rep)
	if !strings.Contains(b.String(), "no backend can run a server on this machine") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestOldOrSetuidBwrap(t *testing.T) {
	m := healthy()
	m.outputs["/usr/bin/bwrap --version"] = "bubblewrap 0.6.1\n"
	want(t, m.check(t)[Bwrap], Unavailable, []string{"0.6.1 is older than 0.8.0", "--disable-userns"}, []string{"upgrade bubblewrap"})

	m = healthy()
	m.setuid = map[string]bool{"/usr/bin/bwrap": true}
	want(t, m.check(t)[Bwrap], Degraded, []string{"setuid", "--size"}, []string{"not setuid"})
}

func TestEngineDown(t *testing.T) {
	cases := []struct {
		name, engine string
		err          error
		detail, fix  string
	}{
		{"docker-stopped", Docker,
			errors.New("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?: exit status 1"),
			"not running", "systemctl start docker"},
		{"docker-socket-permission", Docker,
			errors.New("permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.24/info\": dial unix /var/run/docker.sock: connect: permission denied: exit status 1"),
			"not allowed to use the Docker socket", "docker group"},
		{"docker-timeout", Docker, fmt.Errorf("/usr/bin/docker: %w", context.DeadlineExceeded), "did not answer within 5s", "systemctl status docker"},
		{"podman-subuid", Podman,
			errors.New(`time="2026-01-01T00:00:00Z" level=error msg="cannot find UID/GID for user u: no subuid ranges found for user \"u\" in /etc/subuid": exit status 125`),
			"no subuid ranges found", "--add-subuids"},
		{"podman-remote", Podman,
			errors.New("Cannot connect to Podman. Please verify your connection to the Linux system using `podman system connection list`: exit status 125"),
			"cannot reach its service", "podman machine start"},
		{"podman-other", Podman, errors.New(`time="2026-01-01T00:00:00Z" level=error msg="stat /root/.config/containers/storage.conf: permission denied": exit status 1`),
			"podman info failed: stat /root/.config/containers/storage.conf: permission denied", "podman info"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := healthy()
			m.failures[m.paths[c.engine]+" info"] = c.err
			got := m.check(t)
			want(t, got[c.engine], Unavailable, []string{c.detail}, []string{c.fix})
			other := Podman
			if c.engine == Podman {
				other = Docker
			}
			want(t, got[other], OK, nil, nil)
		})
	}
}

func TestLandlock(t *testing.T) {
	cases := []struct {
		name   string
		abi    int
		abiErr error
		lsm    string
		nsErr  error
		execNS bool
		status Status
		detail string
		fix    string
	}{
		{"abi7", 7, nil, "", nil, true, OK, "Landlock ABI 7", ""},
		{"abi5-no-scope", 5, nil, "", nil, true, Degraded, `accept "landlock-no-scope"`, "Linux 6.12"},
		{"abi3-no-userns", 3, nil, "", syscall.EPERM, false, Unavailable, `network "none" cannot be enforced`, "ABI 4"},
		{"abi2", 2, nil, "", nil, true, Unavailable, "needs ABI 3", "Linux 6.2"},
		{"enosys", 0, syscall.ENOSYS, "", nil, true, Unavailable, "no Landlock", "Linux 6.2"},
		{"not-enabled", 0, syscall.EOPNOTSUPP, "lockdown,capability,yama,apparmor\n", nil, true, Unavailable, "not enabled", "lsm=landlock,lockdown,capability,yama,apparmor"},
		{"timeout", 7, nil, "", context.DeadlineExceeded, true, Unavailable, "did not finish", "strace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := healthy()
			m.abi, m.abiErr, m.nsErr, m.execNS = c.abi, c.abiErr, c.nsErr, c.execNS
			if c.lsm != "" {
				m.files["/sys/kernel/security/lsm"] = c.lsm
			}
			var fix []string
			if c.fix != "" {
				fix = []string{c.fix}
			}
			want(t, m.check(t)[Landlock], c.status, []string{c.detail}, fix)
		})
	}
}

// TestEgressNeedsAStaticMcpolicy: a dynamically linked mcpolicy cannot be
// the forwarder inside a sandbox; doctor says so and how to fix it.
func TestEgressNeedsAStaticMcpolicy(t *testing.T) {
	m := healthy()
	rep := m.checker().Check(t.Context())
	want(t, rep.Egress, OK, []string{"statically linked"}, nil)
	m.dynamic = errors.New("/usr/local/bin/mcpolicy is dynamically linked and cannot run inside the sandbox")
	rep = m.checker().Check(t.Context())
	want(t, rep.Egress, Unavailable, []string{"cannot start", "dynamically linked"}, []string{"CGO_ENABLED=0"})
	var b bytes.Buffer
	WriteTable(&b, rep)
	if !strings.Contains(b.String(), "egress allowlists: servers with an egress allowlist cannot start") {
		t.Errorf("table lacks the egress line:\n%s", b.String())
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string][3]int{"0.8.0": {0, 8, 0}, "0.11.0": {0, 11, 0}, "0.10": {0, 10, 0}, "1.2.3-rc1": {1, 2, 3}} {
		if got, ok := parseVersion(in); !ok || got != want {
			t.Errorf("parseVersion(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if _, ok := parseVersion("unknown"); ok {
		t.Error("parseVersion(unknown) ok")
	}
	if !less([3]int{0, 6, 1}, MinBwrap) || less([3]int{0, 8, 0}, MinBwrap) || less([3]int{0, 10, 0}, MinBwrap) {
		t.Error("less disagrees with version order")
	}
}

// TestThisMachine runs the real checks. bwrap and Landlock must work here;
// the engines must too under CI=true (CI installs and starts them).
func TestThisMachine(t *testing.T) {
	start := time.Now()
	rep := New().Check(t.Context())
	t.Logf("checks took %s", time.Since(start).Round(time.Millisecond))
	var b bytes.Buffer
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
	order := []string{Bwrap, Landlock, Docker, Podman}
	if len(rep.Backends) != len(order) {
		t.Fatalf("%d results, want %d", len(rep.Backends), len(order))
	}
	mustWork := map[string]bool{Bwrap: true, Landlock: true}
	if os.Getenv("CI") == "true" {
		mustWork[Docker], mustWork[Podman] = true, true
	}
	for i, r := range rep.Backends {
		if r.Backend != order[i] {
			t.Errorf("result %d is %s, want %s", i, r.Backend, order[i])
		}
		switch r.Status {
		case OK, Degraded, Unavailable:
		default:
			t.Errorf("%s: status %q", r.Backend, r.Status)
		}
		if r.Detail == "" {
			t.Errorf("%s: no detail", r.Backend)
		}
		if r.Status != OK && r.Fix == "" {
			t.Errorf("%s: %s without a fix", r.Backend, r.Status)
		}
		if strings.Contains(r.Detail+r.Fix, "\n") {
			t.Errorf("%s: a newline in detail or fix would break the table", r.Backend)
		}
		if mustWork[r.Backend] && r.Status != OK {
			t.Errorf("%s: %s on this machine (%s; fix: %s)", r.Backend, r.Status, r.Detail, r.Fix)
		}
		if r.Status == OK && r.Version == "" {
			t.Errorf("%s: ok without a version", r.Backend)
		}
	}
}
