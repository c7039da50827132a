// Package doctor checks which backends can confine a server on this
// machine — bwrap, the Landlock launcher (`mcpolicy exec`), docker and
// podman — and, for each that cannot (or only weaker), says why and how to
// fix it. Every check actually runs what the backend needs (a bwrap
// sandbox, a user namespace, the engine's API) with a timeout; the machine
// is reached only through the Checker's functions, so the diagnosis can be
// tested without it. On macOS it checks seatbelt's sandbox-exec instead,
// and reports the Linux backends as needing Linux.
package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// Status is what a backend can do here.
type Status string

const (
	OK          Status = "ok"          // runs, with everything the backend can enforce
	Degraded    Status = "degraded"    // runs, weaker: policies must accept the degradations named in Detail
	Unavailable Status = "unavailable" // cannot run a server here
)

// MinBwrap is the oldest bubblewrap the emitted argv runs on: 0.8.0 added
// --disable-userns, which every emitted argv uses.
var MinBwrap = [3]int{0, 8, 0}

// Result is one backend's answer.
type Result struct {
	Backend string `json:"backend"`
	Status  Status `json:"status"`
	Version string `json:"version,omitempty"` // the tool's version, or "ABI n" for Landlock
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"` // set unless Status is OK (and sometimes then, for other users)
}

// Report is every backend's answer.
type Report struct {
	Backends []Result `json:"backends"`
	Usable   []string `json:"usable"` // backends whose status is ok
	// Egress says whether servers with an egress allowlist can start:
	// mcpolicy run binds this executable into the sandbox as the
	// forwarder, which needs it statically linked.
	Egress Result `json:"egress"`
}

// Checker reaches the machine only through its functions; New fills them
// with the real ones, tests with fakes.
type Checker struct {
	// Run runs a program and returns its stdout; on failure the error's
	// text ends with the program's stderr.
	Run      func(ctx context.Context, name string, args ...string) ([]byte, error)
	ReadFile func(name string) ([]byte, error)
	LookPath func(file string) (string, error)
	Stat     func(name string) (fs.FileInfo, error)
	// LandlockABI is the kernel's Landlock ABI version, or why there is none.
	LandlockABI func() (int, error)
	// UserNS tries what `mcpolicy exec` does: start a process in new user,
	// network and mount namespaces with a uid mapping.
	UserNS func(ctx context.Context) error
	// ExecUsesUserNS is whether `mcpolicy exec` will try namespaces (it
	// decides from the sysctls, not by trying).
	ExecUsesUserNS func() bool
	Getuid         func() int
	Executable     func() (string, error)
	// Static reports why an executable could not run inside a sandbox
	// (it is dynamically linked), or nil.
	Static func(path string) error
	// Timeout bounds each check.
	Timeout time.Duration
}

// New returns a Checker of this machine.
func New() *Checker {
	return &Checker{
		Run:            run,
		ReadFile:       os.ReadFile,
		LookPath:       exec.LookPath,
		Stat:           os.Stat,
		LandlockABI:    ll.LandlockGetABIVersion,
		UserNS:         tryUserNS,
		ExecUsesUserNS: func() bool { return hostcaps.Detect().UserNS },
		Getuid:         os.Getuid,
		Executable:     os.Executable,
		Static:         supervise.CheckStatic,
		Timeout:        20 * time.Second,
	}
}

// Check runs every check, concurrently, and reports them in a fixed order.
func (c *Checker) Check(ctx context.Context) Report {
	checks := c.checks()
	rs := make([]Result, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, c.timeout())
			defer cancel()
			rs[i] = check(ctx)
		})
	}
	wg.Wait()
	rep := Report{Backends: rs, Usable: []string{}, Egress: c.Egress()}
	for _, r := range rs {
		if r.Status == OK {
			rep.Usable = append(rep.Usable, r.Backend)
		}
	}
	return rep
}

// Egress checks that this mcpolicy can be the egress forwarder.
func (c *Checker) Egress() Result {
	if r, ok := egressHost(); ok {
		return r
	}
	r := Result{Backend: "egress", Status: OK}
	self, err := c.Executable()
	if err == nil && c.Static != nil {
		err = c.Static(self)
	}
	if err != nil {
		r.Status = Unavailable
		why, _, _ := strings.Cut(firstLine(err.Error()), " and cannot run") // the rest is the fix, below
		r.Detail = "servers with an egress allowlist cannot start: " + why
		r.Fix = "install a static build: CGO_ENABLED=0 go install ./cmd/mcpolicy"
		return r
	}
	r.Detail = "mcpolicy is statically linked: mcpolicy run can bind it into bwrap and container sandboxes as the egress forwarder"
	return r
}

func (c *Checker) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return 20 * time.Second
}

// bwrapProbe is the smallest sandbox of the kind bwrap.Args emits: every
// namespace unshared, /usr read-only, and a program run in it.
func bwrapProbe(layout bwrap.Layout) []string {
	a := []string{"--unshare-all", "--unshare-user", "--ro-bind", "/usr", "/usr"}
	for _, l := range []string{"bin", "lib", "lib64"} {
		if layout.MergedUsr {
			a = append(a, "--symlink", "usr/"+l, "/"+l)
		} else {
			a = append(a, "--ro-bind-try", "/"+l, "/"+l)
		}
	}
	return append(a, "--", "/usr/bin/true")
}

// Bwrap checks bubblewrap: on PATH, recent enough, and able to create a
// sandbox with a user namespace.
func (c *Checker) Bwrap(ctx context.Context, b emit.Backend) Result {
	r := Result{Backend: b.Name()}
	program := b.Runtime().Program
	path, err := c.LookPath(program)
	if err != nil {
		r.Status, r.Detail = Unavailable, program+" is not on PATH"
		r.Fix = "install bubblewrap 0.8.0 or later (apt install bubblewrap, dnf install bubblewrap, pacman -S bubblewrap)"
		return r
	}
	out, err := c.Run(ctx, path, "--version")
	if err != nil {
		r.Status, r.Detail = Unavailable, fmt.Sprintf("%s --version failed: %s", path, firstLine(err.Error()))
		r.Fix = "reinstall bubblewrap 0.8.0 or later"
		return r
	}
	r.Version = strings.TrimPrefix(strings.TrimSpace(string(out)), "bubblewrap ")
	if v, ok := parseVersion(r.Version); ok && less(v, MinBwrap) {
		r.Status = Unavailable
		r.Detail = fmt.Sprintf("bubblewrap %s is older than 0.8.0: the emitted sandboxes use --disable-userns", r.Version)
		r.Fix = "upgrade bubblewrap to 0.8.0 or later (Debian 12, Ubuntu 24.04 and later ship it)"
		return r
	}
	setuid := false
	if fi, err := c.Stat(path); err == nil && fi.Mode()&fs.ModeSetuid != 0 {
		setuid = true
	}
	_, err = c.Run(ctx, path, bwrapProbe(bwrap.DetectLayout())...)
	if err != nil {
		r.Status = Unavailable
		cause, fix := c.diagnoseUserNS(path, err)
		r.Detail = "cannot create a sandbox: " + cause
		r.Fix = fix
		return r
	}
	r.Status, r.Detail = OK, "bubblewrap "+r.Version+": sandboxes with user namespaces work"
	if setuid {
		r.Status = Degraded
		r.Detail = "bubblewrap " + r.Version + " is setuid root: it refuses --size, so policies with scratch do not run"
		r.Fix = "install a bubblewrap that is not setuid (the distribution's package) and enable unprivileged user namespaces"
		return r
	}
	if c.Getuid() == 0 {
		if cause, fix := c.restriction(path, true); cause != "" {
			r.Detail += " (as root; other users are blocked by " + cause + ")"
			r.Fix = "for other users: " + fix
		}
	}
	return r
}

// Landlock checks what `mcpolicy exec` can enforce: the ABI, and whether it
// gets user namespaces (an empty network namespace and a bounded scratch).
func (c *Checker) Landlock(ctx context.Context, b emit.Backend) Result {
	r := Result{Backend: b.Name()}
	abi, err := c.LandlockABI()
	if err != nil || abi <= 0 {
		r.Status = Unavailable
		r.Detail, r.Fix = c.noLandlock(err)
		return r
	}
	r.Version = "ABI " + strconv.Itoa(abi)
	if abi < landlock.MinABI {
		r.Status = Unavailable
		r.Detail = fmt.Sprintf("Landlock ABI %d: mcpolicy exec needs ABI %d (Linux 6.2) or later", abi, landlock.MinABI)
		r.Fix = "upgrade the kernel to Linux 6.2 or later, or use the bwrap or docker backend"
		return r
	}

	nsErr := c.UserNS(ctx)
	execNS := c.ExecUsesUserNS()
	var weaker, fixes []string
	switch {
	case nsErr != nil && execNS:
		// exec would try namespaces, fail, and refuse to start.
		cause, fix := c.diagnoseUserNS(c.self(), nsErr)
		r.Status = Unavailable
		r.Detail = fmt.Sprintf("Landlock ABI %d, but creating a user namespace fails (%s), and mcpolicy exec refuses to start without one", abi, cause)
		r.Fix = fix
		return r
	case nsErr != nil || !execNS:
		cause, fix := "", ""
		if nsErr != nil {
			cause, fix = c.diagnoseUserNS(c.self(), nsErr)
		} else {
			cause, fix = c.restriction(c.self(), c.Getuid() != 0)
			if cause == "" {
				cause = "the sysctls say user namespaces are off"
			}
		}
		if abi < 4 {
			r.Status = Unavailable
			r.Detail = fmt.Sprintf("Landlock ABI %d and no user namespaces (%s): network \"none\" cannot be enforced", abi, cause)
			r.Fix = fix + "; or upgrade the kernel to Linux 6.7 (ABI 4)"
			return r
		}
		weaker = append(weaker, fmt.Sprintf("no user namespaces, or no mounts inside one (%s): only TCP is denied (accept %q), scratch is an unbounded TMPDIR (accept %q), and with no minimal root every unix socket is refused by the seccomp filter (accept %q to allow them, and the host's named sockets with them)",
			cause, landlock.AcceptTCPOnly, landlock.AcceptScratchDir, landlock.AcceptUnixSockets))
		fixes = append(fixes, fix)
	}
	if abi < landlock.ScopeABI {
		weaker = append(weaker, fmt.Sprintf("ABI %d < %d: abstract unix sockets and signals are not scoped (accept %q)", abi, landlock.ScopeABI, landlock.AcceptNoScope))
		fixes = append(fixes, "upgrade the kernel to Linux 6.12 (ABI 6)")
	}
	if len(weaker) > 0 {
		r.Status = Degraded
		r.Detail = fmt.Sprintf("Landlock ABI %d; %s", abi, strings.Join(weaker, "; "))
		r.Fix = strings.Join(fixes, "; ") + "; or use the bwrap or docker backend"
		return r
	}
	r.Status = OK
	r.Detail = fmt.Sprintf("Landlock ABI %d, user namespaces: network namespace and bounded scratch", abi)
	return r
}

// noLandlock says why the kernel offers no Landlock.
func (c *Checker) noLandlock(err error) (detail, fix string) {
	lsm, _ := c.ReadFile("/sys/kernel/security/lsm")
	switch {
	case errors.Is(err, syscall.EOPNOTSUPP) || (len(lsm) > 0 && !strings.Contains(string(lsm), artefact.LSM)):
		list := strings.TrimSpace(string(lsm))
		if list == "" {
			list = "lockdown,yama,integrity,apparmor,bpf"
		}
		return "Landlock is built into the kernel but not enabled",
			"add landlock to the lsm= boot parameter (for example lsm=landlock," + list + "), or use the bwrap or docker backend"
	case errors.Is(err, syscall.ENOSYS):
		return "this kernel has no Landlock (older than 5.13, or built without CONFIG_SECURITY_LANDLOCK)",
			"use Linux 6.2 or later with Landlock enabled, or the bwrap or docker backend"
	}
	msg := "no Landlock ABI reported"
	if err != nil {
		msg = "Landlock is unavailable: " + err.Error()
	}
	return msg, "use Linux 6.2 or later with Landlock enabled, or the bwrap or docker backend"
}

// Engine checks a container engine: its CLI, and its engine answering.
// Where engines differ, its traits say how (artefact.EngineTraits).
func (c *Checker) Engine(ctx context.Context, b emit.Backend) Result {
	rt := b.Runtime()
	name, engine := rt.Program, rt.Engine
	r := Result{Backend: b.Name()}
	path, err := c.LookPath(name)
	if err != nil {
		r.Status, r.Detail = Unavailable, name+" is not on PATH"
		r.Fix = engine.Install
		return r
	}
	out, err := c.Run(ctx, path, "info", "--format", engine.VersionFormat)
	if err == nil {
		r.Version = lastLine(string(out))
		r.Status, r.Detail = OK, fmt.Sprintf("%s %s: the engine answers", name, r.Version)
		if engine.Daemonless && c.Getuid() != 0 {
			r.Detail += " (rootless)"
		}
		return r
	}
	r.Status = Unavailable
	r.Detail, r.Fix = c.diagnoseEngine(name, engine, path, err)
	return r
}

// diagnoseEngine reads the engine's error: a daemon's socket or state, or
// a daemonless engine's own setup.
func (c *Checker) diagnoseEngine(name string, engine artefact.EngineTraits, path string, err error) (detail, fix string) {
	msg := err.Error()
	low := strings.ToLower(msg)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("%s info did not answer within %s", name, c.timeout()),
			fmt.Sprintf("check the engine (systemctl status %s; %s info)", name, name)
	}
	if !engine.Daemonless { // its daemon: the socket, or not running
		switch {
		case strings.Contains(low, "permission denied") && strings.Contains(low, name):
			return "the CLI is not allowed to use the Docker socket",
				"use rootless Docker or podman, or add your user to the docker group (sudo usermod -aG docker $USER; it is root-equivalent) and log in again"
		case strings.Contains(low, "cannot connect to the docker daemon"), strings.Contains(low, "is the docker daemon running"),
			strings.Contains(low, "connection refused"), strings.Contains(low, "no such file or directory"):
			return "the Docker daemon is not running (or DOCKER_HOST / the docker context points elsewhere)",
				"start it: sudo systemctl start docker (rootless: systemctl --user start docker); check docker context ls"
		}
	} else { // its own setup: user namespaces, or the service it calls
		switch {
		case strings.Contains(low, "newuidmap"), strings.Contains(low, "subuid"), strings.Contains(low, "user namespace"),
			strings.Contains(low, "cannot clone"), strings.Contains(low, "uid_map"):
			cause, fix := c.restriction(path, c.Getuid() != 0)
			if cause == "" {
				return "rootless podman cannot set up its user namespace: " + firstLine(msg),
					"install uidmap and give your user subordinate ids (sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $USER), then podman system migrate"
			}
			return "rootless podman cannot create user namespaces: " + cause, fix
		case strings.Contains(low, "cannot connect to podman"), strings.Contains(low, "unable to connect to podman"):
			return "podman cannot reach its service (remote mode or podman machine)",
				"podman machine start, or systemctl --user start podman.socket"
		}
	}
	return fmt.Sprintf("%s info failed: %s", name, firstLine(msg)), fmt.Sprintf("run %s info to see the engine's error", name)
}

// sysctl reads a sysctl from /proc/sys; "" when it does not exist.
func (c *Checker) sysctl(name string) string {
	b, err := c.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// restriction names the sysctl keeping prog from user namespaces, with its
// fix; "" when the sysctls allow them. Only user.max_user_namespaces binds
// root; the others bind unprivileged users.
func (c *Checker) restriction(prog string, unprivileged bool) (cause, fix string) {
	persist := func(kv string) string {
		return fmt.Sprintf("sudo sysctl -w %s, and echo %s | sudo tee /etc/sysctl.d/60-userns.conf to keep it", kv, kv)
	}
	if c.sysctl("user.max_user_namespaces") == "0" {
		return "user.max_user_namespaces=0, which disables user namespaces for everyone",
			persist("user.max_user_namespaces=15000")
	}
	if !unprivileged {
		return "", ""
	}
	if c.sysctl("kernel.unprivileged_userns_clone") == "0" {
		return "kernel.unprivileged_userns_clone=0 (Debian's switch for unprivileged user namespaces)",
			persist("kernel.unprivileged_userns_clone=1")
	}
	if c.sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1" {
		name := prog[strings.LastIndexByte(prog, '/')+1:]
		profile := fmt.Sprintf(`abi <abi/4.0>,\ninclude <tunables/global>\nprofile %s %s flags=(unconfined) {\n  userns,\n}\n`, name, prog)
		return "kernel.apparmor_restrict_unprivileged_userns=1 (Ubuntu 23.10+: AppArmor denies user namespaces to programs without a profile granting userns)",
			fmt.Sprintf("give %s an AppArmor profile granting userns: printf '%s' | sudo tee /etc/apparmor.d/%s && sudo apparmor_parser -r /etc/apparmor.d/%s; or, for every program, sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
				prog, profile, name, name)
	}
	return "", ""
}

// diagnoseUserNS says why prog could not create a user namespace.
func (c *Checker) diagnoseUserNS(prog string, err error) (cause, fix string) {
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("it did not finish within %s", c.timeout()), "check what blocks it: " + prog + " with strace -f"
	}
	if cause, fix := c.restriction(prog, c.Getuid() != 0); cause != "" {
		return cause, fix
	}
	if c.inContainer() {
		return "running inside a container, whose seccomp profile denies new namespaces (" + firstLine(msg) + ")",
			"run mcpolicy on the host, or start this container with a seccomp profile allowing unshare and clone of user namespaces"
	}
	return firstLine(msg), "check that the kernel has CONFIG_USER_NS and that no LSM (SELinux, AppArmor) or seccomp filter denies user namespaces; or use the docker backend"
}

func (c *Checker) inContainer() bool {
	for _, f := range []string{"/.dockerenv", "/run/.containerenv"} {
		if _, err := c.Stat(f); err == nil {
			return true
		}
	}
	return false
}

func (c *Checker) self() string {
	if p, err := c.Executable(); err == nil {
		return p
	}
	return "mcpolicy"
}

// run is Checker.Run on this machine.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.Bytes(), fmt.Errorf("%s: %w", name, ctx.Err())
	}
	if err != nil {
		if s := strings.TrimSpace(stderr.String()); s != "" {
			return stdout.Bytes(), fmt.Errorf("%s: %w", s, err)
		}
		return stdout.Bytes(), err
	}
	return stdout.Bytes(), nil
}

// WriteTable prints the report as a table, then which backends can run.
func WriteTable(w io.Writer, rep Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tSTATUS\tDETAIL\tFIX")
	for _, r := range rep.Backends {
		fix := r.Fix
		if fix == "" {
			fix = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Backend, r.Status, r.Detail, fix)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var runs []string
	for _, r := range rep.Backends {
		switch r.Status {
		case OK:
			runs = append(runs, r.Backend)
		case Degraded:
			runs = append(runs, r.Backend+" (degraded)")
		}
	}
	if len(runs) == 0 {
		fmt.Fprintln(w, "\nno backend can run a server on this machine")
	} else {
		fmt.Fprintf(w, "\ncan run: %s\n", strings.Join(runs, ", "))
	}
	if e := rep.Egress; e.Status != "" {
		line := fmt.Sprintf("egress allowlists: %s", e.Detail)
		if e.Fix != "" {
			line += " (fix: " + e.Fix + ")"
		}
		_, err := fmt.Fprintln(w, line)
		return err
	}
	return nil
}

// firstLine is the first line of a tool's error, with the message alone
// when the line is a logrus record (time="…" level=error msg="…").
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if _, m, ok := strings.Cut(s, ` msg="`); ok && strings.HasPrefix(s, "time=") {
		if q, err := strconv.Unquote(`"` + m[:strings.LastIndexByte(m, '"')] + `"`); err == nil {
			return q
		}
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}

// parseVersion reads "0.8.0" (a suffix after the numbers is ignored).
func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.SplitN(s, ".", 3)
	for i, p := range parts {
		end := 0
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		n, err := strconv.Atoi(p[:end])
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, len(parts) >= 2
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
