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

	"github.com/mcpolicy/mcpolicy/probe"
)

// Stage2Arg is argv[1] of the launcher re-executed inside the namespaces.
const Stage2Arg = "__mcpolicy-landlock-stage2"

// spec is what stage 1 hands stage 2, on a pipe (never in argv).
type spec struct {
	Ruleset *Ruleset `json:"ruleset"`
	ABI     int      `json:"abi"`
	Mount   bool     `json:"mount,omitempty"` // mount the scratch tmpfs
	Env     []string `json:"env"`
	NoNetNS bool     `json:"noNetns,omitempty"`
	Verbose bool     `json:"verbose,omitempty"`
	// Probe, when set, runs these accesses in the confined launcher itself
	// in place of exec'ing the command (mcpolicy prove): the same ruleset
	// and namespaces, and no file of the probe needs to be granted.
	Probe []probe.Attempt `json:"probe,omitempty"`
}

// Options tune a launch.
type Options struct {
	Verbose io.Writer // where to say what is enforced; nil for quiet
	Environ []string  // the launcher's environment; passthrough values come from it
	Host    *Host     // what the machine offers; nil: DetectHost, and try namespaces
	Probe   []probe.Attempt
}

// Start runs the ruleset's command confined (paths already resolved). It
// returns only on failure, or with the server's exit code when it ran
// under namespaces; otherwise the process becomes the server.
func Start(rs *Ruleset, opts Options) (int, error) {
	host := DetectHost()
	tryNS := true // the settings can be wrong (an AppArmor profile may allow us): try
	if opts.Host != nil {
		host, tryNS = *opts.Host, opts.Host.UserNS
	}
	if err := rs.Check(Host{ABI: host.ABI, UserNS: tryNS}); err != nil {
		return 0, err
	}
	if rs.Scratch != "" {
		// The tmpfs goes over the host path: it must not hide a grant.
		for _, g := range append(append(append([]string{}, rs.ReadOnly...), rs.ReadWrite...), rs.Command[0], rs.Workdir) {
			if g != "" && (g == rs.Scratch || strings.HasPrefix(g, strings.TrimSuffix(rs.Scratch, "/")+"/")) {
				return 0, fmt.Errorf("server %q: scratch at %s would hide %s, which lies below it on this machine (Landlock runs with host paths): move the scratch target, or use the bwrap or docker backend", rs.Server, rs.Scratch, g)
			}
		}
	}
	sp := &spec{Ruleset: rs, ABI: host.ABI, Env: environment(rs, opts.Environ), Verbose: opts.Verbose != nil, Mount: rs.Scratch != "", Probe: opts.Probe}
	var nsErr error
	if tryNS {
		say(opts.Verbose, "mcpolicy exec: %s: Landlock ABI %d, plan %s", rs.Server, host.ABI, rs.Plan)
		code, err, started := runInNamespaces(rs, sp)
		if started || err == nil {
			return code, err
		}
		nsErr = err
	}
	// No namespaces: Landlock alone, if the policy accepts what that loses.
	host.UserNS = false
	if err := rs.Check(host); err != nil {
		if nsErr != nil {
			return 0, &UnsupportedError{fmt.Errorf("%v\n\tcreating namespaces failed: %v", err, nsErr)}
		}
		return 0, err
	}
	sp.NoNetNS, sp.Mount = true, false
	if rs.Scratch != "" { // landlock-scratch-dir was accepted
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
func environment(rs *Ruleset, environ []string) []string {
	home := "/"
	if rs.Scratch != "" {
		home = rs.Scratch
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "MCPOLICY_PLAN=" + rs.Plan}
	for _, name := range rs.Env {
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
// started is false when the namespaces could not be created at all.
func runInNamespaces(rs *Ruleset, sp *spec) (code int, err error, started bool) {
	uid, gid, err := parseUser(rs.User)
	if err != nil {
		return 0, err, true
	}
	self, err := os.Executable()
	if err != nil {
		return 0, err, true
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return 0, err, true
	}
	cmd := exec.Command(self, Stage2Arg)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{rd} // fd 3
	cmd.Env = []string{}
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET)
	attr := &syscall.SysProcAttr{
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	if sp.Mount {
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
		return 0, err, false
	}
	rd.Close()
	if err := json.NewEncoder(wr).Encode(sp); err != nil {
		wr.Close()
		cmd.Process.Kill()
		return 0, err, true
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
			return 128 + int(ws.Signal()), nil, true
		}
		return ee.ExitCode(), nil, true
	}
	return 0, err, true
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
	if sp.Mount {
		rs := sp.Ruleset
		if err := mountScratch(rs.Scratch, rs.ScratchSize); err != nil {
			fail(err)
		}
		rs.ReadWrite = append(rs.ReadWrite, rs.Scratch)
		say(verbose, "mcpolicy exec: scratch: tmpfs at %s, %d bytes", rs.Scratch, rs.ScratchSize)
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
