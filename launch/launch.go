// Package launch starts a server under a Landlock ruleset (`mcpolicy
// exec`). Where unprivileged user namespaces work, the server also gets an
// empty network namespace (network "none" for every protocol, not just TCP)
// and a private mount namespace holding its bounded scratch tmpfs; the
// launcher then stays as a small parent that forwards signals and returns
// the server's exit status. Elsewhere it applies the ruleset to itself and
// execs the server in place. Either way stdin and stdout reach the server
// untouched: they are MCP's stdio transport.
package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
)

// Stage2Arg is argv[1] of the launcher re-executed inside the namespaces.
const Stage2Arg = "__mcpolicy-landlock-stage2"

// UnsupportedError says this machine cannot run the plan as the policy
// demands (no Landlock, an ABI too old, no user namespaces): exit code 4.
type UnsupportedError struct{ Err error }

func (e *UnsupportedError) Error() string { return e.Err.Error() }
func (e *UnsupportedError) Unwrap() error { return e.Err }

// spec is what stage 1 hands stage 2, on a pipe (never in argv).
type spec struct {
	Ruleset *landlock.Ruleset `json:"ruleset"`
	ABI     int               `json:"abi"`
	Scratch string            `json:"scratch,omitempty"` // tmpfs target to mount
	Size    int64             `json:"size,omitempty"`
	Env     []string          `json:"env"`
	NoNetNS bool              `json:"noNetns,omitempty"`
	Verbose bool              `json:"verbose,omitempty"`
}

// Options tune a launch.
type Options struct {
	Verbose io.Writer      // where to say what is enforced; nil for quiet
	Environ []string       // the launcher's environment; passthrough values come from it
	Host    *landlock.Host // what the machine offers; nil: DetectHost
}

// DetectHost reads what this machine offers. User namespace support is
// only known for sure by trying, which Run does; here it is the kernel's
// stated limit.
func DetectHost() landlock.Host {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		abi = 0
	}
	return landlock.Host{ABI: abi, UserNS: userNSAllowed()}
}

func userNSAllowed() bool {
	for _, f := range []string{"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces"} {
		b, err := os.ReadFile(f)
		if err == nil && strings.TrimSpace(string(b)) == "0" {
			return false
		}
	}
	b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
	if err == nil && strings.TrimSpace(string(b)) == "1" && os.Getuid() != 0 {
		return false
	}
	return true
}

// Run starts the plan's server confined. It returns only on failure, or
// with the server's exit code when it ran under namespaces.
func Run(p *compiler.Plan, r compiler.Resolver, opts Options) (int, error) {
	host := DetectHost()
	if opts.Host != nil {
		host = *opts.Host
	}
	if host.ABI < landlock.MinABI {
		return 0, &UnsupportedError{fmt.Errorf("this kernel offers Landlock ABI %d; mcpolicy needs ABI %d or later (Linux 6.2+) to confine %q — refusing to start unconfined", host.ABI, landlock.MinABI, p.Server)}
	}
	rs, err := landlock.Build(p, r)
	if err != nil {
		return 0, err
	}
	if err := emit.Check(p, landlock.Backend, landlock.Enforcement(p, host)); err != nil {
		var ne *emit.NotEnforceableError
		if errors.As(err, &ne) {
			return 0, &UnsupportedError{fmt.Errorf("%w\n\ton this machine: Landlock ABI %d, user namespaces %s", err, host.ABI, yesNo(host.UserNS))}
		}
		return 0, err
	}
	sp := &spec{Ruleset: rs, ABI: host.ABI, Env: environment(p, opts.Environ), Verbose: opts.Verbose != nil}
	if p.Scratch != nil && host.UserNS {
		sp.Scratch, sp.Size = p.Scratch.Target, p.Scratch.SizeBytes
		// The tmpfs goes over the host path: it must not hide a grant.
		for _, g := range append(append(append([]string{}, rs.ReadOnly...), rs.ReadWrite...), rs.Command[0], rs.Workdir) {
			if g != "" && (g == sp.Scratch || strings.HasPrefix(g, strings.TrimSuffix(sp.Scratch, "/")+"/")) {
				return 0, fmt.Errorf("%s: scratch at %s would hide %s, which lies below it on this machine (Landlock runs with host paths): move the scratch target, or use the bwrap or docker backend", p.Scratch.Pos, sp.Scratch, g)
			}
		}
	}
	say(opts.Verbose, "mcpolicy exec: %s: Landlock ABI %d, user namespaces %s, plan %s", p.Server, host.ABI, yesNo(host.UserNS), p.Hash)
	if host.UserNS {
		return runInNamespaces(p, sp, opts)
	}
	sp.NoNetNS = true
	if p.Scratch != nil { // landlock-scratch-dir was accepted (Check above)
		dir, err := os.MkdirTemp("", "mcpolicy-scratch-")
		if err != nil {
			return 0, err
		}
		rs.ReadWrite = append(rs.ReadWrite, dir)
		sp.Env = append(sp.Env, "TMPDIR="+dir)
	}
	return 0, confineAndExec(sp, opts.Verbose)
}

// environment is the server's whole environment: a fixed PATH and HOME, and
// the passthrough names that are set.
func environment(p *compiler.Plan, environ []string) []string {
	home := "/"
	if p.Scratch != nil {
		home = p.Scratch.Target
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "MCPOLICY_PLAN=" + p.Hash}
	for _, name := range p.Env {
		for _, kv := range environ {
			if strings.HasPrefix(kv, name+"=") {
				env = append(env, kv)
			}
		}
	}
	return env
}

// runInNamespaces re-executes the launcher in new user, network and (for
// scratch) mount namespaces, mapping the invoking user to the plan's user,
// and waits for it.
func runInNamespaces(p *compiler.Plan, sp *spec, opts Options) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, Stage2Arg)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{rd} // fd 3
	cmd.Env = []string{}
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET)
	attr := &syscall.SysProcAttr{
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: p.User.UID, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: p.User.GID, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	if sp.Scratch != "" {
		flags |= syscall.CLONE_NEWNS
		// Mounting the tmpfs needs CAP_SYS_ADMIN in the new user namespace
		// across exec; stage 2 drops every capability before the server.
		attr.AmbientCaps = []uintptr{capSysAdmin}
	}
	attr.Cloneflags = flags
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		rd.Close()
		wr.Close()
		return 0, &UnsupportedError{fmt.Errorf("cannot create user and network namespaces (%v); to run with Landlock alone, accept %q in the policy, or use the bwrap or docker backend", err, landlock.AcceptTCPOnly)}
	}
	rd.Close()
	if err := json.NewEncoder(wr).Encode(sp); err != nil {
		wr.Close()
		cmd.Process.Kill()
		return 0, err
	}
	wr.Close()

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	signal.Stop(sigs)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, err
	}
	return 0, nil
}

// Stage2 runs inside the namespaces: read the spec from fd 3, mount the
// scratch tmpfs, drop every capability, restrict, exec. It never returns.
func Stage2() {
	f := os.NewFile(3, "spec")
	var sp spec
	if err := json.NewDecoder(f).Decode(&sp); err != nil {
		fail(fmt.Errorf("reading the launch spec: %w", err))
	}
	f.Close()
	var verbose io.Writer
	if sp.Verbose {
		verbose = os.Stderr
	}
	if sp.Scratch != "" {
		if err := mountScratch(sp.Scratch, sp.Size); err != nil {
			fail(err)
		}
		sp.Ruleset.ReadWrite = append(sp.Ruleset.ReadWrite, sp.Scratch)
		say(verbose, "mcpolicy exec: scratch: tmpfs at %s, %s", sp.Scratch, compiler.FormatSize(sp.Size))
	}
	fail(confineAndExec(&sp, verbose))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "mcpolicy exec: %v\n", err)
	os.Exit(126)
}

func say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

func yesNo(b bool) string {
	if b {
		return "available"
	}
	return "unavailable"
}

// lookPath finds the command with the server's PATH, not the launcher's.
func lookPath(cmd string, env []string) (string, error) {
	if strings.Contains(cmd, "/") {
		return cmd, nil
	}
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(p) {
				c := filepath.Join(dir, cmd)
				if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					return c, nil
				}
			}
		}
	}
	return "", fmt.Errorf("command %q not found in the server's PATH", cmd)
}
