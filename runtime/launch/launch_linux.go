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
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/exitcode"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// spec is what stage 1 hands stage 2, on a pipe (never in argv).
type spec struct {
	Ruleset *artefact.Ruleset `json:"ruleset"`
	ABI     int               `json:"abi"`
	Mount   bool              `json:"mount,omitempty"` // mount the scratch tmpfs
	Env     []string          `json:"env"`
	NoNetNS bool              `json:"noNetns,omitempty"`
	Verbose bool              `json:"verbose,omitempty"`
	// Bases are where grants are opened without following a symlink (the
	// project root and the home folder; / always).
	Bases []string `json:"bases,omitempty"`
	// DropGroups: the launcher is root, so setgroups is allowed in the
	// user namespace and the supplementary groups are dropped.
	DropGroups bool `json:"dropGroups,omitempty"`
	// Unhardened is for tests only (a control run): the wiring before
	// issue #14 — no minimal root, no PID namespace, no new session, no
	// new session keyring. Nothing but a test sets it (see testUnhardened).
	Unhardened bool `json:"unhardened,omitempty"`
	// Probe, when set, runs these accesses in the confined launcher itself
	// in place of exec'ing the command (mcpolicy prove): the same ruleset
	// and namespaces, and no file of the probe needs to be granted.
	Probe []probe.Attempt `json:"probe,omitempty"`
}

// testUnhardened makes Start hand stage 2 the wiring before issue #14; only
// tests set it (export_test), for control runs that must reach what the
// hardened launcher hides.
var testUnhardened bool

// Start runs the ruleset's command confined (paths already resolved). It
// returns only on failure, or with the server's exit code when it ran
// under namespaces (or was forked: Landlock alone, from a launcher that
// leads its process group); otherwise the process becomes the server.
func Start(rs *artefact.Ruleset, opts Options) (int, error) {
	if !testUnhardened { // the control runs the wiring before the shield too
		if err := ShieldTerminals(opts.Verbose); err != nil {
			return 0, err
		}
	}
	host := hostcaps.Detect()
	tryNS := true // the settings can be wrong (an AppArmor profile may allow us): try
	if opts.Host != nil {
		host, tryNS = *opts.Host, opts.Host.UserNS
	}
	if err := CheckRuleset(rs, hostcaps.Host{ABI: host.ABI, UserNS: tryNS}); err != nil {
		return 0, err
	}
	if err := checkRelay(rs, opts, tryNS); err != nil {
		return 0, err
	}
	for _, sc := range rs.ScratchTargets() {
		// The tmpfs goes over the host path: it must not hide a grant.
		for _, g := range append(append(append([]string{}, rs.ReadOnly...), rs.ReadWrite...), rs.Command[0], rs.Workdir) {
			if g != "" && (g == sc || strings.HasPrefix(g, strings.TrimSuffix(sc, "/")+"/")) {
				return 0, fmt.Errorf("server %q: scratch at %s would hide %s, which lies below it on this machine (Landlock runs with host paths): move the scratch target, or use the bwrap or docker backend", rs.Server, sc, g)
			}
		}
	}
	sp := &spec{Ruleset: rs, ABI: host.ABI, Env: environment(rs, opts.Environ), Verbose: opts.Verbose != nil, Mount: rs.Scratch != "", Probe: opts.Probe,
		Bases: bases(opts), DropGroups: os.Getuid() == 0 && !testUnhardened, Unhardened: testUnhardened}
	var nsErr error
	if tryNS {
		say(opts.Verbose, "mcpolicy exec: %s: Landlock ABI %d, plan %s", rs.Server, host.ABI, rs.Plan)
		// Landlock shows the server host paths: the relay holds path
		// arguments to the host paths the policy's sandbox paths are.
		tools := rs.LocalTools(opts.Tools)
		if opts.Probe != nil { // prove's probes, not a server: nothing to relay
			tools = nil
		}
		code, err, started := runInNamespaces(rs, sp, opts.Log, tools)
		if started && err == nil {
			opts.Log.Ended(code, "")
		}
		if started || err == nil {
			if opts.Contained != nil {
				opts.Contained()
			}
			return code, err
		}
		nsErr = err
		if opts.Tools != nil && opts.Probe == nil {
			return 0, &UnsupportedError{fmt.Errorf("server %q: its tool surface is relayed by the launcher beside the server, and creating namespaces failed (%v): Landlock alone makes the launcher the server, leaving nothing to relay; hint: enable unprivileged user namespaces (`mcpolicy doctor`), or use the bwrap or docker backend", rs.Server, err)}
		}
	}
	// No namespaces: Landlock alone, if the policy accepts what that loses.
	host.UserNS = false
	if err := CheckRuleset(rs, host); err != nil {
		if nsErr != nil {
			return 0, &UnsupportedError{fmt.Errorf("%v\n\tcreating namespaces failed: %v", err, nsErr)}
		}
		return 0, err
	}
	sp.NoNetNS, sp.Mount, sp.DropGroups = true, false, false
	if rs.Scratch != "" { // landlock-scratch-dir was accepted: a folder of the server's user
		dir, err := scratchDir(rs.User)
		if err != nil {
			return 0, err
		}
		rs.ReadWrite = append(rs.ReadWrite, dir)
		sp.Env = artefact.WithSetEnv(scratchEnv(sp.Env, dir), rs.SetEnv)
		say(opts.Verbose, "mcpolicy exec: %s: no namespaces: scratch: the folder %s (HOME and TMPDIR), not bounded (accepted: %s)", rs.Server, dir, artefact.AcceptScratchDir)
	}
	if rs.Accepts(artefact.AcceptUnixSockets) {
		say(opts.Verbose, "mcpolicy exec: %s: no namespaces: the host's named unix sockets stay reachable (accepted: %s)", rs.Server, artefact.AcceptUnixSockets)
	} else {
		say(opts.Verbose, "mcpolicy exec: %s: no namespaces: every unix socket is refused by the seccomp filter (accept %s to allow them)", rs.Server, artefact.AcceptUnixSockets)
	}
	if err := CloseInherited(); err != nil {
		return 0, err
	}
	opts.Log.Unseen("no namespaces: the launcher confines itself and becomes the server, so its end and stderr are not seen here")
	return confineAndRun(sp, opts.Verbose, inPlace)
}

// checkRelay refuses a ruleset that pins a tool surface (Ruleset.Tools)
// without the surface to relay, or on a machine without namespaces, where
// the launcher becomes the server and nothing stays to relay it: the
// server would run with its whole tool surface open. A probe run (prove)
// starts no server.
func checkRelay(rs *artefact.Ruleset, opts Options, tryNS bool) error {
	switch {
	case opts.Probe != nil || rs.Tools == "" && opts.Tools == nil:
		return nil
	case opts.Tools == nil:
		return tampered("server %q: the ruleset pins a tool surface (%s), and this launch was given none to relay: refusing to start the server unfiltered; hint: run `mcpolicy build`", rs.Server, rs.Tools)
	case !tryNS:
		return &UnsupportedError{fmt.Errorf("server %q: its tool surface is relayed by the launcher beside the server, and this machine gives it no user namespaces: Landlock alone makes the launcher the server, leaving nothing to relay; hint: enable unprivileged user namespaces (`mcpolicy doctor`), or use the bwrap or docker backend", rs.Server)}
	}
	return nil
}

// bases are where the minimal root opens grants without following a
// symlink: the caller's project root and home, else the environment's.
func bases(opts Options) []string {
	root, home := opts.ProjectRoot, opts.Home
	env := opts.Environ
	if env == nil {
		env = os.Environ()
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PROJECT_ROOT="); ok && root == "" {
			root = v
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok && home == "" {
			home = v
		}
	}
	var out []string
	for _, b := range []string{root, home} {
		if filepath.IsAbs(b) {
			out = append(out, filepath.Clean(b))
		}
	}
	return out
}

// environment is the server's whole environment: a fixed PATH and HOME, the
// passthrough names that are set, and the policy's constant values, which
// win over both.
func environment(rs *artefact.Ruleset, environ []string) []string {
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
	return artefact.WithSetEnv(env, rs.SetEnv)
}

// runInNamespaces re-executes the launcher in new user, network, mount and
// IPC namespaces, in a new session, mapping the invoking user to the plan's
// user, and waits for it: stage 2 builds the minimal root, confines itself
// and execs the server; its exit status is the server's (128+N for signal
// N).
// started is false when the namespaces could not be created at all.
func runInNamespaces(rs *artefact.Ruleset, sp *spec, log *launchlog.Launch, tools *toolpolicy.Policy) (code int, err error, started bool) {
	uid, gid, err := parseUser(rs.User)
	if err != nil {
		return 0, err, true
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return 0, err, true
	}
	// Stage 2 says on fd 4 when the namespaces turn out to be unusable
	// (no mount allowed in them: an AppArmor profile for unprivileged
	// user namespaces, say), before anything ran: then this is a machine
	// without namespaces, as when they cannot be created.
	statusR, statusW, err := os.Pipe()
	if err != nil {
		rd.Close()
		wr.Close()
		return 0, err, true
	}
	defer statusR.Close()
	cmd := stage2Command(rd, statusW)
	if log != nil { // stage 2's stderr, the server's, teed into the record
		tee, err := launchlog.NewTee(os.Stderr, &log.Stderr)
		if err != nil {
			return 0, err, true
		}
		defer tee.Finish() // after the wait: what stage 2 and the server wrote is in
		cmd.Stderr = tee.W
	}
	// Stage 1 stays outside the namespaces: the tool relay, if any, runs
	// here, on stage 2's (the server's) stdin and stdout.
	relay, err := NewToolRelay(tools, log)
	if err != nil {
		return 0, err, true
	}
	in, out := relay.Stdio(os.Stdin, os.Stdout)
	cmd.Stdin, cmd.Stdout = in, out
	if cmd.SysProcAttr, err = namespaceAttr(sp, uid, gid, in, out, cmd.Stderr.(*os.File)); err != nil {
		relay.Close()
		return 0, err, true
	}
	// Caught from before the start: a signal that came between the start
	// and Notify would end this process unforwarded (the server can be up
	// and saying so by then).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		rd.Close()
		wr.Close()
		statusW.Close()
		relay.Close()
		return 0, err, !noNamespaces(err)
	}
	rd.Close()
	statusW.Close()
	relay.Start(os.Stdin, os.Stdout)
	defer relay.Wait() // after stage 2's end: the server's last output is passed on
	if err := sendSpec(cmd, wr, sp); err != nil {
		return 0, err, true
	}
	return waitStage2(cmd, sigs, statusR)
}

// stage2Command is stage 2's command, reading the spec on fd 3 and saying
// on fd 4 whether it could mount; its environment holds GOMAXPROCS=1 alone
// (the server's is the spec's): a resident init that waits needs no more,
// and each runtime thread fewer is one fewer to stop when dropAllThreads
// changes them all, and less memory held beside the server. This very
// binary, by /proc/self/exe: the path it was started by may be one the
// plan's user cannot reach (a root launcher installed below /root), and
// may name another file by now.
func stage2Command(spec, status *os.File) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe", Stage2Arg)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{spec, status} // fd 3, fd 4
	cmd.Env = []string{"GOMAXPROCS=1"}
	return cmd
}

// namespaceAttr is stage 2's namespaces, id maps, session and
// capabilities. A root launcher gives the standard streams to the host's
// uid the plan's maps to, which stage 2 runs as.
func namespaceAttr(sp *spec, uid, gid int, stdin, stdout, stderr *os.File) (*syscall.SysProcAttr, error) {
	// A new PID namespace, whose init is stage 2: it forks the server
	// (not its init, so deaf to no signal) and stays, and when it ends —
	// the server exited, or stage 1 died and its Pdeathsig (below) came —
	// the kernel kills every process left in the namespace. Without it, a process the server
	// started in a new session outlived the server and its client
	// (confined, but unwatched: it rewrote its grant after mcpolicy prove
	// had put it back). Its /proc, when the ruleset says proc, is a procfs
	// of this namespace that lists only what the server may ptrace (see
	// procOptions); otherwise there is none. Stage 2 stays outside the server's Landlock domain (see
	// confinedThread): Landlock denies the server ptrace into it and (ABI 6)
	// signals to it; the seccomp filter denies ptrace too.
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWPID)
	hostUID, hostGID := hostIDs(uid, gid)
	attr := &syscall.SysProcAttr{
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: hostUID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: hostGID, Size: 1}},
		// Unprivileged, the gid map needs setgroups denied: the invoker's
		// supplementary groups stay (unmapped). Root may keep setgroups
		// and stage 2 drops them.
		GidMappingsEnableSetgroups: sp.DropGroups,
		Pdeathsig:                  syscall.SIGKILL,
		// A new session: neither stage 2 nor the server has a controlling
		// terminal (TIOCSTI needs one). Stage 1 keeps the caller's and
		// forwards the signals a terminal sends.
		Setsid: true,
		// Building the root needs CAP_SYS_ADMIN in the new user namespace
		// across exec (setgroups CAP_SETGID; emptying the bounding set and
		// locking the securebits CAP_SETPCAP); stage 2 drops every
		// capability before the server.
		AmbientCaps: []uintptr{capSysAdmin, capSetpcap},
	}
	if sp.DropGroups {
		attr.AmbientCaps = append(attr.AmbientCaps, capSetgid)
	}
	if hostUID != os.Getuid() {
		// Root maps the plan's ids to the host's same ids: stage 2 must
		// become them (its ambient capabilities kept), or it would stay
		// the host's root, which this namespace does not map.
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		if err := GiveStdio(hostUID, stdin, stdout, stderr); err != nil {
			return nil, err
		}
	}
	if sp.Unhardened { // the wiring before issue #14, for control runs
		flags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
		if sp.Mount {
			flags |= syscall.CLONE_NEWNS
		}
		attr.Setsid = false
	}
	attr.Cloneflags = flags
	return attr, nil
}

// sendSpec writes the spec to stage 2's pipe and closes it; stage 2 is
// killed if it cannot be written.
func sendSpec(cmd *exec.Cmd, wr *os.File, sp *spec) error {
	if err := json.NewEncoder(wr).Encode(sp); err != nil {
		wr.Close()
		cmd.Process.Kill()
		return err
	}
	wr.Close()
	return nil
}

// waitStage2 forwards the signals caught to stage 2 until it ends, and
// returns the server's exit code (128+N for signal N); started is false
// when stage 2 said it could not mount.
func waitStage2(cmd *exec.Cmd, sigs chan os.Signal, statusR *os.File) (code int, err error, started bool) {
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	signal.Stop(sigs)
	if status, _ := io.ReadAll(statusR); string(status) == stage2NoMounts {
		return 0, errors.New("mounting is not permitted in the new user namespace: the minimal root cannot be built"), false
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil, true
		}
		return ee.ExitCode(), nil, true
	}
	return 0, err, true
}

// noNamespaces reports whether a failed start says this machine gives the
// launcher no namespaces (refused, unsupported, or at the limit of their
// number): only then may it fall back to Landlock alone. Any other failure
// ends the launch: EAGAIN (the user's process limit, which a running
// server can fill) downgraded the next launch to Landlock alone, which
// gives up more than the namespaces (red team).
func noNamespaces(err error) bool {
	for _, e := range []syscall.Errno{syscall.EPERM, syscall.EINVAL, syscall.ENOSPC, syscall.ENOSYS, syscall.EUSERS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// hostIDs are the host's uid and gid the plan's uid and gid map to: the
// invoker's, except that root maps them to themselves (root may), so that
// the plan's 1000:1000 is the host's 1000:1000, as docker's --user makes
// it, and not the host's root: as root, a server confined to its grants
// still read root's files and sockets there (a read-only grant holding
// /run/docker.sock is the host). A plan that says root stays root.
func hostIDs(uid, gid int) (int, int) {
	if os.Getuid() != 0 {
		return os.Getuid(), os.Getgid()
	}
	hostUID, hostGID := 0, os.Getgid()
	if uid != 0 {
		hostUID, hostGID = uid, gid
	}
	return hostUID, hostGID
}

// Stage2 runs inside the namespaces: read the spec from fd 3, build the
// minimal root and pivot into it, drop the supplementary groups (root
// only), every capability and the session keyring, restrict, then fork
// the server and wait for it, as the init of its PID namespace. It never
// returns.
func Stage2() {
	runtime.LockOSThread()
	unix.CloseOnExec(4) // the status pipe: never the server's
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
	rs := sp.Ruleset
	if sp.Unhardened {
		if sp.Mount {
			if err := mountScratch(rs.Scratch, rs.ScratchSize); err != nil {
				fail(err)
			}
			for _, s := range rs.MoreScratch {
				if err := mountScratch(s.Target, s.Size); err != nil {
					fail(err)
				}
			}
			rs.ReadWrite = append(rs.ReadWrite, rs.ScratchTargets()...)
		}
		code, err := confineAndRun(&sp, verbose, unhardened)
		if err != nil {
			fail(err)
		}
		os.Exit(code)
	}
	// Whatever stage 1 inherited and passed on unasked (`mcpolicy exec`
	// does not close its caller's descriptors) must not reach the server:
	// a directory descriptor of the host's leads around the minimal root.
	if err := CloseInherited(); err != nil {
		fail(err)
	}
	capLast() // while /proc is the host's: the minimal root may have none
	if err := buildRoot(&sp, verbose); err != nil {
		if errors.Is(err, errNoMounts) {
			unix.Write(4, []byte(stage2NoMounts))
		}
		fail(err)
	}
	// Stage 2 stays, as the server's init: nothing it holds may outlive
	// its use. The status pipe would let whoever drove stage 2 tell stage
	// 1 to run the server again without namespaces.
	unix.Close(4)
	if sp.Mount {
		rs.ReadWrite = append(rs.ReadWrite, rs.ScratchTargets()...)
		say(verbose, "mcpolicy exec: %s: scratch: tmpfs at %s, %d bytes", rs.Server, rs.Scratch, rs.ScratchSize)
		for _, s := range rs.MoreScratch {
			say(verbose, "mcpolicy exec: %s: scratch: tmpfs at %s, %d bytes", rs.Server, s.Target, s.Size)
		}
	}
	if sp.DropGroups {
		if err := syscall.Setgroups(nil); err != nil {
			fail(fmt.Errorf("setgroups: %w", err))
		}
	}
	// Stage 2 is the init of the server's PID namespace: it makes itself
	// undumpable, drops on every thread the capabilities that built the
	// root, confines a thread of its own to start the server, and waits.
	//
	// Undumpable: no process without CAP_SYS_PTRACE over stage 2's user
	// namespace — the server holds none — may ptrace it, read or write its
	// memory or take its descriptors, whatever the Landlock domains say.
	// The thread that confines itself and forks the server shares the
	// server's domain until it ends, a few microseconds after the server
	// starts: a red team (with the filter's ptrace rule removed) won that
	// race and ran code on stage 2's other threads. The server, a new
	// program, is dumpable as usual.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fail(fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err))
	}
	start, err := confinedThread()
	if err != nil {
		fail(err)
	}
	if err := dropAllThreads(); errors.Is(err, errAllThreadsUnsupported) {
		say(verbose, "mcpolicy exec: %s: %v: stage 2's threads keep them, outside the server's Landlock domain", rs.Server, err)
	} else if err != nil {
		fail(err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	pid, err := start(&sp, verbose)
	if err != nil {
		fail(err)
	}
	code, err := waitServer(pid, sigs, true)
	if err != nil {
		fail(err)
	}
	os.Exit(code)
}

// stage2NoMounts is what stage 2 writes on fd 4 when it may not mount.
const stage2NoMounts = "no-mounts"

// fail ends stage 2: 126, or 8 (ExitTampered) when a grant turned out to be
// a symlink; stage 1 returns it as the server's exit status.
func fail(err error) {
	fmt.Fprintf(os.Stderr, "mcpolicy exec: %v\n", err)
	var te *TamperError
	if errors.As(err, &te) {
		os.Exit(ExitTampered)
	}
	os.Exit(exitcode.LauncherFailed)
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
