package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// handover is a launch `mcpolicy exec` passes on to the small launcher:
// what Start needs, the ruleset already built and checked.
type handover struct {
	Ruleset     *artefact.Ruleset  `json:"ruleset"`
	Environ     []string           `json:"environ"`
	ProjectRoot string             `json:"projectRoot,omitempty"`
	Home        string             `json:"home,omitempty"`
	Verbose     bool               `json:"verbose,omitempty"`
	Log         *launchlog.Carried `json:"log,omitempty"`
	// Tools is the tool surface the launcher relays (Options.Tools).
	Tools *toolpolicy.Policy `json:"tools,omitempty"`
}

// Handover execs launcher (mcpolicy-launch) in place of this process to
// Start rs with opts: what then stays beside the server is the small
// launcher, not the whole of mcpolicy. The launch goes on a memfd, never
// in argv or the environment. It returns only when it did not exec: a
// probe run or a Contained callback stays with the caller. The caller has
// checked launcher as it checks what it runs with the server's trust.
func Handover(launcher string, rs *artefact.Ruleset, opts Options) error {
	if opts.Probe != nil || opts.Contained != nil || opts.Host != nil {
		return errors.New("not handed over: a probe run, a host override or a Contained callback stays in-process")
	}
	h := handover{Ruleset: rs, Environ: opts.Environ, ProjectRoot: opts.ProjectRoot, Home: opts.Home, Verbose: opts.Verbose != nil, Tools: opts.Tools}
	if opts.Log != nil {
		c := opts.Log.Carry()
		h.Log = &c
	}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	// Close-on-exec but for the one exec below: a failed exec leaves
	// nothing open for the in-process launch that follows.
	fd, err := unix.MemfdCreate("mcpolicy-exec", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			return fmt.Errorf("writing the launch: %w", err)
		}
		b = b[n:]
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
		return err
	}
	err = syscall.Exec(launcher, []string{launcher, HandoverArg, strconv.Itoa(fd)}, os.Environ())
	unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
	return fmt.Errorf("exec %s: %w", launcher, err)
}

// HandedOver is the launcher's side of Handover: it reads the launch from
// descriptor fdArg, closes every inherited descriptor and Starts it. It
// returns the server's exit code, or the error, with the launch's record.
func HandedOver(fdArg string) (int, *launchlog.Launch, error) {
	fd, err := strconv.Atoi(fdArg)
	if err != nil || fd < 3 {
		return 0, nil, fmt.Errorf("handover: descriptor %q", fdArg)
	}
	f := os.NewFile(uintptr(fd), "handover")
	var h handover
	err = json.NewDecoder(f).Decode(&h)
	f.Close()
	if err != nil {
		return 0, nil, fmt.Errorf("handover: reading the launch: %w", err)
	}
	if h.Ruleset == nil || len(h.Ruleset.Command) == 0 {
		return 0, nil, errors.New("handover: no ruleset")
	}
	var log *launchlog.Launch
	if h.Log != nil {
		log = launchlog.Resume(*h.Log, os.Stderr)
	}
	if err := CloseInherited(); err != nil {
		return 0, log, err
	}
	opts := Options{Environ: h.Environ, ProjectRoot: h.ProjectRoot, Home: h.Home, Log: log, Tools: h.Tools}
	if h.Verbose {
		opts.Verbose = os.Stderr
	}
	code, err := Start(h.Ruleset, opts)
	return code, log, err
}
